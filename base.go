package rudp

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/transport/v3/deadline"
	"github.com/rudpkit/rudp/internal/engine"
)

// kind is what differs between a stream Conn and a MessageConn in the
// life cycle connBase runs. Its methods are called with a.mu held.
type kind interface {
	upper
	// failure is the error to report once the conn has failed or ended.
	failure() error
	// abortLocked tells the peer the conn is being abandoned, if the
	// protocol can say so.
	abortLocked(code uint8)
	// names returns what the conn is ("stream") and what a listener of
	// the other kind accepts ("message conns (ListenMessages)"), for
	// errors.
	names() (what, other string)
}

// connBase is the part of Conn and MessageConn that is not about data: the
// start on first use, the handshake wait, deadlines, addresses, close
// timers and the association's end.
type connBase struct {
	cfg   *Config
	raddr net.Addr
	k     kind

	startOnce sync.Once
	startFn   func() error // client conns start on first use
	closeFn   func()       // closes the PacketConn of a client conn never used
	startErr  error
	// viaTransport: dialed on a Transport, maybe to an address learnt
	// from a third party (see handshakeTimeout).
	viaTransport bool
	openedF      atomic.Bool

	a      *assoc
	rd, wd lazyDeadline
	done   atomic.Pointer[chan struct{}] // Done's channel, made by Done; closedChan once the association has ended

	// guarded by a.mu
	opened     bool // handshake complete
	closed     bool // Close was called
	engClosing bool // the engine's graceful close has begun
	over       bool // the association has ended
	err        error
	timers     [2]*time.Timer // handshake, linger
}

func newBase(cfg *Config, raddr net.Addr, k kind) connBase {
	return connBase{cfg: cfg, raddr: raddr, k: k}
}

// closedChan is the channel Done returns for a conn that ended before
// Done was first called.
var closedChan = func() *chan struct{} {
	c := make(chan struct{})
	close(c)
	return &c
}()

// finish closes Done's channel, if Done made one, and makes it closedChan
// for later calls. Call it once, when the conn has ended.
func (b *connBase) finish() {
	if p := b.done.Swap(closedChan); p != nil && p != closedChan {
		close(*p)
	}
}

// lazyDeadline is a deadline.Deadline made when set to a time and
// dropped when cleared, so that a conn with no deadline holds none (a
// struct, a channel and a timer: an idle stream keeps its conn for as
// long as it lasts).
type lazyDeadline struct {
	p atomic.Pointer[deadline.Deadline]
}

// set sets the deadline to t; a zero t drops it. It reports whether it
// made one: calls waiting until then watched none. A call watching a
// dropped one watches a channel that never fires.
func (l *lazyDeadline) set(t time.Time) (made bool) {
	if t.IsZero() {
		if d := l.p.Swap(nil); d != nil {
			d.Set(t) // stops its timer
		}
		return false
	}
	for {
		if d := l.p.Load(); d != nil {
			d.Set(t)
			return false
		}
		if d := deadline.New(); l.p.CompareAndSwap(nil, d) {
			d.Set(t)
			return true
		}
	}
}

// done returns a channel closed once the deadline has passed: nil, never
// ready, while none is set.
func (l *lazyDeadline) done() <-chan struct{} {
	if d := l.p.Load(); d != nil {
		return d.Done()
	}
	return nil
}

// setDeadline sets l to t. Calls already waiting watched no deadline if
// this made it: they are woken to watch it. Before the handshake is done
// no call waits on a deadline (see waitIO), and those that will find it.
func (b *connBase) setDeadline(l *lazyDeadline, t time.Time) {
	if l.set(t) && b.openedF.Load() {
		b.a.mu.Lock()
		b.a.notifyLocked()
		b.a.mu.Unlock()
	}
}

// begin registers the association and arms the handshake timer. It
// returns false if the endpoint no longer serves.
func (b *connBase) begin(now time.Time) bool {
	b.a.mu.Lock()
	b.timers[0] = time.AfterFunc(b.cfg.HandshakeTimeout, b.handshakeExpired)
	b.a.mu.Unlock()
	if !b.a.start(now) {
		b.timers[0].Stop()
		return false
	}
	return true
}

// start runs startFn once.
func (b *connBase) start() error {
	b.startOnce.Do(func() {
		if b.startFn != nil {
			if b.startErr = b.startFn(); b.startErr != nil {
				b.finish()
			}
		}
	})
	return b.startErr
}

