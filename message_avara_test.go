package rudp

import (
	"context"
	"errors"
	"io"
	"math"
	"net"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// avaraDial dials an Avara message listener at addr with cfg.
func avaraDial(t *testing.T, addr net.Addr, cfg *Config) (*MessageConn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DialMessages(ctx, "udp", addr.String(), cfg)
	if err == nil {
		t.Cleanup(func() { c.Close() })
		bound(t, c)
	}
	return c, err
}

// TestAvaraMessages: over loopback UDP a client logs in with the
// password and messages with every command and parameter width, their
// extremes included, and 0 to 984 bytes of data arrive exactly and in
// order both ways; the client's Logout makes the server's reads end in
// io.EOF.
func TestAvaraMessages(t *testing.T) {
	cfg := &Config{Protocol: Avara, AvaraPassword: "secret"}
	ln, err := ListenMessages("udp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	defer ln.Close()
	c, err := avaraDial(t, ln.Addr(), cfg)
	require.NoError(t, err)
	s := accept(t, ln).(*MessageConn)
	defer s.Close()
	bound(t, s)
	require.Equal(t, int8(1), c.AvaraClientID())
	require.Equal(t, int8(1), s.AvaraClientID())
	require.Equal(t, 984, c.MaxMessage())

	msgs := []Message{
		{},
		{Command: 17, P1: 1, P2: 2, P3: 3, Data: []byte("frame")},
		{Command: 127, P1: math.MaxInt8, P2: math.MaxInt16, P3: math.MaxInt32, Data: make([]byte, 984)},
		{Command: 36, P1: math.MinInt8, P2: math.MinInt16, P3: math.MinInt32, Data: []byte{0}},
		{Command: StreamCommand, P1: -1, P2: -1, P3: -1},
		{P3: 1 << 20, Data: []byte("p3 only")},
	}
	msgs[2].Data[983] = 9
	for _, pair := range [][2]*MessageConn{{c, s}, {s, c}} {
		for _, m := range msgs {
			require.NoError(t, pair[0].WriteMessage(m))
		}
		for _, want := range msgs {
			got, err := pair[1].ReadMessage()
			require.NoError(t, err)
			if want.Data == nil {
				want.Data = []byte{}
			}
			require.Equal(t, want, got)
		}
	}
	require.NoError(t, c.Close())
	requireClosedByPeer(t, s, c)
}

// TestAvaraMessageErrors: what an Avara message cannot carry is refused
// with the documented errors, and the other protocols refuse the Avara
// fields.
func TestAvaraMessageErrors(t *testing.T) {
	c, _ := messagePair(t, &Config{Protocol: Avara}, links[0])
	require.ErrorIs(t, c.WriteMessage(Message{Data: make([]byte, 985)}), ErrMessageTooLarge)
	require.ErrorIs(t, c.WriteMessage(Message{Command: -7}), ErrUnsupported, "Logout belongs to the transport")
	require.ErrorIs(t, c.WriteMessage(Message{Delivery: Unreliable}), ErrUnsupported)
	require.ErrorIs(t, c.WriteMessage(Message{Channel: 1}), ErrUnsupported)
	require.ErrorIs(t, c.WriteMessage(Message{Number: 5}), ErrUnsupported)
	for _, p := range Protocols() {
		if p == Avara {
			continue
		}
		c, _ := messagePair(t, &Config{Protocol: p}, links[0])
		for _, m := range []Message{{Command: 1}, {P1: 1}, {P2: 1}, {P3: 1}} {
			m.Data, m.Number = []byte("x"), testNumber(p)
			require.ErrorIs(t, c.WriteMessage(m), ErrUnsupported, "%v %+v", p, m)
		}
	}
}

// TestAvaraReadWriteHeaderForm: as a net.Conn, an Avara message conn
// writes and reads the command, p1, p2 and p3 as an 8-byte little-endian
// header before the data.
func TestAvaraReadWriteHeaderForm(t *testing.T) {
	c, s := messagePair(t, &Config{Protocol: Avara}, links[0])
	for _, p := range [][]byte{
		{17, 0xFF, 0x34, 0x12, 0x78, 0x56, 0x34, 0x12, 'h', 'i'},
		{0, 0, 0, 0, 0, 0, 0, 0},
	} {
		n, err := c.Write(p)
		require.NoError(t, err)
		require.Equal(t, len(p), n)
		buf := make([]byte, 64)
		n, err = s.Read(buf)
		require.NoError(t, err)
		require.Equal(t, p, buf[:n])
	}
	_, err := c.Write([]byte{1, 2, 3, 4, 5, 6, 7})
	require.ErrorIs(t, err, ErrUnsupported, "shorter than the header")
	_, err = c.Write([]byte{0xF9, 0, 0, 0, 0, 0, 0, 0})
	require.ErrorIs(t, err, ErrUnsupported, "command −7 belongs to the transport")
	require.NoError(t, c.WriteMessage(Message{Command: 31, P2: -2, Data: []byte{1}}))
	_, err = s.Read(make([]byte, 8))
	require.ErrorIs(t, err, io.ErrShortBuffer)
	m, err := s.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, Message{Command: 31, P2: -2, Data: []byte{1}}, m, "the short read kept the message")
}

// TestAvaraWrongPassword: a login with a wrong password gets no answer
// and holds no player id, and Dial fails with a handshake timeout that
// says the password may be wrong.
func TestAvaraWrongPassword(t *testing.T) {
	ln, err := ListenMessages("udp", "127.0.0.1:0", &Config{Protocol: Avara, AvaraPassword: "secret"})
	require.NoError(t, err)
	defer ln.Close()
	_, err = avaraDial(t, ln.Addr(), &Config{Protocol: Avara, AvaraPassword: "guess", HandshakeTimeout: 300 * time.Millisecond})
	require.ErrorIs(t, err, ErrHandshakeTimeout)
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout())
	require.Contains(t, err.Error(), "password (Config.AvaraPassword) may be wrong or the server full")
	require.NotZero(t, ln.Stats().UnknownDrops, "the logins were refused")
	c, err := avaraDial(t, ln.Addr(), &Config{Protocol: Avara, AvaraPassword: "secret"})
	require.NoError(t, err)
	require.Equal(t, int8(1), c.AvaraClientID(), "a refused login holds no player id")
}

