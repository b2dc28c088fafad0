package rudp

import (
	"context"
	"net"
)

// MessageListener accepts message conns on one PacketConn: each new peer
// that completes the protocol's handshake becomes a *MessageConn. Backlog
// and close behave as for Listener.
type MessageListener struct{ listener listener[*MessageConn] }

var _ net.Listener = (*MessageListener)(nil)

// ListenMessages listens for message conns on a new UDP socket bound to
// address. network is "udp", "udp4" or "udp6"; config nil means defaults.
func ListenMessages(network, address string, config *Config) (*MessageListener, error) {
	lc := ListenConfig{Config: config}
	return lc.ListenMessages(context.Background(), network, address)
}

// ServerMessages returns a MessageListener for the message conns arriving on
// pc, which it owns from then on (closed once the listener and all its
// conns are closed). An invalid config makes Accept fail. A *net.UDPConn's
// kernel buffers are raised to 4 MiB each, as with Client.
func ServerMessages(pc net.PacketConn, config *Config) *MessageListener {
	return &MessageListener{listener: serve(pc, config, false, newMessageConn)}
}

// Accept waits for the next message conn and returns it as a net.Conn
// holding a *MessageConn. After Close it returns an error wrapping
// net.ErrClosed.
func (l *MessageListener) Accept() (net.Conn, error) {
	c, err := l.listener.accept(context.Background())
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AcceptMessages is Accept returning the *MessageConn itself.
func (l *MessageListener) AcceptMessages() (*MessageConn, error) {
	return l.listener.accept(context.Background())
}

// AcceptContext is AcceptMessages until ctx ends, when it returns
// ctx.Err().
func (l *MessageListener) AcceptContext(ctx context.Context) (*MessageConn, error) {
	return l.listener.accept(ctx)
}

// Close stops accepting, resets the conns never accepted and drops the new
// peers still in their handshake. Conns already accepted are unaffected.
// It returns an error wrapping net.ErrClosed if already closed.
func (l *MessageListener) Close() error { return l.listener.Close() }

// Stats returns the counters of datagrams that reached no conn.
func (l *MessageListener) Stats() ListenerStats { return l.listener.Stats() }

// Addr returns the listener's local address.
func (l *MessageListener) Addr() net.Addr { return l.listener.Addr() }

// DialMessages opens a message conn to address over UDP and completes the
// protocol's handshake before ctx ends and within Config.HandshakeTimeout.
// network is "udp", "udp4" or "udp6"; config nil means defaults. Errors
// are as for Dialer.DialContext.
func DialMessages(ctx context.Context, network, address string, config *Config) (*MessageConn, error) {
	d := MessageDialer{Config: config}
	return d.DialContext(ctx, network, address)
}

// MessageDialer holds options for dialing message conns, as Dialer does
// for streams. The zero value dials with the default Config from an
// ephemeral port.
type MessageDialer struct {
	// Config configures the conn; nil means defaults.
	Config *Config
	// LocalAddr is the local UDP address to bind; nil picks one.
	LocalAddr net.Addr
}

// DialContext opens a message conn to address over UDP ("udp", "udp4" or
// "udp6") and completes the protocol's handshake before ctx ends and
// within Config.HandshakeTimeout. Errors are as for Dialer.DialContext.
func (d *MessageDialer) DialContext(ctx context.Context, network, address string) (*MessageConn, error) {
	return dial(ctx, d.Config, d.LocalAddr, network, address, false, newMessageConn)
}

// ClientMessages returns a message conn to raddr over pc; the handshake runs
// on first use. The conn owns pc and closes it when the association ends;
// datagrams on pc from other addresses are dropped. An invalid config is
// reported by the first use. A *net.UDPConn connected to raddr is used as
// one, as by Client: a refused port fails at once. A *net.UDPConn's kernel
// buffers are raised to 4 MiB each, as with Client.
func ClientMessages(pc net.PacketConn, raddr net.Addr, config *Config) *MessageConn {
	return client(pc, raddr, config, false, newMessageConn)
}