// Handshake runs the handshake if it has not run yet, and waits until it
// completes. Read and Write call it first; Dial and Accept return conns
// whose handshake is done. It returns ctx's error if ctx ends first,
// ErrHandshakeTimeout after Config.HandshakeTimeout, ErrProtocol if the
// peer does not speak the expected framing, or a dial error such as
// connection refused (an ICMP port unreachable on a dialed conn).
func (b *connBase) Handshake(ctx context.Context) error {
	if b.openedF.Load() {
		return nil
	}
	if err := b.start(); err != nil {
		return err
	}
	return b.wait(ctx.Done, ctx.Err, "handshake", func() (bool, error) { return b.opened, nil })
}

// wait loops until check reports done or an error, the conn is closed or
// has failed, or the channel stop returns fires (then it fails with
// stopErr()). check and stop run with a.mu held.
func (b *connBase) wait(stop func() <-chan struct{}, stopErr func() error, op string, check func() (bool, error)) error {
	a := b.a
	var woken *waiter
	for {
		a.mu.Lock()
		if woken != nil {
			a.reuseWaiter(woken)
		}
		var done bool
		var err error
		if b.closed {
			err = errClosed
		} else if done, err = check(); !done && err == nil && b.over {
			err = b.k.failure()
		}
		if done || err != nil {
			a.mu.Unlock()
			return opError(op, b.LocalAddr(), b.raddr, err)
		}
		w, st := a.addWaiter(), stop()
		a.mu.Unlock()
		select {
		case <-w.c: // notifyLocked took it off the list
			woken = w
		case <-st:
			a.doneWaiting(w)
			return opError(op, b.LocalAddr(), b.raddr, stopErr())
		}
	}
}

// markOpened records the completed handshake, with the peer validated.
// Call with a.mu held.
func (b *connBase) markOpened(now time.Time) {
	b.opened = true
	b.openedF.Store(true)
	b.timers[0].Stop()
	b.timers[0] = nil // an open conn keeps no timer of its own
	if p, ok := b.a.eng.(engine.Prover); ok && !p.PeerProven() {
		b.a.awaitProof = true // validated once it holds (see inputLocked)
		return
	}
	b.a.validated(now)
}

// evict ends a listener's association still in its handshake to make
// room for a newer peer, silently: the peer may well be a spoofed
// address, which must get nothing.
func (b *connBase) evict() {
	b.a.abandon(ErrHandshakeTimeout)
}

// closeUnused handles Close on a client conn never used: nothing was sent,
// its PacketConn is closed. It reports whether that was the case.
func (b *connBase) closeUnused() bool {
	if b.startFn == nil {
		return false // dialed or accepted: started at birth
	}
	unused := false
	b.startOnce.Do(func() {
		unused = true
		b.startErr = opError("handshake", nil, b.raddr, errClosed)
	})
	if unused {
		b.closeFn()
		b.finish()
	}
	return unused
}

