package rudp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/avara"
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
			writeThenCloseWrite(c, up, errc)
			writeThenCloseWrite(s, down, errc)
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
	// The reader runs from the start: Write holds at most four congestion
	// windows beyond the peer's receive window, so a writer whose peer
	// never reads blocks, as over TCP.
	type result struct {
		got []byte
		err error
	}
	read := make(chan result, 1)
	go func() {
		got, err := io.ReadAll(s)
		read <- result{got, err}
	}()
	n, err := c.Write(data)
	require.NoError(t, err)
	require.Equal(t, len(data), n)
	require.NoError(t, c.Close())
	r := <-read
	require.NoError(t, r.err)
	require.True(t, bytes.Equal(data, r.got))

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
	bound(t, c)
	require.NoError(t, c.Handshake(context.Background()))
	require.Eventually(t, func() bool {
		ln.listener.q.mu.Lock()
		defer ln.listener.q.mu.Unlock()
		return len(ln.listener.q.queue) == 1
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, ln.Close())
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, ErrReset)
	_, err = ln.Accept() // closed: returns at once
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
	s1 := accept(t, ln)
	defer s1.Close()
	bound(t, s1)

	c1.a.abandon(errClosed) // the process dies: no close reaches the server
	require.Eventually(t, func() bool { return pc1.Close() != nil }, 5*time.Second, time.Millisecond)
	pc2, err := net.ListenPacket("udp", addr)
	require.NoError(t, err)
	c2 := Client(pc2, ln.Addr(), nil)
	defer c2.Close()
	require.NoError(t, c2.Handshake(context.Background()))

	_, err = s1.Read(make([]byte, 1))
	require.ErrorIs(t, err, ErrReset)
	s2 := accept(t, ln)
	defer s2.Close()
	bound(t, s2)
	_, err = c2.Write([]byte("second life"))
	require.NoError(t, err)
	buf := make([]byte, 32)
	n, err := s2.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "second life", string(buf[:n]))
}

