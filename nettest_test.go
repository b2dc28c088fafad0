package rudp

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/net/nettest"
)

// TestNetConn runs the net.Conn conformance suite on rudp streams for every
// protocol, over real UDP loopback sockets, on a clean and an impaired
// path (5% loss, 2% duplication, 1 ms delay, 2% of datagrams
// reordered by 2 ms).
func TestNetConn(t *testing.T) {
	for _, p := range Protocols() {
		for _, l := range links {
			t.Run(p.String()+"/"+l.name, func(t *testing.T) {
				cfg := &Config{Protocol: p}
				seed := uint64(0)
				nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
					seed += 2
					ln := Server(udpSocket(t, l.imp, seed), cfg)
					return connectedPair(Client(udpSocket(t, l.imp, seed+1), ln.Addr(), cfg), ln)
				})
			})
		}
	}
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
