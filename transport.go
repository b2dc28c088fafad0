package rudp

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rudpkit/rudp/internal/socket"
)

// Transport is one net.PacketConn (a UDP socket, usually unconnected)
// shared by every conn a program opens on it: on one Transport a program
// can at the same time accept streams (Listen), accept message conns
// (ListenMessages), and dial streams and message conns (Dial,
// DialMessages) to any number of peers, each peer's conn an association
// keyed by its address. Dialing from the port a program listens on is what
// peer-to-peer programs need: the port a peer or a rendezvous server has
// seen (through a NAT, the public address it mapped) is the one the
// program's conns all use, so that each dial also opens the NAT's
// mapping and, with endpoint-independent mapping, the address learnt
// elsewhere is the one other peers reach (UDP hole punching).
//
// A Transport holds one conn per remote address: a peer that dialed this
// end, and this end's dial to that peer, share one conn (see Dial).
//
// One Config (nil: defaults) applies to every conn; its Protocol is the
// Transport's. Listener-side hardening (Backlog, the amplification limit
// towards unvalidated addresses, challenges of spoofable restarts and
// closes) holds for the listeners of a Transport as for those of Listen.
//
// A Transport starts on first use. Closing it stops its listeners, closes
// every conn on it (each delivering what was written within its Linger)
// and closes the PacketConn once all have ended. A conn's Close leaves the
// others alone.
type Transport struct {
	// Conn is the socket. The Transport owns it from its first use on.
	Conn net.PacketConn
	// Config configures the Transport and its conns; nil means defaults.
	Config *Config

	once sync.Once
	err  error   // an invalid Config, or a Transport without Conn
	cfg  *Config // Config resolved
	ep   *socket.Endpoint
	// group is the rest of a listener's SO_REUSEPORT group (see
	// ListenConfig.Sockets); Conn is its first socket.
	group []net.PacketConn

	mu        sync.Mutex
	streams   newPeerFn    // the stream listener's, nil without one
	messages  newPeerFn    // the message listener's, nil without one
	listeners [2]io.Closer // the latest stream listener, and message listener
	closed    bool
}

// init starts the Transport on first use.
func (t *Transport) init() error {
	t.once.Do(func() {
		if t.Conn == nil {
			t.err = fmt.Errorf("rudp: Transport.Conn is nil")
			return
		}
		if t.cfg == nil { // else resolved already (newListener)
			t.cfg, t.err = t.Config.resolved()
			if t.err != nil {
				return
			}
		}
		t.ep = newEndpoint(t.Conn, isConnected(t.Conn), t.cfg.Logger)
		t.ep.SetNewPeer(t.newPeer)
		t.ep.Spread(t.group)
		t.ep.Serve()
	})
	if t.err != nil {
		return t.err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errClosed
	}
	return nil
}

// newPeer hands a datagram from an address without an association to the
// listener of its kind: with both listeners, the stream listener's if it
// carries a stream's seal, else the message listener's. With one listener
// the datagram goes to it unchecked, which checks it (one seal check per
// datagram, as a listener of its own makes).
func (t *Transport) newPeer(p []byte, from net.Addr, now time.Time) {
	t.mu.Lock()
	streams, messages := t.streams, t.messages
	t.mu.Unlock()
	switch {
	case streams != nil && messages != nil:
		if _, sealed := socket.Unseal(p, 0); !sealed { // an opening carries the plain seal
			streams = nil
		}
	case streams == nil && messages == nil:
		t.ep.DropUnknown()
		return
	}
	if streams != nil {
		streams(p, from, now)
		return
	}
	messages(p, from, now)
}

// Listen starts accepting streams on the Transport; at most one stream
// Listener runs at a time. Closing the Listener stops accepting streams
// and leaves the Transport and its other conns alone. It fails with an
// error wrapping net.ErrClosed after Close, or for an invalid Config.
func (t *Transport) Listen() (*Listener, error) {
	l, err := listenTransport(t, true, newConn)
	if err != nil {
		return nil, err
	}
	return &Listener{listener: l}, nil
}

// ListenMessages starts accepting message conns on the Transport; at most
// one MessageListener runs at a time. Errors and Close are as for Listen.
func (t *Transport) ListenMessages() (*MessageListener, error) {
	l, err := listenTransport(t, false, newMessageConn)
	if err != nil {
		return nil, err
	}
	return &MessageListener{listener: l}, nil
}

