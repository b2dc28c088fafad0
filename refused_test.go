package rudp

import (
	"bytes"
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRefusalsRule: port unreachable reports end an open association only
// when at least 3 of them, with no datagram from the peer in between, span
// at least the RTO seen at the first.
func TestRefusalsRule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const rto = 200 * time.Millisecond
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	var r refusals
	require.False(t, r.add(at(0), rto))
	require.False(t, r.add(at(rto), rto), "two reports are not enough, however far apart")
	require.True(t, r.add(at(rto+time.Millisecond), rto))

	r = refusals{}
	for i := range 10 {
		require.False(t, r.add(at(time.Duration(i)*rto/10), rto), "report %d: all within less than an RTO", i)
	}
	require.True(t, r.add(at(rto), 10*rto), "the RTO is the one seen at the first report")

	r = refusals{}
	require.False(t, r.add(at(0), 10*time.Second))
	require.False(t, r.add(at(time.Millisecond), 10*time.Second))
	require.False(t, r.add(at(refusalSpanMax-1), 10*time.Second), "a long RTO: the span is capped")
	require.True(t, r.add(at(refusalSpanMax), 10*time.Second))

	r = refusals{}
	require.False(t, r.add(at(0), rto))
	require.False(t, r.add(at(rto/2), rto))
	r.reset() // a datagram from the peer
	require.False(t, r.add(at(rto), rto))
	require.False(t, r.add(at(2*rto), rto), "two reports since the peer was heard")
	require.True(t, r.add(at(2*rto), rto))
}

// TestRefusalsEndAssociation drives an open association's refusal path
// with explicit times: reports within an RTO, or broken by a datagram from
// the peer, leave it open; persistent ones end it with ECONNREFUSED.
func TestRefusalsEndAssociation(t *testing.T) {
	cfg := &Config{IdleTimeout: time.Minute}
	c, _, ln := streamPair(t, cfg, links[0])
	require.NoError(t, ln.listener.ep.PacketConn().Close()) // nothing comes from the peer any more
	rto := c.Stats().RTO
	require.Positive(t, rto)
	t0 := time.Now()
	over := func() bool {
		c.a.mu.Lock()
		defer c.a.mu.Unlock()
		return c.a.over
	}

	for i := range 5 {
		c.a.Refused(t0.Add(time.Duration(i) * rto / 10))
	}
	require.False(t, over(), "all within less than an RTO")
	c.a.Input(t0.Add(rto/2), []byte{0xff}, 1) // a datagram from the peer (rejected, but heard)
	c.a.Refused(t0.Add(rto))
	c.a.Refused(t0.Add(3 * rto))
	require.False(t, over(), "two reports since the peer was heard")
	c.a.Refused(t0.Add(3 * rto))
	require.True(t, over())

	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	_, err = c.Write([]byte("x"))
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
}

// TestVanishedPeerRefused: over real loopback UDP, a dialed conn whose
// peer's socket closes without a word fails with ECONNREFUSED from the
// ICMP port unreachable its datagrams draw, long before the idle timeout
// (one minute, more than the test's guard).
func TestVanishedPeerRefused(t *testing.T) {
	for _, p := range Protocols() {
		t.Run(p.String()+"/stream", func(t *testing.T) { testVanished(t, p, true, false) })
		t.Run(p.String()+"/message", func(t *testing.T) { testVanished(t, p, false, false) })
	}
}

// testVanished connects a conn pair of protocol p (streams, or message
// conns), exchanges a message (so that the peer has shown it receives: a
// listener's LLUDP conn is amplification-limited until then), closes the
// socket of one end without a word (the listener's, or the dialer's if
// listenerSees) and has the other end write until a write fails: with
// ECONNREFUSED, and a read after it too.
func testVanished(t *testing.T, p Protocol, stream, listenerSees bool) {
	cfg := &Config{Protocol: p, IdleTimeout: time.Minute}
	var c, s net.Conn
	var lnPC, cPC net.PacketConn
	if stream {
		l, err := (&ListenConfig{Config: cfg}).Listen(context.Background(), "udp", "127.0.0.1:0")
		require.NoError(t, err)
		ln := l.(*Listener)
		defer ln.Close()
		nc, err := (&Dialer{Config: cfg}).Dial("udp", ln.Addr().String())
		require.NoError(t, err)
		c = nc
		s, err = ln.Accept()
		require.NoError(t, err)
		lnPC, cPC = ln.listener.ep.PacketConn(), nc.(*Conn).a.ep.PacketConn()
	} else {
		ln, err := ListenMessages("udp", "127.0.0.1:0", cfg)
		require.NoError(t, err)
		defer ln.Close()
		mc, err := DialMessages(context.Background(), "udp", ln.Addr().String(), cfg)
		require.NoError(t, err)
		c = mc
		ms, err := ln.AcceptMessages()
		require.NoError(t, err)
		s = ms
		lnPC, cPC = ln.listener.ep.PacketConn(), mc.a.ep.PacketConn()
	}
	defer c.Close()
	defer s.Close()
	m := Message{Data: bytes.Repeat([]byte{15}, 100), Number: testNumber(p)} // 15: a Wirefox user command
	require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
	require.NoError(t, s.SetDeadline(time.Now().Add(20*time.Second)))
	require.NoError(t, send(s, p, m.Data))
	_, err := recv(c)
	require.NoError(t, err)
	writer, gone := c, lnPC
	if listenerSees {
		writer, gone = s, cPC
	}
	if mc, ok := s.(*MessageConn); ok {
		require.Eventually(t, func() bool { // the dialer acknowledged it
			mc.a.mu.Lock()
			defer mc.a.mu.Unlock()
			return mc.a.eng.Pending() == 0
		}, 20*time.Second, time.Millisecond)
	}
	require.NoError(t, gone.Close()) // the peer vanishes
	start := time.Now()
	require.NoError(t, writer.SetDeadline(time.Now().Add(40*time.Second)))
	for {
		if err = send(writer, p, m.Data); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	t.Logf("refused %v after the peer vanished", time.Since(start))
	_, err = writer.Read(make([]byte, 2048))
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
}

// TestClientConnectedSocketRefused: Client and ClientMessages over a
// *net.UDPConn connected to a port where nothing listens fail their
// handshake with ECONNREFUSED, as Dial does, not with the handshake
// timeout.
func TestClientConnectedSocketRefused(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	raddr := pc.LocalAddr().(*net.UDPAddr)
	require.NoError(t, pc.Close())
	cfg := &Config{HandshakeTimeout: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	uc, err := net.DialUDP("udp", nil, raddr)
	require.NoError(t, err)
	require.ErrorIs(t, Client(uc, raddr, cfg).Handshake(ctx), syscall.ECONNREFUSED)
	uc, err = net.DialUDP("udp", nil, raddr)
	require.NoError(t, err)
	require.ErrorIs(t, ClientMessages(uc, raddr, cfg).Handshake(ctx), syscall.ECONNREFUSED)
}
