package avara

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestClientLogin: a client's first datagram is vector V1 byte for byte:
// ack field 0xFFFE, the Login with serial 0, the seed in p3, the empty
// password as a Pascal string and sender −1 (docs/protocols/avara.md
// §3.1). Nothing else goes out before the TOC, not even a queued message.
func TestClientLogin(t *testing.T) {
	c := newSession(t, t0, Config{Client: true, Seed: v1Seed})
	require.NoError(t, c.Send([]byte("early"), engine.SendOptions{Params: engine.Params{Command: 7}}))
	require.Equal(t, loadVectors(t).Vectors[0].Hex, poll(t, c, t0))
	require.Empty(t, poll(t, c, t0))
	require.Equal(t, t0.Add(initialRetransmit), c.Deadline(), "resent after the initial retransmit time")
	require.Equal(t, "feff00000194f84523010001ff00", body(t, poll(t, c, t0.Add(initialRetransmit))), "send count 1")
	require.Empty(t, poll(t, c, t0.Add(DefaultHandshakeTimeout-1)))
	require.Equal(t, engine.StateHandshake, c.State())
	require.Equal(t, t0.Add(DefaultHandshakeTimeout), c.Deadline())
	require.Empty(t, poll(t, c, t0.Add(DefaultHandshakeTimeout)))
	require.Equal(t, engine.StateClosed, c.State())
	require.ErrorIs(t, c.Err(), engine.ErrHandshakeTimeout)
	require.ErrorContains(t, c.Err(), "the password may be wrong or the server full")
}

// TestServerAccept: a server session takes V1's Login and answers with
// the TOC (p1 the client's id, p3 its seed, the table) and Control (p2
// the cram level), acknowledging serial 0; the client takes its id from
// the TOC and answers with its Control and its queued message.
func TestServerAccept(t *testing.T) {
	addr := TOC{}
	addr[0] = netip.MustParseAddrPort("192.0.2.1:5000")
	s := openServer(t, Config{Table: func() TOC { return addr }})
	require.Equal(t, int8(1), s.PeerID())
	got := poll(t, s, t0)
	require.Equal(t, "0000"+
		"0000"+"00"+"95"+"fb"+"45230100"+"38"+"01"+"00"+"c00002011388"+"0000"+zeros(48)+
		"0200"+"00"+"82"+"fc"+"0300"+"00",
		body(t, got), "TOC: serial 0, p3 the seed, 56 bytes, p1 1, sender 0; Control: p2 3")
	c := newSession(t, t0, Config{Client: true, Seed: v1Seed})
	require.NoError(t, c.Send([]byte("hi"), engine.SendOptions{Params: engine.Params{Command: 7, P1: 2}}))
	poll(t, c, t0)
	require.NoError(t, c.HandleDatagram(t0.Add(ms), unhex(t, got)))
	require.Equal(t, engine.StateEstablished, c.State())
	require.Equal(t, int8(1), c.ID())
	table, ok := c.Table()
	require.True(t, ok)
	require.Equal(t, addr, table)
	require.Equal(t, int8(3), c.peerCram)
	reply := poll(t, c, t0.Add(ms))
	require.Equal(t, "0200"+"0200"+"00"+"82"+"fc"+"0300"+"01"+"0400"+"00"+"91"+"07"+"02"+"02"+"01"+"6869", body(t, reply),
		"ack field 2; Control serial 2; the message serial 4 with p1 2, sender 1")
	require.NoError(t, s.HandleDatagram(t0.Add(2*ms), unhex(t, reply)))
	m, ok := s.Recv()
	require.True(t, ok)
	require.Equal(t, engine.Message{Data: []byte("hi"), Reliable: true, Params: engine.Params{Command: 7, P1: 2}}, m)
	require.Zero(t, s.Pending())
	require.Equal(t, int8(3), s.peerCram)
}

func zeros(n int) string { return fmt.Sprintf("%0*d", 2*n, 0) }