// TestAvaraServerTable: a MessageListener serves 7 clients with ids 1..7
// and sends every client the table of all of them; an eighth client gets
// no answer; when a client leaves, the others get the table without it,
// and its id goes to the next client.
func TestAvaraServerTable(t *testing.T) {
	cfg := &Config{Protocol: Avara, AvaraPassword: "pw"}
	ln, err := ListenMessages("udp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	defer ln.Close()
	var clients []*MessageConn
	for range MaxAvaraClients {
		c, err := avaraDial(t, ln.Addr(), cfg)
		require.NoError(t, err)
		clients = append(clients, c)
		s := accept(t, ln).(*MessageConn)
		defer s.Close()
		require.Equal(t, c.AvaraClientID(), s.AvaraClientID())
	}
	want := tableOf(clients)
	for i, p := range want {
		require.Equal(t, int8(i+1), p.ID)
	}
	waitTables(t, clients)

	short := *cfg
	short.HandshakeTimeout = 300 * time.Millisecond
	_, err = avaraDial(t, ln.Addr(), &short)
	require.ErrorIs(t, err, ErrHandshakeTimeout, "an eighth client gets no answer")

	require.NoError(t, clients[2].Close())
	<-clients[2].Done()
	rest := slices.Delete(slices.Clone(clients), 2, 3)
	waitTables(t, rest)

	c, err := avaraDial(t, ln.Addr(), cfg)
	require.NoError(t, err)
	require.Equal(t, int8(3), c.AvaraClientID(), "the freed id")
	defer accept(t, ln).Close()
	waitTables(t, append(rest, c))
}

// tableOf returns the table of the clients cs, as a server on loopback
// sees them.
func tableOf(cs []*MessageConn) []AvaraPeer {
	var ps []AvaraPeer
	for _, c := range cs {
		ps = append(ps, AvaraPeer{ID: c.AvaraClientID(), Addr: addrPortOf(c.LocalAddr())})
	}
	slices.SortFunc(ps, func(a, b AvaraPeer) int { return int(a.ID) - int(b.ID) })
	return ps
}

// waitTables waits, at most 10 s, until every client's table lists the
// clients cs, and only them.
func waitTables(t *testing.T, cs []*MessageConn) {
	t.Helper()
	want := tableOf(cs)
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range cs {
		for !slices.Equal(c.AvaraPeers(), want) {
			if time.Now().After(deadline) {
				require.Equal(t, want, c.AvaraPeers(), "client %d", c.AvaraClientID())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// TestAvaraStreamOpens: a stream over Avara opens at once: the client's
// Login is padded so that the listener's answer fits what it may send a
// peer not yet validated, and nothing has to be sent again.
func TestAvaraStreamOpens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vp := newVPath(t, 0)
		cfg := vcfg(Config{Protocol: Avara})
		c, s, _ := vp.streams(t, cfg)
		require.NoError(t, send(c, Avara, []byte("hello")))
		got, err := recv(s)
		require.NoError(t, err)
		require.Equal(t, "hello", got)
		require.Zero(t, s.Stats().AmplificationDrops)
		require.Zero(t, c.Stats().Retransmits)
		require.Zero(t, s.Stats().Retransmits)
	})
}
