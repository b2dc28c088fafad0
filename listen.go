package rudp

import (
	"context"
	"net"
)

// Listen listens for rudp streams on the UDP address address, with the
// default Config. network is "udp", "udp4" or "udp6"; as for Dial, "tcp",
// "tcp4" and "tcp6" are taken as those.
func Listen(network, address string) (net.Listener, error) {
	var lc ListenConfig
	return lc.Listen(context.Background(), network, address)
}

// ListenConfig configures a listener.
type ListenConfig struct {
	// Config configures the listener and its conns; nil means defaults.
	Config *Config
}

// Listen listens for rudp streams on a new UDP socket bound to address.
// network is "udp", "udp4" or "udp6", or "tcp", "tcp4", "tcp6" taken as
// those. ctx bounds the bind only. The listener is a *Listener.
func (lc *ListenConfig) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	return lc.ListenStreams(ctx, network, address)
}

// ListenStreams is Listen returning the *Listener itself.
func (lc *ListenConfig) ListenStreams(ctx context.Context, network, address string) (*Listener, error) {
	cfg, pc, err := listenSocket(ctx, lc.Config, streamNetwork(network), address)
	if err != nil {
		return nil, err
	}
	return &Listener{listener: newListener(pc, cfg, true, newConn)}, nil
}

// ListenMessages listens for message conns on a new UDP socket bound to
// address. network is "udp", "udp4" or "udp6". ctx bounds the bind only.
func (lc *ListenConfig) ListenMessages(ctx context.Context, network, address string) (*MessageListener, error) {
	cfg, pc, err := listenSocket(ctx, lc.Config, network, address)
	if err != nil {
		return nil, err
	}
	return &MessageListener{listener: newListener(pc, cfg, false, newMessageConn)}, nil
}

// Server returns a Listener that accepts rudp streams arriving on pc. The
// Listener owns pc from then on: pc is closed once the Listener and all the
// conns it accepted are closed. An invalid config makes Accept fail. The
// kernel buffers of a *net.UDPConn are raised to 4 MiB each (SO_RCVBUF
// and SO_SNDBUF, capped by the kernel), as with Client.
func Server(pc net.PacketConn, config *Config) *Listener {
	return &Listener{listener: serve(pc, config, true, newConn)}
}

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

func listenSocket(ctx context.Context, config *Config, network, address string) (*Config, net.PacketConn, error) {
	cfg, err := config.resolved()
	if err == nil {
		err = checkNetwork(network)
	}
	if err != nil {
		return nil, nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	var nlc net.ListenConfig
	pc, err := nlc.ListenPacket(ctx, network, address)
	if err != nil {
		return nil, nil, err
	}
	return cfg, pc, nil
}

// serve builds a listener over a caller's pc.
func serve[T acceptable](pc net.PacketConn, config *Config, stream bool,
	mk func(*Config, net.Addr, *acceptQueue[T]) T) listener[T] {
	cfg, err := config.resolved()
	if err != nil {
		return listener[T]{ep: newEndpoint(pc, false, nil), cfgErr: err}
	}
	return newListener(pc, cfg, stream, mk)
}

// newListener builds a listener of conns of kind T over pc, as the one
// listener of a Transport of its own whose socket it owns: closing it
// releases the socket, which closes once its conns have ended too.
func newListener[T acceptable](pc net.PacketConn, cfg *Config, stream bool,
	mk func(*Config, net.Addr, *acceptQueue[T]) T) listener[T] {
	t := &Transport{Conn: pc, cfg: cfg}
	l, err := listenTransport(t, stream, mk)
	if err != nil { // cfg was resolved: only a closed Transport fails, and t is new
		return listener[T]{ep: t.ep, cfgErr: err}
	}
	l.shared = false
	return l
}