// TestWrongPassword: a Login with another password is refused without an
// answer, and the session stays unopened (docs/protocols/avara.md §4.6).
func TestWrongPassword(t *testing.T) {
	s := newSession(t, t0, Config{Accept: true, ClientID: 1, Password: []byte("secret")})
	err := s.HandleDatagram(t0, unhex(t, loadVectors(t).Vectors[0].Hex))
	require.ErrorIs(t, err, engine.ErrRejected)
	require.Equal(t, engine.StateHandshake, s.State())
	require.Empty(t, poll(t, s, t0.Add(time.Second)))
	require.Equal(t, uint64(1), s.Stats().PacketsRejected)

	c := newSession(t, t0, Config{Client: true, Password: []byte("secret")})
	b := make([]byte, MaxDatagram)
	n := c.Poll(t0, b)
	require.NoError(t, s.HandleDatagram(t0, b[:n]))
	require.True(t, s.login)
}

// TestAckMapV2: a server that received serials up to 10 and then 14 and
// 18 acknowledges them with vector V2 byte for byte: ack field 11, AckMap
// bits 1 and 3 (docs/protocols/avara.md §1.5).
func TestAckMapV2(t *testing.T) {
	s := openServer(t, Config{})
	poll(t, s, t0) // TOC and Control
	for _, serial := range []uint16{2, 4, 6, 8, 10, 14, 18} {
		require.NoError(t, s.HandleDatagram(t0, datagram(Datagram{Ack: NothingReceived,
			Messages: []Message{{Serial: serial, Command: 1, Sender: 1, HasSender: true}}})))
	}
	require.Empty(t, poll(t, s, t0.Add(DefaultAckDelay-1)))
	require.Equal(t, loadVectors(t).Vectors[1].Hex, poll(t, s, t0.Add(DefaultAckDelay)))
	require.Len(t, drain(s), 5)
}

// TestAckMapShiftBound: a message held more than 64 serials beyond the
// base cannot be named by bits 0..31; where the reference sends an
// aliased bit (serial 70 over base 0 as bit 2, read as serial 6:
// d026010004000000, docs/protocols/avara.md §4.1), this end sends the
// cumulative ack field alone, and goes back to an AckMap once what it
// holds is within range again.
func TestAckMapShiftBound(t *testing.T) {
	s := openServer(t, Config{})
	poll(t, s, t0)
	msg := func(serial uint16) []byte {
		return datagram(Datagram{Ack: 2, Messages: []Message{{Serial: serial, Command: 1, Sender: 1, HasSender: serial <= 100}}})
	}
	at := t0
	step := func(serial uint16) string {
		at = at.Add(time.Second)
		require.NoError(t, s.HandleDatagram(at, msg(serial)))
		return body(t, poll(t, s, at.Add(DefaultAckDelay)))
	}
	require.Equal(t, "0000", step(70), "70 held at k = 34 over base 0: no AckMap (the reference sends d026010004000000)")
	require.Equal(t, "0000", step(4), "4 at bit 1, 70 beyond: still none")
	require.Equal(t, "0400", step(2), "2 and 4 delivered; 70 at k = 32 over base 4: none")
	require.Equal(t, "0400", step(8), "8 at bit 1, 70 beyond")
	require.Equal(t, "0900"+"00000040", step(6), "6 and 8 delivered; 70 at bit 30 over base 8")
	require.Equal(t, []string{"", "", "", ""}, drain(s))
}

// body checks the checksum of datagram h (hex) and returns it without
// the checksum.
func body(t testing.TB, h string) string {
	t.Helper()
	var d Datagram
	require.NoError(t, ParseDatagram(unhex(t, h), &d, DefaultVersion), h)
	return h[4:]
}

// TestLoginPad: with LoginPad the Login's data is the password's Pascal
// string followed by zero bytes up to LoginPad, and a server with that
// password accepts it; a LoginPad beyond MaxData is refused.
func TestLoginPad(t *testing.T) {
	c := newSession(t, t0, Config{Client: true, Password: []byte("pw"), LoginPad: 64})
	login := unhex(t, poll(t, c, t0))
	var d Datagram
	require.NoError(t, ParseDatagram(login, &d, DefaultVersion))
	require.Equal(t, append([]byte{2, 'p', 'w'}, make([]byte, 61)...), d.Messages[0].Data)
	s := newSession(t, t0, Config{Accept: true, ClientID: 1, Password: []byte("pw")})
	require.NoError(t, s.HandleDatagram(t0, login))
	require.True(t, s.login)
	_, err := New(t0, Config{Client: true, LoginPad: MaxData + 1})
	require.Error(t, err)
}
