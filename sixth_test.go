package rudp

import (
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rudpkit/rudp/internal/toy"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/nettest"
)

// Tests of a sixth protocol, internal/toy, which the package knows only
// through one entry added to its table: what every protocol passes, a
// protocol added as one package and one line passes too.

// toyProtocol is the id the toy protocol's entry takes.
const toyProtocol Protocol = 6

// withToy adds the toy protocol to the table for the test, which must
// not be parallel: the table is the package's, and other tests list it.
func withToy(t *testing.T) Protocol {
	saved := protocols
	t.Cleanup(func() { protocols = saved })
	protocols = append(slices.Clip(protocols), &protocolEntry{id: toyProtocol, Protocol: &toy.Protocol})
	return toyProtocol
}

// TestSixthProtocolTable: the entry is all it takes for the package to
// name, parse and resolve the protocol.
func TestSixthProtocolTable(t *testing.T) {
	p := withToy(t)
	require.Equal(t, "toy", p.String())
	q, err := ParseProtocol("TOY")
	require.NoError(t, err)
	require.Equal(t, p, q)
	require.Contains(t, Protocols(), p)
	_, err = (&Config{Protocol: p, Channels: 2}).resolved()
	require.ErrorContains(t, err, "Channels", "an option of another protocol")
}

// TestSixthProtocolNetConn runs the net.Conn conformance suite on toy
// streams over real UDP loopback sockets, on a clean and an impaired
// path (see links).
func TestSixthProtocolNetConn(t *testing.T) {
	cfg := &Config{Protocol: withToy(t)}
	for _, l := range links {
		t.Run(l.name, func(t *testing.T) {
			seed := uint64(0)
			nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
				seed += 2
				ln := Server(udpSocket(t, l.imp, seed), cfg)
				return connectedPair(Client(udpSocket(t, l.imp, seed+1), ln.Addr(), cfg), ln)
			})
		})
	}
}

// TestSixthProtocolMessages: toy message conns carry messages exactly,
// in order, both ways; a short buffer keeps the message; the peer's
// close reads as io.EOF and fails writes with ErrPeerClosed, and the
// closing end finishes.
func TestSixthProtocolMessages(t *testing.T) {
	p := withToy(t)
	c, s := messagePair(t, &Config{Protocol: p}, links[0])
	require.Equal(t, 1400-13, c.MaxMessage())
	msgs := [][]byte{[]byte("a"), []byte("hello, toy"), make([]byte, 1400-13)}
	for i := range msgs[2] {
		msgs[2][i] = byte(i)
	}
	for _, m := range msgs {
		require.NoError(t, c.WriteMessage(Message{Data: m}))
		_, err := s.Write(m)
		require.NoError(t, err)
	}
	buf := make([]byte, 2048)
	for _, m := range msgs {
		got, err := s.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, m, got.Data)
		require.Equal(t, Reliable, got.Delivery)
		if len(m) > 1 {
			_, err = c.Read(buf[:1])
			require.ErrorIs(t, err, io.ErrShortBuffer)
		}
		n, err := c.Read(buf)
		require.NoError(t, err)
		require.Equal(t, m, buf[:n])
	}
	require.ErrorIs(t, c.WriteMessage(Message{Data: make([]byte, 1400-12)}), ErrMessageTooLarge)
	require.ErrorIs(t, c.WriteMessage(Message{Data: []byte("x"), Channel: 1}), ErrUnsupported)
	require.ErrorIs(t, c.WriteMessage(Message{Data: []byte("x"), Delivery: Unreliable}), ErrUnsupported)

	require.NoError(t, c.WriteMessage(Message{Data: []byte("last")}))
	require.NoError(t, c.Close())
	m, err := s.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, "last", string(m.Data))
	requireClosedByPeer(t, s, c)
	err = s.WriteMessage(Message{Data: []byte("after")})
	require.ErrorIs(t, err, ErrPeerClosed)
	require.False(t, errors.Is(err, net.ErrClosed), "%v", err)
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.WriteMessage(Message{Data: []byte("closed")}), net.ErrClosed)
}

// TestSixthProtocolAmplification: a source that sends a toy listener
// one opening and then nothing is sent at most 3 × its bytes over the
// listener's whole handshake timeout, by the stream and the message
// listener (as TestAmplificationLimit checks for the other protocols).
func TestSixthProtocolAmplification(t *testing.T) {
	p := withToy(t)
	for _, stream := range []bool{true, false} {
		open := firstDatagramOf(t, p, stream)
		t.Run(map[bool]string{true: "stream", false: "message"}[stream], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				vp := newVPath(t, 0)
				cfg := vcfg(Config{Protocol: p, HandshakeTimeout: time.Minute})
				var ln interface{ Close() error }
				if stream {
					ln = Server(vp.server, cfg)
				} else {
					ln = ServerMessages(vp.server, cfg)
				}
				defer ln.Close()
				_, err := vp.client.WriteTo(open, vp.server.LocalAddr())
				require.NoError(t, err)
				time.Sleep(time.Minute + time.Second) // the half-open peer ends
				got := 0
				buf := make([]byte, 2048)
				for {
					require.NoError(t, vp.client.SetReadDeadline(time.Now().Add(time.Millisecond)))
					n, _, err := vp.client.ReadFrom(buf)
					if err != nil {
						var ne net.Error
						require.True(t, errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout(), "%v", err)
						break
					}
					got += n
				}
				t.Logf("answered %d bytes to a %d-byte opening", got, len(open))
				require.Positive(t, got, "the listener answered")
				require.LessOrEqual(t, got, 3*len(open), "answered %d bytes to a %d-byte opening", got, len(open))
			})
		})
	}
}

// TestSixthProtocolBlindFlood: 300 blind sources each send a valid toy
// opening and never read: each is taken as an opening, the half-open
// peers stay within the backlog (the oldest evicted), and none is ever
// ready for Accept, on the stream and the message listener.
func TestSixthProtocolBlindFlood(t *testing.T) {
	const sources = 300
	p := withToy(t)
	check := func(t *testing.T, st ListenerStats, pending, queued int) {
		require.Zero(t, st.UnknownDrops+st.BacklogDrops, "every opening was taken as one")
		require.Equal(t, uint64(sources-DefaultBacklog), st.Evicted)
		require.Zero(t, queued, "no blind source is ever ready for Accept")
		require.Equal(t, DefaultBacklog, pending)
	}
	t.Run("stream", func(t *testing.T) {
		ln := Server(udpSocket(t, nil, 0), &Config{Protocol: p})
		defer ln.Close()
		blindFlood(t, &ln.listener, newAttackers(t, sources), firstDatagramOf(t, p, true))
		st := ln.Stats() // before taking the queue's lock, which Stats takes
		ln.listener.q.mu.Lock()
		defer ln.listener.q.mu.Unlock()
		check(t, st, len(ln.listener.q.pending), len(ln.listener.q.queue))
	})
	t.Run("message", func(t *testing.T) {
		ln := ServerMessages(udpSocket(t, nil, 0), &Config{Protocol: p})
		defer ln.Close()
		blindFlood(t, &ln.listener, newAttackers(t, sources), firstDatagramOf(t, p, false))
		st := ln.Stats() // before taking the queue's lock, which Stats takes
		ln.listener.q.mu.Lock()
		defer ln.listener.q.mu.Unlock()
		check(t, st, len(ln.listener.q.pending), len(ln.listener.q.queue))
	})
}