// listenTransport starts a listener of conns of kind T on t: its stream
// listener (stream) or its message listener.
func listenTransport[T acceptable](t *Transport, stream bool,
	mk func(*Config, net.Addr, *acceptQueue[T]) T) (listener[T], error) {
	if err := t.init(); err != nil {
		return listener[T]{}, &net.OpError{Op: "listen", Net: "rudp", Addr: t.Addr(), Err: err}
	}
	slot, kind := &t.streams, 0
	if !stream {
		slot, kind = &t.messages, 1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if *slot != nil {
		return listener[T]{}, &net.OpError{Op: "listen", Net: "rudp", Addr: t.Addr(),
			Err: fmt.Errorf("rudp: the Transport has a listener of this kind already")}
	}
	l, f := listenOn(t.ep, t.cfg, stream, mk)
	*slot = f
	l.detach = func() {
		t.mu.Lock()
		*slot = nil
		t.mu.Unlock()
	}
	l.shared = true
	t.listeners[kind] = &l
	return l, nil
}

// Dial opens a stream to the rudp peer at raddr (a Transport listening for
// streams, or a Listener) and completes the handshake before ctx ends and
// within Config.HandshakeTimeout. If the peer dialed this end first and
// Accept has not returned its conn yet, Dial returns that conn instead;
// if both dial at once, one end becomes the server of the handshake
// (simultaneous open, see crossing in the source and the README's
// Transport section). Errors are as for Dialer.DialContext, and one if
// raddr already has a conn on the Transport that Accept returned.
func (t *Transport) Dial(ctx context.Context, raddr net.Addr) (*Conn, error) {
	return dialTransport(ctx, t, raddr, true, newConn)
}

// DialMessages opens a message conn to raddr and completes the protocol's
// handshake, as Dial does for streams.
func (t *Transport) DialMessages(ctx context.Context, raddr net.Addr) (*MessageConn, error) {
	return dialTransport(ctx, t, raddr, false, newMessageConn)
}

// dialTransport runs a conn of kind T to raddr on t through its
// handshake.
func dialTransport[T acceptable](ctx context.Context, t *Transport, raddr net.Addr, stream bool,
	mk func(*Config, net.Addr, *acceptQueue[T]) T) (T, error) {
	var zero T
	if err := t.init(); err != nil {
		return zero, &net.OpError{Op: "dial", Net: "rudp", Addr: raddr, Err: err}
	}
	if c, ok := adopt[T](t, raddr); ok {
		return handshake(ctx, c)
	}
	c := mk(t.cfg, raddr, nil)
	b := c.base()
	b.viaTransport = true
	tr := t.cfg.newTracer(t.Conn.LocalAddr(), raddr, stream, true)
	eng, err := t.cfg.newEngine(time.Now(), raddr, tr, stream, false)
	if err != nil {
		tr.closed(time.Now(), err)
		return zero, &net.OpError{Op: "dial", Net: "rudp", Addr: raddr, Err: err}
	}
	c.attach(t.ep, eng, tr)
	if t.cfg.proto.OpeningID != nil {
		b.a.cross = &crossing{cfg: t.cfg, stream: stream}
	}
	if !b.begin(time.Now()) {
		if c, ok := adopt[T](t, raddr); ok { // the listener took the peer's opening meanwhile
			tr.closed(time.Now(), nil)
			return handshake(ctx, c)
		}
		err := fmt.Errorf("rudp: %v has a conn on this Transport already", raddr)
		select {
		case <-t.ep.Done():
			err = errClosed
		default:
		}
		tr.closed(time.Now(), err)
		return zero, &net.OpError{Op: "dial", Net: "rudp", Addr: raddr, Err: err}
	}
	return handshake(ctx, c)
}

// adopt returns the conn of kind T that t's listener made for raddr and
// Accept has not returned: raddr dialed this end first, and a dial to it
// takes that conn rather than open a second association.
func adopt[T acceptable](t *Transport, raddr net.Addr) (T, bool) {
	var zero T
	a, ok := t.ep.Peer(socket.KeyOf(raddr)).(*assoc)
	if !ok {
		return zero, false
	}
	c, ok := a.up.(T)
	if !ok || !c.claim() {
		return zero, false
	}
	return c, true
}

// Addr returns the Transport's local address, nil without Conn.
func (t *Transport) Addr() net.Addr {
	if t.Conn == nil {
		return nil
	}
	return t.Conn.LocalAddr()
}

// Close stops the Transport's listeners (as their Close does), closes
// every conn on it, and returns once each has ended, within its Linger,
// and the PacketConn is closed. It returns an error wrapping
// net.ErrClosed if already closed.
func (t *Transport) Close() error {
	if err := t.init(); err != nil {
		if t.ep == nil {
			if t.Conn != nil {
				return t.Conn.Close()
			}
			return err
		}
		return &net.OpError{Op: "close", Net: "rudp", Addr: t.Addr(), Err: err}
	}
	t.mu.Lock()
	t.closed = true
	listeners := t.listeners
	t.mu.Unlock()
	for _, l := range listeners {
		if l != nil {
			_ = l.Close() // closed already by its owner: nothing more to do
		}
	}
	t.ep.SetNewPeer(nil)
	for _, p := range t.ep.Peers() {
		if c, ok := p.(*assoc).up.(io.Closer); ok {
			_ = c.Close()
		}
	}
	t.ep.Release()
	<-t.ep.Done()
	return nil
}
