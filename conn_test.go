package rudp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed)})
	_, _ = r.Read(b)
	return b
}

// TestStreamTransfer sends 4 MiB each way at once and checks every byte,
// on a clean and an impaired path.
func TestStreamTransfer(t *testing.T) {
	for _, l := range links {
		t.Run(l.name, func(t *testing.T) {
			c, s, _ := streamPair(t, nil, l)
			up, down := randomBytes(4<<20, 1), randomBytes(4<<20, 2)
			errc := make(chan error, 2)
			go func() {
				_, err := c.Write(up)
				if err == nil {
					err = c.CloseWrite()
				}
				errc <- err
			}()
			go func() {
				_, err := s.Write(down)
				if err == nil {
					err = s.CloseWrite()
				}
				errc <- err
			}()
			gotUp, err := io.ReadAll(s)
			require.NoError(t, err)
			gotDown, err := io.ReadAll(c)
			require.NoError(t, err)
			require.NoError(t, <-errc)
			require.NoError(t, <-errc)
			require.Equal(t, sha256.Sum256(up), sha256.Sum256(gotUp))
			require.Equal(t, sha256.Sum256(down), sha256.Sum256(gotDown))
			if l.imp != nil {
				require.Positive(t, c.Stats().Retransmits+s.Stats().Retransmits, "losses were repaired")
			}
		})
	}
}

// TestCloseDeliversAcceptedData: Close right after a large Write still
// delivers every byte, then io.EOF.
func TestCloseDeliversAcceptedData(t *testing.T) {
	c, s, _ := streamPair(t, nil, links[1])
	data := randomBytes(2<<20, 3)
	n, err := c.Write(data)
	require.NoError(t, err)
	require.Equal(t, len(data), n)
	require.NoError(t, c.Close())
	got, err := io.ReadAll(s)
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got))

	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = c.Write([]byte("x"))
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorIs(t, c.Close(), net.ErrClosed)
}

// TestCloseWriteHalfClose: after CloseWrite the peer reads io.EOF, and the
// other direction still works.
func TestCloseWriteHalfClose(t *testing.T) {
	c, s, _ := streamPair(t, nil, links[0])
	_, err := c.Write([]byte("request"))
	require.NoError(t, err)
	require.NoError(t, c.CloseWrite())
	_, err = c.Write([]byte("late"))
	require.ErrorIs(t, err, net.ErrClosed)

	req, err := io.ReadAll(s)
	require.NoError(t, err)
	require.Equal(t, "request", string(req))
	n, err := s.Read(make([]byte, 8))
	require.Equal(t, 0, n)
	require.Equal(t, io.EOF, err, "exactly io.EOF, again")

	_, err = s.Write([]byte("response"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	resp, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Equal(t, "response", string(resp))
}

// TestIdleTimeout: a peer that vanishes without a word makes Read fail
// with ErrIdleTimeout, a net.Error timeout, within the idle timeout.
func TestIdleTimeout(t *testing.T) {
	cfg := &Config{IdleTimeout: 600 * time.Millisecond, KeepAlive: 100 * time.Millisecond}
	c, _, ln := streamPair(t, cfg, links[0])
	require.NoError(t, ln.ep.pc.Close()) // the server's socket is gone

	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, ErrIdleTimeout)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout())
	require.Less(t, time.Since(start), 5*time.Second)
	_, err = c.Write([]byte("x"))
	require.ErrorIs(t, err, ErrIdleTimeout)
}

// TestKeepAliveHoldsIdleConn: an idle but healthy conn outlives several
// idle timeouts because keepalives are answered.
func TestKeepAliveHoldsIdleConn(t *testing.T) {
	cfg := &Config{IdleTimeout: 600 * time.Millisecond, KeepAlive: 50 * time.Millisecond}
	c, s, _ := streamPair(t, cfg, links[0])
	time.Sleep(2 * time.Second) // more than three idle timeouts
	_, err := c.Write([]byte("still here"))
	require.NoError(t, err)
	buf := make([]byte, 32)
	n, err := s.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "still here", string(buf[:n]))
}

// TestHandshakeTimeout: dialing a socket that never answers fails with
// ErrHandshakeTimeout after Config.HandshakeTimeout.
func TestHandshakeTimeout(t *testing.T) {
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	d := Dialer{Config: &Config{HandshakeTimeout: 300 * time.Millisecond}}
	_, err = d.Dial("udp", silent.LocalAddr().String())
	require.ErrorIs(t, err, ErrHandshakeTimeout)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout())
}

