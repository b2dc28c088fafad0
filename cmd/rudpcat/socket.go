package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rudpkit/rudp"
	"github.com/rudpkit/rudp/internal/impair"
	"github.com/rudpkit/rudp/internal/socket"
)

// closeWait bounds the wait for a closed conn to finish: rudp gives up on
// a close after Config.Linger.
const closeWait = rudp.DefaultLinger + 2*time.Second

// openSocket binds a UDP socket of network ("udp", "udp4" or "udp6") to
// addr and impairs what it sends with imp, if imp impairs anything.
// Unimpaired, rudp gets the *net.UDPConn itself, so that it can use
// batched I/O, and sizes its buffers itself.
func openSocket(network, addr string, imp impair.Config) (net.PacketConn, error) {
	pc, err := net.ListenPacket(network, addr)
	if err != nil {
		return nil, err
	}
	uc := pc.(*net.UDPConn)
	if imp.Loss == 0 && imp.Delay == 0 && imp.Jitter == 0 {
		return uc, nil
	}
	// The size rudp asks for on its own sockets; best effort: the kernel
	// caps these at its configured maximum.
	_ = uc.SetReadBuffer(socket.BufferSize)
	_ = uc.SetWriteBuffer(socket.BufferSize)
	return impair.New(uc, imp), nil
}

// listenStream opens a socket on addr and returns a rudp listener on it.
func listenStream(addr string, cfg *rudp.Config, imp impair.Config) (*rudp.Listener, error) {
	pc, err := openSocket("udp", addr, imp)
	if err != nil {
		return nil, err
	}
	return rudp.Server(pc, cfg), nil
}

// acceptOne accepts one conn from l and closes l: the conn lives on.
func acceptOne(l *rudp.Listener) (*rudp.Conn, error) {
	nc, err := l.Accept()
	_ = l.Close()
	if err != nil {
		return nil, err
	}
	return nc.(*rudp.Conn), nil
}

// dialStream opens a socket and connects a rudp conn from it to raddr,
// completing the handshake before ctx ends. Unimpaired, the socket is
// connected to raddr, so that a port where nothing listens is reported
// at once (ECONNREFUSED) rather than after the handshake timeout; an
// impaired one sends through impair, which needs an unconnected socket.
func dialStream(ctx context.Context, raddr *net.UDPAddr, cfg *rudp.Config, imp impair.Config) (*rudp.Conn, error) {
	network := "udp6"
	if raddr.IP == nil || raddr.IP.To4() != nil {
		network = "udp4"
	}
	var pc net.PacketConn
	var err error
	if imp.Loss == 0 && imp.Delay == 0 && imp.Jitter == 0 {
		pc, err = net.DialUDP(network, nil, raddr)
	} else {
		pc, err = openSocket(network, ":0", imp)
	}
	if err != nil {
		return nil, err
	}
	conn := rudp.Client(pc, raddr, cfg)
	if err := conn.Handshake(ctx); err != nil {
		_ = conn.Close()
		if errors.Is(err, rudp.ErrHandshakeTimeout) {
			return nil, fmt.Errorf("connecting to %v: %w (is rudpcat listening there, with the same --protocol?)", raddr, err)
		}
		return nil, fmt.Errorf("connecting to %v: %w", raddr, err)
	}
	return conn, nil
}

// abortOn resets conn's stream if ctx ends (Ctrl-C, SIGTERM) before the
// returned stop is called: the peer then fails at once with a reset error
// rather than after its idle timeout.
func abortOn(ctx context.Context, conn *rudp.Conn) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		_ = conn.SetLinger(0)
		_ = conn.Close()
	})
}

// closeAndWait closes conn and waits until it has finished delivering
// what it was given, or closeWait passes.
func closeAndWait(conn *rudp.Conn) {
	_ = conn.Close()
	select {
	case <-conn.Done():
	case <-time.After(closeWait):
	}
}

// listenAddr binds a socket on addr and listens on it as the flags ask.
func listenAddr(addr string, o *options) (*rudp.Listener, error) {
	return listenStream(addr, o.config(), o.impairment(o.loss, -1, o.seed))
}

// accept reports l's address on stderr, with the public key of the
// Wirefox identity it proves (--identity), and accepts one conn from l,
// unless c.ctx ends first.
func (c *cli) accept(l *rudp.Listener, o *options) (*rudp.Conn, error) {
	fmt.Fprintf(c.stderr, "rudpcat: listening on %v\n", l.Addr())
	if o.identity != nil {
		fmt.Fprintf(c.stderr, "rudpcat: identity public key %x (give it to dialers' --server-key)\n", o.identity.PublicKey().Bytes())
	}
	stop := context.AfterFunc(c.ctx, func() { _ = l.Close() })
	defer stop()
	return acceptOne(l)
}

// dialAddr connects to addr as the flags ask, unless c.ctx ends first.
func (c *cli) dialAddr(addr string, o *options) (*rudp.Conn, error) {
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	return dialStream(c.ctx, raddr, o.config(), o.impairment(o.loss, -1, o.seed))
}
