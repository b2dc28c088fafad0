package rudp

import (
	"context"
	"fmt"
	"net"
	"runtime"

	"github.com/rudpkit/rudp/internal/socket"
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
	// Sockets is how many UDP sockets the listener binds to its address,
	// each read by a goroutine of its own, so that receiving from many
	// peers is spread over cores and over as many kernel receive buffers
	// (4 MiB each, where the kernel grants it): 0
	// means twice runtime.GOMAXPROCS(0) when the listener is made, at
	// least 4 and at most MaxListenSockets; 1 means one socket. On two
	// cores, 1,000 streams sending at once overflowed the buffers of two
	// sockets (300-1,700 datagrams dropped per run, each one resent, a
	// dropped handshake 600 ms later) and none of four.
	// Beyond one, on Linux, the sockets form a SO_REUSEPORT group, in
	// which the kernel hands every datagram from one remote address and
	// port to the same socket, so that each peer's datagrams are read in
	// order by one goroutine. Elsewhere, or if the kernel refuses the
	// group, the listener has one socket, and Config.Logger says why at
	// Debug.
	//
	// The first socket binds the address alone, so that a port in use
	// fails as with one socket, and then opens the group: from then on
	// another socket of the same user that sets SO_REUSEPORT could bind
	// the port and take a share of the peers. Set Sockets to 1 where
	// other programs of the same user must not share the port.
	Sockets int
}

// MaxListenSockets bounds ListenConfig.Sockets, in sockets; a larger
// value fails the listen.
const MaxListenSockets = 64

// Listen listens for rudp streams on a new UDP socket bound to address.
// network is "udp", "udp4" or "udp6", or "tcp", "tcp4", "tcp6" taken as
// those. ctx bounds the bind only. The listener is a *Listener.
func (lc *ListenConfig) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	return lc.ListenStreams(ctx, network, address)
}

// ListenStreams is Listen returning the *Listener itself.
func (lc *ListenConfig) ListenStreams(ctx context.Context, network, address string) (*Listener, error) {
	cfg, pcs, err := lc.listenSockets(ctx, streamNetwork(network), address)
	if err != nil {
		return nil, err
	}
	return &Listener{listener: newListener(pcs, cfg, true, newConn)}, nil
}

// ListenMessages listens for message conns on a new UDP socket bound to
// address. network is "udp", "udp4" or "udp6". ctx bounds the bind only.
func (lc *ListenConfig) ListenMessages(ctx context.Context, network, address string) (*MessageListener, error) {
	cfg, pcs, err := lc.listenSockets(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &MessageListener{listener: newListener(pcs, cfg, false, newMessageConn)}, nil
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

// listenSockets resolves lc.Config and binds the listener's sockets to
// address (see ListenConfig.Sockets).
func (lc *ListenConfig) listenSockets(ctx context.Context, network, address string) (*Config, []net.PacketConn, error) {
	cfg, err := lc.Config.resolved()
	if err == nil {
		err = checkNetwork(network)
		if lc.Sockets < 0 || lc.Sockets > MaxListenSockets {
			err = fmt.Errorf("rudp: ListenConfig.Sockets %d not in [0, %d]", lc.Sockets, MaxListenSockets)
		}
	}
	if err != nil {
		return nil, nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	n := lc.Sockets
	if n == 0 {
		n = min(max(2*runtime.GOMAXPROCS(0), 4), MaxListenSockets)
	}
	pcs, err := socket.BindGroup(ctx, network, address, n, cfg.Logger)
	if err != nil {
		return nil, nil, err
	}
	return cfg, pcs, nil
}

// serve builds a listener over a caller's pc.
func serve[T acceptable](pc net.PacketConn, config *Config, stream bool,
	mk func(*Config, net.Addr, *acceptQueue[T]) T) listener[T] {
	cfg, err := config.resolved()
	if err != nil {
		return listener[T]{ep: newEndpoint(pc, false, nil), cfgErr: err}
	}
	return newListener([]net.PacketConn{pc}, cfg, stream, mk)
}

// newListener builds a listener of conns of kind T over pcs (one socket,
// or a SO_REUSEPORT group: see socket.Endpoint.Spread), as the one
// listener of a Transport of its own whose sockets it owns: closing it
// releases them, and they close once its conns have ended too.
func newListener[T acceptable](pcs []net.PacketConn, cfg *Config, stream bool,
	mk func(*Config, net.Addr, *acceptQueue[T]) T) listener[T] {
	t := &Transport{Conn: pcs[0], cfg: cfg, group: pcs[1:]}
	l, err := listenTransport(t, stream, mk)
	if err != nil { // cfg was resolved: only a closed Transport fails, and t is new
		return listener[T]{ep: t.ep, cfgErr: err}
	}
	l.shared = false
	return l
}
