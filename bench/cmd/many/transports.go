package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/rudpkit/rudp"
	"github.com/rudpkit/rudp/bench"
)

// loopback is where the listener binds.
const loopback = "127.0.0.1:0"

// conn is one stream, either end: a TCP conn, a rudp stream, or the one
// bidirectional stream of a QUIC connection.
type conn interface {
	io.ReadWriter
	// CloseWrite ends the writing side: the peer reads io.EOF after the
	// bytes written.
	CloseWrite() error
	// Close ends the stream (gracefully where the transport can).
	Close() error
	SetDeadline(time.Time) error
}

// server is the listening side of a transport.
type server interface {
	addr() string
	// accept waits for the next incoming connection and returns a
	// function that, called on a goroutine of its own, returns its
	// stream, so that a slow stream does not hold up the accept loop.
	accept(ctx context.Context) (func(context.Context) (conn, error), error)
}

// transport makes the listener and the client streams of one transport.
type transport struct {
	listen func(ctx context.Context) (server, error)
	dial   func(ctx context.Context, addr string) (conn, error)
}

// spec is a transport named on the command line: "tcp", "quic-go" or
// "rudp/<protocol>".
type spec struct {
	kind     string // "tcp", "quic-go" or "rudp"
	protocol rudp.Protocol
}

// parseSpec parses a transport's name.
func parseSpec(name string) (spec, error) {
	switch name {
	case "tcp", "quic-go":
		return spec{kind: name}, nil
	}
	if p, ok := strings.CutPrefix(name, "rudp/"); ok {
		proto, err := rudp.ParseProtocol(p)
		if err != nil {
			return spec{}, err
		}
		return spec{kind: "rudp", protocol: proto}, nil
	}
	return spec{}, fmt.Errorf("unknown transport %q: tcp, quic-go or rudp/<protocol>", name)
}

// open returns the transport s names; sockets is a rudp listener's
// ListenConfig.Sockets; handshake, when not 0, is a rudp
// transport's Config.HandshakeTimeout.
func (s spec) open(handshake time.Duration, sockets int) (*transport, error) {
	switch s.kind {
	case "tcp":
		return tcpTransport(), nil
	case "quic-go":
		return quicTransport()
	default:
		return rudpTransport(s.protocol, handshake, sockets), nil
	}
}

// tcpTransport is kernel TCP with Go's defaults.
func tcpTransport() *transport {
	return &transport{
		listen: func(ctx context.Context) (server, error) {
			var lc net.ListenConfig
			ln, err := lc.Listen(ctx, "tcp", loopback)
			if err != nil {
				return nil, err
			}
			return tcpServer{ln}, nil
		},
		dial: func(ctx context.Context, addr string) (conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return c.(*net.TCPConn), nil
		},
	}
}

type tcpServer struct{ ln net.Listener }

func (s tcpServer) addr() string { return s.ln.Addr().String() }

func (s tcpServer) accept(context.Context) (func(context.Context) (conn, error), error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	return func(context.Context) (conn, error) { return c.(*net.TCPConn), nil }, nil
}

// rudpTransport is rudp streams of protocol p with the default Config
// but for HandshakeTimeout (0: the default): one listener of sockets
// sockets (ListenConfig.Sockets; 0: the default), and each client dialed
// from a socket of its own.
func rudpTransport(p rudp.Protocol, handshake time.Duration, sockets int) *transport {
	cfg := &rudp.Config{Protocol: p, HandshakeTimeout: handshake}
	return &transport{
		listen: func(ctx context.Context) (server, error) {
			lc := rudp.ListenConfig{Config: cfg, Sockets: sockets}
			ln, err := lc.ListenStreams(ctx, "udp", loopback)
			if err != nil {
				return nil, err
			}
			return rudpServer{ln}, nil
		},
		dial: func(ctx context.Context, addr string) (conn, error) {
			d := rudp.Dialer{Config: cfg}
			c, err := d.DialStream(ctx, "udp", addr)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
	}
}

type rudpServer struct{ ln *rudp.Listener }

func (s rudpServer) addr() string { return s.ln.Addr().String() }

func (s rudpServer) stats() string { return fmt.Sprintf("%+v", s.ln.Stats()) }

func (s rudpServer) accept(ctx context.Context) (func(context.Context) (conn, error), error) {
	c, err := s.ln.AcceptContext(ctx)
	if err != nil {
		return nil, err
	}
	return func(context.Context) (conn, error) { return c, nil }, nil
}

// quicConfig is quic-go's defaults, spelt out where they bound this
// measurement: each connection carries one stream, within the 100
// incoming bidirectional streams a connection allows by default, and
// the listener takes any number of connections (its accept queue holds
// 32 handshaken ones, which the accept loop keeps empty).
var quicConfig = &quic.Config{MaxIncomingStreams: 100}

// quicTransport is one bidirectional quic-go stream per QUIC connection,
// over TLS 1.3 with a fresh self-signed certificate: one listener, and
// each client dialed from a socket of its own (quic.DialAddr).
func quicTransport() (*transport, error) {
	serverTLS, clientTLS, err := bench.SelfSigned()
	if err != nil {
		return nil, err
	}
	return &transport{
		listen: func(context.Context) (server, error) {
			ln, err := quic.ListenAddr(loopback, serverTLS, quicConfig)
			if err != nil {
				return nil, err
			}
			return quicServer{ln}, nil
		},
		dial: func(ctx context.Context, addr string) (conn, error) {
			c, err := quic.DialAddr(ctx, addr, clientTLS, quicConfig)
			if err != nil {
				return nil, err
			}
			st, err := c.OpenStreamSync(ctx)
			if err != nil {
				c.CloseWithError(0, "")
				return nil, err
			}
			return quicConn{st: st, c: c, client: true}, nil
		},
	}, nil
}

type quicServer struct{ ln *quic.Listener }

func (s quicServer) addr() string { return s.ln.Addr().String() }

func (s quicServer) accept(ctx context.Context) (func(context.Context) (conn, error), error) {
	c, err := s.ln.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (conn, error) {
		// The client's stream is announced by its first STREAM frame.
		st, err := c.AcceptStream(ctx)
		if err != nil {
			return nil, err
		}
		return quicConn{st: st, c: c}, nil
	}, nil
}

// quicConn is the stream of a QUIC connection that carries only it.
type quicConn struct {
	st     *quic.Stream
	c      *quic.Conn
	client bool
}

func (q quicConn) Read(p []byte) (int, error)    { return q.st.Read(p) }
func (q quicConn) Write(p []byte) (int, error)   { return q.st.Write(p) }
func (q quicConn) SetDeadline(t time.Time) error { return q.st.SetDeadline(t) }
func (q quicConn) CloseWrite() error             { return q.st.Close() }

// Close ends the stream's writing side; on the client, which reads to
// io.EOF first, it also closes the connection. The server leaves the
// connection to the client, since closing it at once could drop the
// stream's FIN still queued.
func (q quicConn) Close() error {
	if !q.client {
		return q.st.Close()
	}
	return q.c.CloseWithError(0, "")
}