// close marks the conn closed, wakes every blocked call and runs the
// kind's begin, which starts the kind's close if the association is still
// running (b.over false).
func (b *connBase) close(begin func(now time.Time)) error {
	if b.closeUnused() {
		return nil
	}
	a := b.a
	if a == nil {
		return opError("close", nil, b.raddr, errClosed)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if b.closed {
		return opError("close", b.LocalAddr(), b.raddr, errClosed)
	}
	b.closed = true
	now := time.Now()
	begin(now)
	if !b.over {
		a.settleLocked(now)
	}
	a.notifyLocked()
	return nil
}

// LocalAddr returns the local address of the underlying PacketConn, or nil
// before a conn made by Client is first used.
func (b *connBase) LocalAddr() net.Addr {
	if b.a == nil {
		return nil
	}
	return b.a.ep.PacketConn().LocalAddr()
}

// RemoteAddr returns the peer's address.
func (b *connBase) RemoteAddr() net.Addr { return b.raddr }

// SetDeadline sets the read and write deadlines, as net.Conn describes. A
// zero time means no deadline. It never fails.
func (b *connBase) SetDeadline(t time.Time) error {
	b.setDeadline(&b.rd, t)
	b.setDeadline(&b.wd, t)
	return nil
}

// SetReadDeadline sets the deadline for blocked and future reads. Expiry
// makes them fail with os.ErrDeadlineExceeded. It never fails.
func (b *connBase) SetReadDeadline(t time.Time) error { b.setDeadline(&b.rd, t); return nil }

// SetWriteDeadline sets the deadline for blocked and future writes.
// Expiry makes them fail with os.ErrDeadlineExceeded. It never fails.
func (b *connBase) SetWriteDeadline(t time.Time) error { b.setDeadline(&b.wd, t); return nil }

// Protocol returns the wire protocol the conn speaks.
func (b *connBase) Protocol() Protocol { return b.cfg.Protocol }

// Stats returns a snapshot of the conn's counters; zero before a conn made
// by Client is first used.
func (b *connBase) Stats() Stats {
	if b.a == nil {
		return Stats{}
	}
	b.a.mu.Lock()
	defer b.a.mu.Unlock()
	return statsOf(b.a)
}

// beginClose starts the engine's graceful close once. Call with a.mu held.
func (b *connBase) beginClose(now time.Time) {
	if !b.engClosing {
		b.engClosing = true
		b.a.eng.Close(now)
	}
}

// Done returns a channel that is closed when the conn's association has
// ended: after Close, once everything written was delivered and the peer
// finished, or Config.Linger ran out; or when the conn failed. Close does
// not block, and delivery goes on in the background, so a program that
// closes a conn and then exits should wait for Done. Stats are final once
// Done is closed. A conn nobody asked for Done holds no channel.
//
// After a clean close, POROUS and Airhook associations stay for a
// TIME-WAIT before Done closes: max(2 × RTO, 1 s), on POROUS from the
// peer's close (bounded at 20 s), on Airhook from the last datagram
// received. Its purpose is TCP's: a peer whose last acknowledgement or
// close was lost sends it again, and is answered rather than left to
// time out; a reader already got io.EOF. LLUDP, Wirefox and Avara have
// none: Done closes once the close is confirmed, or the protocol's close
// has gone out where the peer never confirms it.
func (b *connBase) Done() <-chan struct{} {
	p := b.done.Load()
	if p == nil {
		c := make(chan struct{})
		if b.done.CompareAndSwap(nil, &c) {
			return c
		}
		p = b.done.Load()
	}
	return *p
}

// endedBase implements upper.ended for both kinds.
func (b *connBase) endedBase(err error) {
	if err == ErrHandshakeTimeout { // the engine's timer or an eviction
		err = b.handshakeTimeout()
	}
	b.over = true
	b.finish()
	if b.err == nil {
		b.err = err
	}
	for _, t := range b.timers {
		if t != nil {
			t.Stop()
		}
	}
}

func (b *connBase) handshakeExpired() {
	b.expire(resetTimedOut, b.handshakeTimeout(), func() bool { return !b.opened })
}

// handshakeTimeout is ErrHandshakeTimeout saying what was tried and the
// likely causes of a peer's silence: a peer of another protocol, channel
// count or kind of conn ignores the handshake, as the protocols'
// reference implementations do.
func (b *connBase) handshakeTimeout() error {
	what, other := b.k.names()
	tried, causes, hint := b.cfg.proto.Handshake(b.cfg.opts, what)
	if b.viaTransport {
		hint += "; a peer behind a NAT that maps each destination to a port of its own (symmetric NAT) is not reachable at the address another host saw it at, and needs a relay"
	}
	return &handshakeTimeoutError{fmt.Sprintf(
		"%v: no %s with %v completed within %v; the peer may not be listening, or may speak %s, or accept %s%s",
		ErrHandshakeTimeout, tried, b.raddr, b.cfg.HandshakeTimeout, causes, other, hint)}
}

func (b *connBase) lingerExpired() {
	b.expire(resetLinger, ErrLingerTimeout, func() bool { return true })
}

// expire abandons the association if cond still holds when a timer fires.
func (b *connBase) expire(code uint8, err error, cond func() bool) {
	a := b.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if !b.over && cond() {
		b.err = err // the cause, whichever way the association now ends
		b.k.abortLocked(code)
		a.settleLocked(time.Now())
		a.endLocked(err)
	}
}

// waitIO runs the handshake, then waits as wait does for the read or
// write op until check reports done, failing with os.ErrDeadlineExceeded
// once dl has passed (at once if it already has, and before check runs).
// A closed conn fails with net.ErrClosed whatever the deadline, as TCP
// conns do.
func (b *connBase) waitIO(op string, dl *lazyDeadline, check func() (bool, error)) error {
	if err := b.Handshake(context.Background()); err != nil {
		return err
	}
	return b.wait(dl.done, deadlineErr, op, func() (bool, error) {
		select {
		case <-dl.done():
			return false, errTimeout
		default:
		}
		return check()
	})
}

// deadlineErr is the stopErr of a deadline.
func deadlineErr() error { return errTimeout }

// Reset codes carried by the RST frames a Conn sends.
const (
	resetClosed   uint8 = 1 // closed with data from the peer unread
	resetLinger   uint8 = 2 // Config.Linger ran out during Close
	resetRefused  uint8 = 3 // the listener closed before Accept
	resetTimedOut uint8 = 4 // the handshake did not complete in time
	resetAborted  uint8 = 5 // Close after SetLinger(0)
)
