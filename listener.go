package rudp

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/socket"
)

// listener is what Listener and MessageListener share: one endpoint whose
// new peers become conns of kind T.
type listener[T acceptable] struct {
	ep     *socket.Endpoint
	q      *acceptQueue[T]
	cfgErr error
	// detach stops the endpoint's new peers reaching the listener; the
	// listener of a Transport leaves the endpoint to it (shared), one of
	// its own releases it.
	detach func()
	shared bool
}

// Listener accepts rudp stream conns on one PacketConn. It is a
// net.Listener whose Accept returns *Conn values.
//
// A new peer's first datagram starts a handshake; the conn is queued for
// Accept when the handshake completes. New peers in their handshake plus
// conns waiting for Accept are bounded by Config.Backlog; datagrams from
// further new peers are dropped until there is room. Closing the Listener
// resets the conns never accepted and drops those still in their
// handshake; accepted conns live on, and the PacketConn is closed when the
// last of them ends.
type Listener struct{ listener listener[*Conn] }

var _ net.Listener = (*Listener)(nil)

// Accept waits for the next conn whose handshake has completed and returns
// it as a *Conn. After Close it returns an error wrapping net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.listener.accept(context.Background())
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AcceptContext waits for the next conn whose handshake has completed, or
// for ctx to end, when it returns ctx.Err(). After Close it returns an
// error wrapping net.ErrClosed.
func (l *Listener) AcceptContext(ctx context.Context) (*Conn, error) { return l.listener.accept(ctx) }

// Close stops accepting, resets the conns never accepted and drops the new
// peers still in their handshake. Conns already accepted are unaffected.
// It returns an error wrapping net.ErrClosed if already closed.
func (l *Listener) Close() error { return l.listener.Close() }

// Stats returns the counters of datagrams that reached no conn.
func (l *Listener) Stats() ListenerStats { return l.listener.Stats() }

// Addr returns the listener's local address.
func (l *Listener) Addr() net.Addr { return l.listener.Addr() }

// newPeerFn takes a datagram from an address without an association.
type newPeerFn = func(p []byte, from net.Addr, now time.Time)

// listenOn builds a listener of conns of kind T on ep, and the function
// through which the endpoint's new peers reach it; the caller sets its
// detach.
func listenOn[T acceptable](ep *socket.Endpoint, cfg *Config, stream bool,
	mk func(*Config, net.Addr, *acceptQueue[T]) T) (listener[T], newPeerFn) {
	if cfg.proto.NewListener != nil && !stream {
		c := *cfg
		c.roster = cfg.proto.NewListener() // shared by the listener's conns
		cfg = &c
	}
	q := newAcceptQueue[T](ep, cfg.Backlog)
	f := newPeerFunc(q, cfg, stream, func(from net.Addr, eng engine.Engine, tr *connTrace, in int) T {
		c := mk(cfg, from, q)
		c.attach(ep, eng, tr)
		c.base().a.limit(in)
		return c
	})
	return listener[T]{ep: ep, q: q}, f
}

func (l *listener[T]) accept(ctx context.Context) (T, error) {
	if l.cfgErr != nil {
		var zero T
		return zero, &net.OpError{Op: "accept", Net: "rudp", Err: l.cfgErr}
	}
	return l.q.accept(ctx)
}

// Close implements Listener.Close and MessageListener.Close.
func (l *listener[T]) Close() error {
	if l.cfgErr != nil {
		return l.ep.PacketConn().Close()
	}
	unaccepted, halfOpen, ok := l.q.close()
	if !ok {
		return &net.OpError{Op: "close", Net: "rudp", Addr: l.Addr(), Err: errClosed}
	}
	l.detach()
	for _, c := range unaccepted {
		c.base().expire(resetRefused, ErrReset, func() bool { return true })
	}
	for _, c := range halfOpen {
		c.base().evict() // could never be accepted now; silently, as it may be spoofed
	}
	if !l.shared {
		l.ep.Release()
	}
	return nil
}

