package rudp

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/impair"
	"golang.org/x/net/nettest"
)

// TestNetConn runs the net.Conn conformance suite on rudp streams for every
// protocol, over real UDP loopback sockets, on a clean and an impaired
// path (5% loss, 2% duplication, 1 ms delay, 2% of datagrams
// reordered by 2 ms). The impaired path is impaired once the pair is
// connected: a lost handshake datagram would cost its protocol's resend
// interval (Wirefox's is 2 s) in each of the suite's pipes, where it
// tests nothing of net.Conn; TestStreamTransfer and TestNetConn's clean
// runs cover the handshake. The runs are independent and mostly wait for
// resends: they run in parallel.
func TestNetConn(t *testing.T) {
	t.Parallel()
	for _, p := range Protocols() {
		for _, l := range links {
			t.Run(p.String()+"/"+l.name, func(t *testing.T) {
				t.Parallel()
				cfg := &Config{Protocol: p}
				seed := uint64(0)
				nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
					seed += 2
					var impaired atomic.Bool
					ln := Server(impairedLater(t, l.imp, seed, &impaired), cfg)
					c, s, stop, err := connectedPair(Client(impairedLater(t, l.imp, seed+1, &impaired), ln.Addr(), cfg), ln)
					impaired.Store(true)
					return c, s, stop, err
				})
			})
		}
	}
}

// impairedLater opens a loopback UDP socket whose sends are impaired by
// imp (if not nil) once on is set.
func impairedLater(t *testing.T, imp *impair.Config, seed uint64, on *atomic.Bool) net.PacketConn {
	pc := udpSocket(t, nil, 0)
	if imp == nil {
		return pc
	}
	cfg := *imp
	cfg.Seed = seed
	return laterConn{impair.New(pc, cfg), on}
}

// laterConn sends as the impaired conn it holds once on is set, plainly
// before.
type laterConn struct {
	*impair.Conn
	on *atomic.Bool
}

func (c laterConn) WriteTo(p []byte, to net.Addr) (int, error) {
	if c.on.Load() {
		return c.Conn.WriteTo(p, to)
	}
	return c.Conn.PacketConn.WriteTo(p, to)
}

// TestMessageNetConn runs the net.Conn conformance suite on POROUS message
// conns over loopback, whose Read returns one message: the suite writes in
// chunks of at most 1024 bytes and reads into 1024-byte buffers, so each
// Read gets what one Write sent, and POROUS delivers reliable messages in
// order, as the byte-stream subtests (BasicIO, PingPong) need. Airhook
// (256-byte messages, not in order), LLUDP (the first bytes are a
// message number, not in order) and Avara (the first 8 bytes are a command
// and its parameters) cannot run it; TestDeadlines covers their deadlines.
func TestMessageNetConn(t *testing.T) {
	cfg := &Config{}
	nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
		ln := ServerMessages(udpSocket(t, nil, 0), cfg)
		return connectedPair(ClientMessages(udpSocket(t, nil, 0), ln.Addr(), cfg), ln)
	})
}

// connectedPair completes c's handshake with ln (10 s at most) and accepts
// the other end, for nettest.MakePipe: both conns and a stop that closes
// them and the listener.
func connectedPair(c interface {
	net.Conn
	Handshake(context.Context) error
}, ln net.Listener) (net.Conn, net.Conn, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Handshake(ctx); err != nil {
		ln.Close()
		return nil, nil, nil, err
	}
	s, err := ln.Accept()
	if err != nil {
		c.Close()
		ln.Close()
		return nil, nil, nil, err
	}
	stop := func() {
		c.Close()
		s.Close()
		ln.Close()
	}
	return c, s, stop, nil
}
