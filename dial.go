package rudp

import (
	"context"
	"net"
	"time"
)

// Dial connects to the rudp listener at address over UDP with the default
// Config, and completes the handshake. network is "udp", "udp4" or "udp6";
// "tcp", "tcp4" and "tcp6" are taken as their UDP counterparts, since a
// rudp stream has the byte-stream semantics a TCP caller expects, so that
// code written for TCP (net/http's Transport.DialContext, for one) can pass
// its own network name. It returns a *Conn.
func Dial(network, address string) (net.Conn, error) {
	var d Dialer
	return d.Dial(network, address)
}

// Dialer holds options for dialing rudp streams. The zero value dials with
// the default Config from an ephemeral port.
type Dialer struct {
	// Config configures the conn; nil means defaults.
	Config *Config
	// LocalAddr is the local UDP address to bind; nil picks one.
	LocalAddr net.Addr
}

// Dial is DialContext with context.Background.
func (d *Dialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

// DialContext connects to address and completes the handshake before
// ctx ends and within Config.HandshakeTimeout. network is as for Dial:
// "udp", "udp4", "udp6", or "tcp", "tcp4", "tcp6" taken as those. It
// returns a *Conn, or an error: a resolution or socket error, connection
// refused (the peer's port answered with ICMP port unreachable),
// ErrHandshakeTimeout, ErrProtocol, or ctx's error.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := d.DialStream(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DialStream is DialContext returning the *Conn itself.
func (d *Dialer) DialStream(ctx context.Context, network, address string) (*Conn, error) {
	return dial(ctx, d.Config, d.LocalAddr, streamNetwork(network), address, true, newConn)
}

// dial opens a connected socket to address and runs a conn of kind T on it
// through its handshake.
func dial[T acceptable](ctx context.Context, config *Config, local net.Addr, network, address string,
	stream bool, mk func(*Config, net.Addr, *acceptQueue[T]) T) (T, error) {
	var zero T
	cfg, pc, raddr, err := dialSocket(ctx, config, local, network, address)
	if err != nil {
		return zero, err
	}
	c := mk(cfg, raddr, nil)
	b := c.base()
	tr := cfg.newTracer(pc.LocalAddr(), raddr, stream, true)
	eng, err := cfg.newEngine(time.Now(), raddr, tr, stream, false)
	if err != nil {
		tr.closed(time.Now(), err)
		_ = pc.Close()
		return zero, err
	}
	c.attach(newEndpoint(pc, true, cfg.Logger), eng, tr)
	runClient(b)
	return handshake(ctx, c)
}

// handshake completes the handshake of c, a dialed conn, or abandons it
// with the error.
func handshake[T acceptable](ctx context.Context, c T) (T, error) {
	if err := c.base().Handshake(ctx); err != nil {
		c.base().a.abandon(err)
		var zero T
		return zero, err
	}
	return c, nil
}

// dialSocket resolves the address and opens a connected UDP socket, so
// that an unreachable port is reported at once.
func dialSocket(ctx context.Context, config *Config, local net.Addr, network, address string) (*Config, *net.UDPConn, *net.UDPAddr, error) {
	cfg, err := config.resolved()
	if err == nil {
		err = checkNetwork(network)
	}
	if err != nil {
		return nil, nil, nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	raddr, err := net.ResolveUDPAddr(network, address)
	if err != nil {
		return nil, nil, nil, err
	}
	var laddr *net.UDPAddr
	if local != nil {
		ua, ok := local.(*net.UDPAddr)
		if !ok {
			return nil, nil, nil, &net.OpError{Op: "dial", Net: network, Addr: raddr, Err: net.InvalidAddrError("LocalAddr must be a *net.UDPAddr")}
		}
		laddr = ua
	}
	pc, err := net.DialUDP(network, laddr, raddr)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, pc, raddr, nil
}

// isConnected reports whether pc is a UDP socket connected to its peer,
// which reports the peer's ICMP errors and takes no address on send.
func isConnected(pc net.PacketConn) bool {
	uc, ok := pc.(*net.UDPConn)
	return ok && uc.RemoteAddr() != nil
}

// runClient starts a client association on its endpoint, which then lives
// as long as the association. If the endpoint has already stopped (the
// PacketConn was closed), the conn ends at once with net.ErrClosed rather
// than waiting for a handshake that cannot run.
func runClient(b *connBase) {
	b.a.ep.Serve()
	if !b.begin(time.Now()) {
		a := b.a
		a.mu.Lock()
		a.over = true // never registered: nothing for endLocked to undo
		a.up.ended(errClosed)
		a.notifyLocked()
		a.mu.Unlock()
	}
	b.a.ep.Release()
}

// Client returns a rudp stream conn to raddr over pc, like tls.Client: the
// handshake runs on first use (Read, Write or Handshake). The conn owns pc
// from then on and closes it when the association ends. Every datagram on
// pc that is not from raddr is dropped. An invalid config is reported by
// the first use. A *net.UDPConn connected to raddr (from net.DialUDP) is
// used as one: an ICMP port unreachable from the peer then fails the
// handshake at once with an error matching syscall.ECONNREFUSED, as Dial
// does, instead of waiting for Config.HandshakeTimeout. The kernel
// buffers of a *net.UDPConn are raised to 4 MiB each (SO_RCVBUF and
// SO_SNDBUF, which the kernel caps at its maximum), so that a window's
// burst is not dropped, as quic-go does with the sockets it is given.
func Client(pc net.PacketConn, raddr net.Addr, config *Config) *Conn {
	return client(pc, raddr, config, true, newConn)
}

// client builds a conn of kind T over pc that starts on first use.
func client[T acceptable](pc net.PacketConn, raddr net.Addr, config *Config,
	stream bool, mk func(*Config, net.Addr, *acceptQueue[T]) T) T {
	cfg, cfgErr := config.resolved()
	if cfgErr != nil {
		cfg, _ = (*Config)(nil).resolved()
	}
	c := mk(cfg, raddr, nil)
	b := c.base()
	b.closeFn = func() { _ = pc.Close() }
	b.startFn = func() error {
		if cfgErr != nil {
			return cfgErr
		}
		tr := cfg.newTracer(pc.LocalAddr(), raddr, stream, true)
		eng, err := cfg.newEngine(time.Now(), raddr, tr, stream, false)
		if err != nil {
			tr.closed(time.Now(), err)
			return err
		}
		c.attach(newEndpoint(pc, isConnected(pc), cfg.Logger), eng, tr)
		runClient(b)
		return nil
	}
	return c
}

// streamNetwork maps the TCP network names to the UDP ones, for streams:
// a rudp stream stands in for a TCP connection. Message conns, which are
// not byte streams, take the UDP names only.
func streamNetwork(network string) string {
	switch network {
	case "tcp", "tcp4", "tcp6":
		return "udp" + network[3:]
	}
	return network
}

// checkNetwork accepts the UDP network names.
func checkNetwork(network string) error {
	switch network {
	case "udp", "udp4", "udp6":
		return nil
	}
	return net.UnknownNetworkError(network)
}

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