// TestDialRefused: dialing a closed port fails with connection refused.
func TestDialRefused(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := pc.LocalAddr().String()
	require.NoError(t, pc.Close())
	_, err = Dial("udp", addr)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
}

// TestDialContextCancel: a cancelled context ends the dial with its error.
func TestDialContextCancel(t *testing.T) {
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var d Dialer
	_, err = d.DialContext(ctx, "udp", silent.LocalAddr().String())
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestResetOnUnreadData: closing with the peer's data unread resets the
// peer, whose writes then fail with ErrReset.
func TestResetOnUnreadData(t *testing.T) {
	c, s, _ := streamPair(t, nil, links[0])
	_, err := c.Write([]byte("nobody reads this"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		s.a.mu.Lock()
		defer s.a.mu.Unlock()
		return s.st.Readable()
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, s.Close())

	require.Eventually(t, func() bool {
		_, err := c.Write([]byte("more"))
		return errors.Is(err, ErrReset)
	}, 5*time.Second, 10*time.Millisecond)
	_, err = c.Read(make([]byte, 1))
	require.Equal(t, io.EOF, err, "the peer's FIN came before its reset")
}

// TestListenerCloseResetsUnaccepted: a conn the listener never accepted is
// reset when the listener closes; the dialer sees ErrReset.
func TestListenerCloseResetsUnaccepted(t *testing.T) {
	ln := Server(udpSocket(t, nil, 0), nil)
	c := Client(udpSocket(t, nil, 0), ln.Addr(), nil)
	defer c.Close()
	require.NoError(t, c.Handshake(context.Background()))
	require.Eventually(t, func() bool {
		ln.q.mu.Lock()
		defer ln.q.mu.Unlock()
		return len(ln.q.queue) == 1
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, ln.Close())
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, ErrReset)
	_, err = ln.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorIs(t, ln.Close(), net.ErrClosed)
}

// TestPeerRestart: a client that comes back on the same address with a new
// session resets the old server conn and is accepted as a new conn.
func TestPeerRestart(t *testing.T) {
	ln := Server(udpSocket(t, nil, 0), nil)
	defer ln.Close()
	pc1 := udpSocket(t, nil, 0)
	addr := pc1.LocalAddr().String()
	c1 := Client(pc1, ln.Addr(), nil)
	require.NoError(t, c1.Handshake(context.Background()))
	s1, err := ln.Accept()
	require.NoError(t, err)
	defer s1.Close()

	c1.a.abandon(errClosed) // the process dies: no close reaches the server
	require.Eventually(t, func() bool { return pc1.Close() != nil }, 5*time.Second, time.Millisecond)
	pc2, err := net.ListenPacket("udp", addr)
	require.NoError(t, err)
	c2 := Client(pc2, ln.Addr(), nil)
	defer c2.Close()
	require.NoError(t, c2.Handshake(context.Background()))

	_, err = s1.Read(make([]byte, 1))
	require.ErrorIs(t, err, ErrReset)
	s2, err := ln.Accept()
	require.NoError(t, err)
	defer s2.Close()
	_, err = c2.Write([]byte("second life"))
	require.NoError(t, err)
	buf := make([]byte, 32)
	n, err := s2.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "second life", string(buf[:n]))
}

// TestStreamToMessageListener: a stream dialed at a message listener never
// gets the stream handshake, and fails with ErrHandshakeTimeout.
func TestStreamToMessageListener(t *testing.T) {
	ln, err := ListenMessages("udp", "127.0.0.1:0", nil)
	require.NoError(t, err)
	defer ln.Close()
	d := Dialer{Config: &Config{HandshakeTimeout: 500 * time.Millisecond}}
	_, err = d.Dial("udp", ln.Addr().String())
	require.ErrorIs(t, err, ErrHandshakeTimeout)
}

// TestDeadlineErrors: deadlines give os.ErrDeadlineExceeded wrapped in a
// *net.OpError, and the conn stays usable afterwards.
func TestDeadlineErrors(t *testing.T) {
	c, s, _ := streamPair(t, nil, links[0])
	require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var oe *net.OpError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, "read", oe.Op)

	require.NoError(t, c.SetReadDeadline(time.Time{}))
	_, err = s.Write([]byte("ok"))
	require.NoError(t, err)
	buf := make([]byte, 2)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, "ok", string(buf))
}