// Stats implements Listener.Stats and MessageListener.Stats.
func (l *listener[T]) Stats() ListenerStats {
	if l.cfgErr != nil {
		return ListenerStats{}
	}
	backlog, evicted := l.q.counts()
	unknown, oversize := l.ep.Counts()
	return ListenerStats{
		BacklogDrops: backlog,
		Evicted:      evicted,
		UnknownDrops: unknown,
		Oversize:     oversize,
	}
}

// Addr implements Listener.Addr and MessageListener.Addr.
func (l *listener[T]) Addr() net.Addr { return l.ep.PacketConn().LocalAddr() }

// newPeerFunc builds the endpoint callback that admits a datagram from an
// unknown address as a new peer: it checks the seal of a stream's datagram
// and that the datagram is an opening, takes a backlog slot (evicting the
// oldest half-open peer if need be), builds an engine and hands it the datagram; start registers
// the new conn.
func newPeerFunc[T acceptable](q *acceptQueue[T], cfg *Config, stream bool,
	mk func(from net.Addr, eng engine.Engine, tr *connTrace, in int) T) func([]byte, net.Addr, time.Time) {
	return func(p []byte, from net.Addr, now time.Time) {
		n := len(p)
		ok := true
		if stream {
			p, ok = socket.Unseal(p, 0) // an opening carries the plain seal
		}
		if !ok || !cfg.proto.IsOpening(p, cfg.opts) {
			cfg.Logger.Debug("rudp: datagram from an unknown address dropped: not an opening of the protocol",
				"peer", from, "protocol", cfg.Protocol, "size", n)
			q.ep.DropUnknown()
			return
		}
		victim, evict, ok := q.admit()
		if evict {
			cfg.Logger.Debug("rudp: oldest half-open peer evicted for a new one", "evicted", victim.RemoteAddr(), "peer", from)
			victim.base().evict()
		}
		if !ok {
			cfg.Logger.Debug("rudp: backlog full of peers waiting for Accept, datagram dropped", "peer", from)
			return
		}
		tr := cfg.newTracer(q.ep.PacketConn().LocalAddr(), from, stream, false)
		eng, err := cfg.newEngine(now, from, tr, stream, true)
		if err == nil {
			err = eng.HandleDatagram(now, p)
			tr.input(now, p, err)
			if err != nil && cfg.roster != nil {
				cfg.roster.Drop(eng)
			}
		}
		if err != nil {
			tr.closed(now, err)
			cfg.Logger.Debug("rudp: handshake refused", "peer", from, "err", err)
			q.release()
			q.ep.DropUnknown()
			if errors.Is(err, engine.ErrIncompatible) {
				sendUnsolicited(q.ep, cfg.refusal(stream), n, from)
			}
			return
		}
		c := mk(from, eng, tr, n)
		q.track(c) // before begin: a peer may be ready at once
		if !c.base().begin(now) {
			q.forget(c)
		}
	}
}

// sendUnsolicited sends bufs to to, an address without an association, in
// answer to one datagram of in bytes. The address is not validated, so
// nothing goes out if bufs hold more than amplification times in.
func sendUnsolicited(ep *socket.Endpoint, bufs [][]byte, in int, to net.Addr) {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	if n == 0 || n > amplification*in {
		return
	}
	s := sendPool.Get().(*sendBufs)
	defer sendPool.Put(s)
	ep.Socket().Send(&s.scratch, bufs, to)
}

// refusal returns the datagrams with which a listener answers an opening
// whose parameters it cannot accept, holding no state for the peer, so
// that the peer learns at once why (see engine.Protocol.Refusal); nil
// where the protocol's opening carries no parameters.
func (c *Config) refusal(stream bool) [][]byte {
	if c.proto.Refusal == nil {
		return nil
	}
	bufs := c.proto.Refusal(c.opts)
	if stream {
		for i, b := range bufs {
			bufs[i] = socket.Seal(b, 0)
		}
	}
	return bufs
}

// MessageListener accepts message conns on one PacketConn: each new peer
// that completes the protocol's handshake becomes a *MessageConn. Backlog
// and close behave as for Listener.
type MessageListener struct{ listener listener[*MessageConn] }

var _ net.Listener = (*MessageListener)(nil)

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