// TestTCPNetworkNames: streams take "tcp", "tcp4" and "tcp6" as the UDP
// names, as net/http passes them; message conns do not.
func TestTCPNetworkNames(t *testing.T) {
	ln, err := Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	require.Equal(t, "udp", ln.Addr().Network())
	for _, network := range []string{"tcp", "tcp4"} {
		c, err := (&Dialer{}).DialContext(context.Background(), network, ln.Addr().String())
		require.NoError(t, err, network)
		s, err := ln.Accept()
		require.NoError(t, err)
		_, err = c.Write([]byte(network))
		require.NoError(t, err)
		buf := make([]byte, 8)
		require.NoError(t, s.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, err := s.Read(buf)
		require.NoError(t, err)
		require.Equal(t, network, string(buf[:n]))
		require.NoError(t, c.Close())
		require.NoError(t, s.Close())
	}
	for from, to := range map[string]string{"tcp": "udp", "tcp4": "udp4", "tcp6": "udp6", "udp6": "udp6", "ip": "ip"} {
		require.Equal(t, to, streamNetwork(from))
	}

	var unknown net.UnknownNetworkError
	_, err = DialMessages(context.Background(), "tcp", ln.Addr().String(), nil)
	require.ErrorAs(t, err, &unknown)
	_, err = ListenMessages("tcp", "127.0.0.1:0", nil)
	require.ErrorAs(t, err, &unknown)
}

func TestConfigValidation(t *testing.T) {
	_, err := (&Config{MTU: 100}).resolved()
	require.Error(t, err)
	for _, bad := range []Config{
		{Protocol: Avara, AvaraPassword: strings.Repeat("x", MaxAvaraPassword+1)},
		{Protocol: Avara, AvaraCram: MaxAvaraCram + 1},
	} {
		_, err = bad.resolved()
		require.ErrorContains(t, err, "Config.Avara")
	}
	_, err = (&Config{Protocol: Avara, AvaraSkipAfter: -1}).resolved()
	require.ErrorContains(t, err, "Config.AvaraSkipAfter -1 is negative")
	for name, bad := range map[string]Config{
		"IdleTimeout":      {IdleTimeout: -1},
		"HandshakeTimeout": {HandshakeTimeout: -time.Second},
		"KeepAlive":        {KeepAlive: -1},
		"Linger":           {Linger: -1},
		"MTU":              {MTU: -1},
		"RecvWindow":       {RecvWindow: -1},
		"MaxRecvWindow":    {MaxRecvWindow: -1},
		"SendBuffer":       {SendBuffer: -1},
		"Backlog":          {Backlog: -1},
		"MaxRecvBuffer":    {MaxRecvBuffer: -1},
		"Channels":         {Channels: -1},
		"MaxMessage":       {MaxMessage: -1},
	} {
		_, err = bad.resolved()
		require.ErrorContains(t, err, "Config."+name+" -1", name)
		require.ErrorContains(t, err, "is negative (zero means the default)", name)
	}
	r, err := (&Config{Protocol: Avara, AvaraPassword: strings.Repeat("x", MaxAvaraPassword), AvaraCram: -1}).resolved()
	require.NoError(t, err)
	require.Equal(t, avara.Options{Password: strings.Repeat("x", MaxAvaraPassword), Cram: -1}, r.opts,
		"the protocol's own options; version 0 is its default, DefaultAvaraVersion")
	_, err = (&Config{Protocol: 99}).resolved()
	require.ErrorIs(t, err, ErrUnknownProtocol)
	_, err = Dial("ip4", "127.0.0.1:1")
	var unknown net.UnknownNetworkError
	require.ErrorAs(t, err, &unknown)
	for _, want := range Protocols() {
		p, err := ParseProtocol(want.String())
		require.NoError(t, err)
		require.Equal(t, want, p)
	}
	require.Equal(t, []string{"porous", "airhook", "lludp", "avara"}, []string{POROUS.String(), Airhook.String(), LLUDP.String(), Avara.String()})
	require.Equal(t, Protocol(5), Avara)
	for name, want := range map[string]Protocol{"POROUS": POROUS, "Airhook": Airhook, "LLUDP": LLUDP, "lLuDp": LLUDP, "AVARA": Avara} {
		p, err := ParseProtocol(name)
		require.NoError(t, err, name)
		require.Equal(t, want, p, name)
	}
	_, err = ParseProtocol("nope")
	require.ErrorIs(t, err, ErrUnknownProtocol)
	_, err = ParseProtocol("porous ")
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

// TestUseAfterCloseWithDeadlinePassed: after Close, Read and Write fail
// with net.ErrClosed even when their deadline has passed, as on TCP.
func TestUseAfterCloseWithDeadlinePassed(t *testing.T) {
	past := time.Now().Add(-time.Second)
	c, _, _ := streamPair(t, nil, links[0])
	require.NoError(t, c.SetDeadline(past))
	require.NoError(t, c.Close())
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = c.Write([]byte("x"))
	require.ErrorIs(t, err, net.ErrClosed)

	mc, _ := messagePair(t, nil, links[0])
	require.NoError(t, mc.SetDeadline(past))
	require.NoError(t, mc.Close())
	_, err = mc.Read(make([]byte, 1))
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = mc.Write([]byte("x"))
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = mc.ReadMessage()
	require.ErrorIs(t, err, net.ErrClosed)
}

// TestSetLingerZeroResets: Close after SetLinger(0) discards what was not
// delivered and resets the peer at once, long before its idle timeout.
func TestSetLingerZeroResets(t *testing.T) {
	cfg := &Config{IdleTimeout: time.Minute, RecvWindow: 64 << 10, SendBuffer: 1 << 20}
	c, s, _ := streamPair(t, cfg, links[0])
	_, err := c.Write(randomBytes(256<<10, 3)) // the peer's window takes 64 KiB; the rest waits
	require.NoError(t, err)
	require.NoError(t, c.SetLinger(0))
	require.NoError(t, c.Close())

	require.NoError(t, s.SetReadDeadline(time.Now().Add(10*time.Second)))
	n, err := io.Copy(io.Discard, s)
	require.ErrorIs(t, err, ErrReset)
	require.LessOrEqual(t, n, int64(64<<10), "what waited for the window was discarded")
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the aborted conn did not end")
	}
}