func TestConfigValidation(t *testing.T) {
	_, err := (&Config{MTU: 100}).resolved()
	require.Error(t, err)
	_, err = (&Config{Protocol: 99}).resolved()
	require.ErrorIs(t, err, ErrUnknownProtocol)
	_, err = Dial("tcp", "127.0.0.1:1")
	require.Error(t, err)
	for _, want := range Protocols() {
		p, err := ParseProtocol(want.String())
		require.NoError(t, err)
		require.Equal(t, want, p)
	}
	require.Equal(t, []string{"porous", "airhook", "lludp"}, []string{POROUS.String(), Airhook.String(), LLUDP.String()})
	_, err = ParseProtocol("nope")
	require.ErrorIs(t, err, ErrUnknownProtocol)
	cfg, err := (*Config)(nil).resolved()
	require.NoError(t, err)
	require.Equal(t, POROUS, cfg.Protocol, "the default protocol")
	require.Equal(t, 1, cfg.Channels)
	require.Equal(t, DefaultMaxMessage, cfg.MaxMessage)
	require.Equal(t, DefaultMTU, cfg.MTU)
	require.Equal(t, DefaultKeepAlive, cfg.KeepAlive)
}

// TestDone: Done closes once a closed conn has delivered everything and
// the association has ended, and at once for a Client conn never used.
func TestDone(t *testing.T) {
	c, s, _ := streamPair(t, nil, links[1])
	data := randomBytes(1<<20, 6)
	_, err := c.Write(data)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	select {
	case <-c.Done():
		t.Fatal("done before the peer read anything")
	default:
	}
	got, err := io.ReadAll(s)
	require.NoError(t, err)
	require.Equal(t, len(data), len(got))
	require.NoError(t, s.Close())
	for _, x := range []*Conn{c, s} {
		select {
		case <-x.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("association did not end")
		}
	}

	unused := Client(udpSocket(t, nil, 0), s.LocalAddr(), nil)
	require.NoError(t, unused.Close())
	<-unused.Done()
}

// TestListenerStats: datagrams that reach no conn are counted: garbage
// from a stranger, and new peers beyond the backlog.
func TestListenerStats(t *testing.T) {
	ln := Server(udpSocket(t, nil, 0), &Config{Backlog: 1})
	defer ln.Close()
	junk := udpSocket(t, nil, 0)
	defer junk.Close()
	_, err := junk.WriteTo([]byte{0x00, 0x01, 0x00, 0x02}, ln.Addr()) // a POROUS Connect cut short
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ln.Stats().UnknownDrops == 1 }, 5*time.Second, time.Millisecond)

	first := Client(udpSocket(t, nil, 0), ln.Addr(), nil)
	defer first.Close()
	require.NoError(t, first.Handshake(context.Background()))
	// Once the listener has the first conn's ECHO, it waits for Accept and
	// fills the backlog; it is never accepted.
	require.Eventually(t, func() bool {
		ln.q.mu.Lock()
		defer ln.q.mu.Unlock()
		return len(ln.q.queue) == 1
	}, 5*time.Second, time.Millisecond)
	second := Client(udpSocket(t, nil, 0), ln.Addr(), &Config{HandshakeTimeout: 300 * time.Millisecond})
	defer second.Close()
	require.ErrorIs(t, second.Handshake(context.Background()), ErrHandshakeTimeout)
	require.Positive(t, ln.Stats().BacklogDrops)
	require.Zero(t, ln.Stats().Evicted, "a conn waiting for Accept is never evicted")
	require.Zero(t, ln.Stats().Oversize)
	require.Zero(t, first.Stats().SendErrors)
}

// TestHalfOpenEvicted: with the backlog full of a peer that opened and
// never answered (a spoofed address), a new peer evicts it and is
// accepted; the silent peer got at most three times the bytes it sent.
func TestHalfOpenEvicted(t *testing.T) {
	ln := Server(udpSocket(t, nil, 0), &Config{Backlog: 1})
	defer ln.Close()
	silent := udpSocket(t, nil, 0)
	defer silent.Close()
	connect := seal([]byte{0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04}) // POROUS Connect, version 0, 1 channel, sealed as streams' datagrams are
	_, err := silent.WriteTo(connect, ln.Addr())
	require.NoError(t, err)
	got := 0
	_ = silent.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 2048)
	for {
		n, _, err := silent.ReadFrom(buf)
		if err != nil {
			break
		}
		got += n
	}
	require.Positive(t, got, "the listener answered the opening")
	require.LessOrEqual(t, got, 3*len(connect), "at most three times what it sent, in a second of Connect repeats")

	c := Client(udpSocket(t, nil, 0), ln.Addr(), nil)
	defer c.Close()
	require.NoError(t, c.Handshake(context.Background()))
	s, err := ln.Accept()
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, uint64(1), ln.Stats().Evicted)
}
