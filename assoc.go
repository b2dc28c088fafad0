package rudp

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/socket"
)

// upper is the layer above an association's engine: a stream Conn or a
// MessageConn. All its methods are called with the association's mutex held.
type upper interface {
	// deliver takes one message the engine delivered at now.
	deliver(now time.Time, m engine.Message)
	// pump moves what the layer has queued into the engine, and drives its
	// close procedure.
	pump(now time.Time)
	// recvOpen reports whether the layer takes new data now; while it does
	// not (its receive queue is full, or it was closed), the engine
	// refuses new data unacknowledged, so the peer sends it again later,
	// and still processes everything else (see engine.Engine.SetRecvOpen).
	recvOpen() bool
	// ended is called once, when the association is over; err is nil for
	// a graceful end.
	ended(err error)
	// settled is called at the end of each settle of a live association,
	// once the engine has sent what was due: the layer may free what it
	// keeps for traffic. It returns when the layer next needs a settle
	// with nothing else due (zero: never), after now.
	settled(now time.Time) time.Time
}

// assoc is one association: an engine bound to a remote address on an
// endpoint, with its timer. mu serialises every engine call; the engine's
// datagrams are sent while mu is held, so they leave in order.
type assoc struct {
	ep    *socket.Endpoint
	raddr net.Addr
	key   socket.Key

	mu      sync.Mutex
	eng     engine.Engine
	up      upper
	tm      socket.Timer // in the endpoint's Timers
	timerAt time.Time    // tm's deadline; zero when it is stopped or fired
	waiters *waiter      // those waiting for the next change, a list; nil if none
	spare   *waiter      // waiters kept for reuse, a list; freed by an idle stream's trim
	over    bool

	sendErrors uint64 // datagrams the socket refused to send
	// out is the endpoint's Outbox during a Flush that has one: see
	// transmitLocked.
	out      *socket.Outbox
	refusals refusals
	recvShut bool // the engine was told to refuse new data

	// Once the layer above has closed for good (see discard): the
	// messages it dropped unread, and the engine's Stats.Refused then.
	discarding  bool
	unread      uint64
	refusedBase uint64

	cross    *crossing // a Transport's dialed conn: the simultaneous open, if any
	sealed   bool      // datagrams carry a seal (streams; see seal)
	badSeals uint64    // datagrams dropped because no seal matched
	// lateSeals counts the datagrams dropped because they carry the plain
	// seal after the peer has sent under the key: sent before the peer
	// knew the key and delayed or duplicated on the way, or forged.
	lateSeals uint64
	// The keyed seal (see socket.SealKey and Conn.keySeal): the key of
	// the datagrams taken (0 until this end knows it) and sent (0 until
	// this end switches); peerKeyed, once the peer has sent a datagram
	// under the key, after which a datagram with the plain seal is taken
	// only if it is an opening (a restart, which the engine challenges).
	rxKey, txKey uint32
	peerKeyed    bool
	isOpening    func(p []byte) bool // the protocol's opening test
	// plainPeer, on a dialed stream, is its protocol: an unsealed datagram
	// of it during the handshake is a message listener's answer.
	plainPeer *protocolEntry

	// Large frames (see largeFrame): the engine takes datagrams above
	// maxDatagram, and it may send them.
	takesLarge, sendsLarge bool

	// Until the peer of a listener's association is validated (it showed
	// it receives what this end sends), at most amplification times the
	// bytes received from it are sent to it (RFC 9000 §8.1), so that a
	// spoofed source cannot make this end a traffic amplifier.
	limited    bool
	awaitProof bool   // open, limited until the engine's Prover holds
	received   uint64 // bytes received from the peer while limited
	sent       uint64 // bytes sent to it while limited
	ampDrops   uint64 // datagrams not sent for that

	tr      *connTrace   // nil without Config.Tracer
	trState engine.State // the state last reported to tr
}

// amplification is how many times the bytes received from a peer not yet
// validated may be sent to it.
const amplification = 3

// limit starts the amplification limit of a listener's association, whose
// first datagram was in bytes.
func (a *assoc) limit(in int) {
	a.limited, a.received = true, uint64(in)
}

// validated lifts the amplification limit at now. Call with mu held.
func (a *assoc) validated(now time.Time) {
	if a.limited && a.tr != nil && a.tr.t.PeerValidated != nil {
		a.tr.t.PeerValidated(now)
	}
	a.limited = false
}

// sendBufs is a batch of datagram buffers, each with room for the largest
// datagram of any protocol, and the messages that send them. An
// association borrows one from sendPool for each settle, so that an idle
// association holds none. A buffer is allocated when first used: a
// settle that sends one acknowledgement takes one, and a batch of large
// frames (largePool) borrowed for that holds 64 KiB, not four times that,
// while its settle waits for a full socket.
type sendBufs struct {
	out     [][]byte
	size    int // each buffer's capacity
	scratch socket.Scratch
}

// pool is the pool b belongs to: sendPool, or largePool for large frames.
func (b *sendBufs) pool() *sync.Pool {
	if b.size > maxSend {
		return &largePool
	}
	return &sendPool
}

// buf returns the i-th buffer, whole.
func (b *sendBufs) buf(i int) []byte {
	if b.out[i] == nil {
		b.out[i] = make([]byte, b.size)
	}
	return b.out[i][:b.size]
}

// maxSend is the largest datagram sent: Config.MTU is at most 1500 (a
// stream's engine writes up to MTU minus the seal), POROUS's frames 1472
// (plus the seal on streams); large frames excepted (see largePool).
const maxSend = 1500

var sendPool = sync.Pool{New: func() any { return newSendBufs(socket.SendBatch, maxSend) }}

// newSendBufs returns a batch of n buffers of size bytes each, none
// allocated yet.
func newSendBufs(n, size int) *sendBufs {
	return &sendBufs{out: make([][]byte, n), size: size, scratch: socket.NewScratch(n)}
}

func newAssoc(ep *socket.Endpoint, raddr net.Addr, eng engine.Engine, tr *connTrace) *assoc {
	a := &assoc{
		ep:    ep,
		raddr: raddr,
		key:   socket.KeyOf(raddr),
		eng:   eng,
		tr:    tr,
	}
	if tr != nil {
		a.trState = noState
	}
	a.tm = socket.MakeTimer(a.onTimer)
	return a
}

// Input implements socket.Peer: it feeds the datagrams of data, seg bytes each (the last one may be
// shorter), to the engine under one lock; flush then brings everything up
// to date, once per batch of datagrams. It stops after a datagram from a
// restarted peer, which ends this association, and after one that finds
// it over; it returns how many bytes it consumed. took reports that the
// engine took at least one datagram; restarted, that the last one
// consumed comes from a restarted peer, so the caller may treat it as a
// new peer's.
func (a *assoc) Input(now time.Time, data []byte, seg int) (n int, took, restarted bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for n < len(data) {
		p := data[n:min(n+seg, len(data))]
		n += len(p)
		if a.over {
			return n, took, false
		}
		t, r := a.inputLocked(now, p)
		took = took || t
		if r {
			return n, took, true
		}
	}
	return n, took, false
}

// inputLocked feeds one datagram to the engine. took reports that the
// engine took it; restarted, that it comes from a restarted peer and this
// association has ended because of it.
func (a *assoc) inputLocked(now time.Time, p []byte) (took, restarted bool) {
	a.refusals.reset() // the peer is there
	if open := a.up.recvOpen(); open == a.recvShut {
		a.setRecvOpen(open)
	}
	n := len(p)
	if a.sealed {
		q, ok, late := a.unseal(p)
		if late {
			a.lateSeals++
			return false, false
		}
		if !ok {
			a.badSeals++
			a.plainAnswer(p)
			return false, false
		}
		p = q
	}
	if a.cross != nil {
		handshake := a.eng.State() == engine.StateHandshake
		if !handshake && !a.cross.seen {
			a.cross = nil // opened without a crossing: nothing more to look at
		} else if taken, become := a.cross.opening(p, handshake); taken {
			if become {
				a.becomeServer(now, p)
			}
			return true, false
		}
	}
	err := a.eng.HandleDatagram(now, p)
	if a.tr != nil {
		a.tr.input(now, p, err)
	}
	if a.limited && err == nil {
		a.received += uint64(n)
		if a.awaitProof && a.eng.(engine.Prover).PeerProven() {
			a.awaitProof = false
			a.validated(now)
		}
	}
	if errors.Is(err, engine.ErrPeerRestarted) {
		a.endLocked(ErrReset)
		return false, true
	}
	a.deliverLocked(now) // keeps recvOpen() exact within a batch
	return true, false
}

// unseal returns p without its seal, and whether the seal matches: the
// keyed one once this end knows the key; the plain one until the peer
// has sent under the key, and afterwards only for the protocol's opening.
// late reports a datagram refused only because it carries the plain seal
// after the key.
func (a *assoc) unseal(p []byte) (q []byte, ok, late bool) {
	if a.rxKey != 0 {
		if q, ok := socket.Unseal(p, a.rxKey); ok {
			a.peerKeyed = true
			return q, true, false
		}
	}
	q, ok = socket.Unseal(p, 0)
	if ok && a.peerKeyed && !a.isOpening(q) {
		return nil, false, true
	}
	return q, ok, false
}

// becomeServer replaces the engine of a's dialed conn, in its handshake,
// by a server engine built from p, the peer's opening: a simultaneous
// open this end serves (see crossing).
func (a *assoc) becomeServer(now time.Time, p []byte) {
	eng, err := a.cross.cfg.newEngine(now, a.raddr, a.tr, a.cross.stream, true)
	if err == nil {
		err = eng.HandleDatagram(now, p)
	}
	if err != nil {
		a.ep.Log().Debug("rudp: simultaneous open: the peer's opening refused", "peer", a.raddr, "err", err)
		return
	}
	a.ep.Log().Debug("rudp: simultaneous open: this end becomes the server", "peer", a.raddr)
	a.eng = eng
	a.up.(crosser).crossed(now, eng)
}

// plainAnswer ends a dialed stream's handshake with ErrIncompatible when
// p, a datagram without a seal, is one of the stream's protocol: the
// peer is a message listener of that protocol (ListenMessages), which
// answers the opening it finds in our first datagram; the dial fails at
// once instead of at HandshakeTimeout. As with an ICMP refusal, a blind
// source that hits the dialer's port during its handshake could do the
// same; an established stream ignores such datagrams.
func (a *assoc) plainAnswer(p []byte) {
	if a.plainPeer == nil || a.eng.State() != engine.StateHandshake || a.plainPeer.Describe(p).Err != nil {
		return
	}
	a.endLocked(fmt.Errorf("%w: the peer answered with a %v datagram without the seal of rudp streams: it accepts %v message conns (ListenMessages), not streams", ErrIncompatible, a.plainPeer.Name, a.plainPeer.Name))
}

// setRecvOpen opens or closes the engine to new data. Each time the
// layer above fills up while open for reading, it logs once, at Debug,
// that the peer's new messages are now refused (Stats.Refused counts
// them; the peer sends them again). Call with mu held.
func (a *assoc) setRecvOpen(open bool) {
	a.recvShut = !open
	a.eng.SetRecvOpen(open)
	if !open && !a.discarding {
		a.ep.Log().Debug("rudp: receive queue full: refusing the peer's new messages unacknowledged until they are read",
			"peer", a.raddr, "refused_so_far", a.eng.Stats().Refused)
	}
}

// discard records that the layer above, closed for good, dropped n
// messages unread; from then on the messages the engine refuses count as
// unread too (Stats.Unread). Call with mu held.
func (a *assoc) discard(n int) {
	if !a.discarding {
		a.discarding = true
		a.refusedBase = a.eng.Stats().Refused
	}
	a.unread += uint64(n)
}

// deliverLocked hands the engine's delivered messages to the upper layer.
func (a *assoc) deliverLocked(now time.Time) {
	for {
		m, ok := a.eng.Recv()
		if !ok {
			return
		}
		a.up.deliver(now, m)
	}
}

// Flush implements socket.Peer: it settles the association after Input.
// With out, its datagrams go there and the association stays locked until
// out has sent them (see socket.Outbox).
func (a *assoc) Flush(now time.Time, out *socket.Outbox) {
	a.mu.Lock()
	if out == nil {
		defer a.mu.Unlock()
	} else {
		out.Hold(&a.mu) // unlocked once out has sent what the settle queues
	}
	a.out = out
	if !a.over {
		a.settleLocked(now)
	}
	a.out = nil
}

// Sent implements socket.Sender: the datagrams of a batch handed to the
// endpoint's Outbox (see transmitLocked) went, and its buffers come back.
// The association is still locked.
func (a *assoc) Sent(r *socket.Run) {
	a.sendErrors += r.Failed
	b := r.Tag.(*sendBufs)
	b.pool().Put(b)
}

func (a *assoc) onTimer() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.over {
		a.timerAt = time.Time{}
		a.settleLocked(time.Now())
	}
}

// settleLocked brings everything up to date after any input: hands
// delivered messages up, lets the upper layer queue more, sends what the
// engine has due, ends the association if the engine is done, re-arms the
// timer and wakes waiters.
func (a *assoc) settleLocked(now time.Time) {
	a.deliverLocked(now)
	a.up.pump(now)
	pool := &sendPool
	if a.sendsLarge && a.eng.(engine.LargeFramer).LargeDue() {
		pool = &largePool // an acknowledgement takes no 64 KiB buffer
	}
	b := pool.Get().(*sendBufs)
	refused := false // the socket reported the peer's port unreachable
	n := 0
	for {
		if n == len(b.out) {
			var r bool
			b, r = a.transmitLocked(b, n)
			refused = refused || r
			n = 0
		}
		if b == nil {
			b = pool.Get().(*sendBufs)
		}
		buf := b.buf(n)
		if a.sealed {
			buf = buf[:len(buf)-socket.SealLen]
		}
		k := a.eng.Poll(now, buf)
		if k == 0 {
			break
		}
		plain := k
		if a.cross != nil && a.eng.State() == engine.StateHandshake {
			a.cross.sentLocked(buf[:plain])
		}
		if a.sealed {
			k = len(socket.Seal(buf[:k], a.txKey))
		}
		if a.limited {
			if a.sent+uint64(k) > amplification*a.received {
				a.ampDrops++ // as if lost: the engine sends it again later
				continue
			}
			a.sent += uint64(k)
		}
		if a.tr != nil {
			a.traceSent(now, buf[:plain], k)
		}
		b.out[n] = buf[:k]
		n++
	}
	b, r := a.transmitLocked(b, n)
	if b != nil {
		pool.Put(b)
	}
	if (refused || r) && a.refusedLocked(now) {
		return
	}
	if a.tr != nil {
		a.traceState(now)
	}
	if a.eng.State() == engine.StateClosed {
		a.endLocked(a.eng.Err())
		return
	}
	dl := a.eng.Deadline()
	if up := a.up.settled(now); !up.IsZero() && (dl.IsZero() || up.Before(dl)) {
		dl = up
	}
	if !dl.Equal(a.timerAt) {
		a.timerAt = dl
		a.ep.Timers().Set(&a.tm, dl, now)
	}
	a.notifyLocked()
}

// waiter is one goroutine waiting for an association to change: a
// buffered channel that notifyLocked signals. The association keeps the
// waiters that were woken for reuse, so that waiting allocates nothing.
// (They are not shared between associations: a channel belongs to the
// testing/synctest bubble that made it.)
type waiter struct {
	c    chan struct{}
	next *waiter
}

// addWaiter returns a waiter signalled at the next change. Call with mu
// held; hand it back to doneWaiting, or, once it was signalled, to
// reuseWaiter.
func (a *assoc) addWaiter() *waiter {
	w := a.spare
	if w != nil {
		a.spare = w.next
	} else {
		w = &waiter{c: make(chan struct{}, 1)}
	}
	w.next, a.waiters = a.waiters, w
	return w
}

// reuseWaiter keeps w, signalled and received from, for reuse. Call with
// mu held.
func (a *assoc) reuseWaiter(w *waiter) {
	w.next, a.spare = a.spare, w
}

// doneWaiting takes w off the list, where a change may have signalled it
// meanwhile, and keeps it for reuse. Call without mu held.
func (a *assoc) doneWaiting(w *waiter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for p := &a.waiters; *p != nil; p = &(*p).next {
		if *p == w {
			*p = w.next
			break
		}
	}
	select {
	case <-w.c:
	default:
	}
	a.reuseWaiter(w)
}

// notifyLocked wakes those waiting. An association nobody waits on holds
// nothing for them.
func (a *assoc) notifyLocked() {
	for w := a.waiters; w != nil; {
		next := w.next
		w.next = nil
		w.c <- struct{}{} // never blocks: a waiter is on the list once, its channel empty
		w = next
	}
	a.waiters = nil
}

// endLocked finishes the association once: the upper layer learns why,
// the timer stops, the endpoint forgets it.
func (a *assoc) endLocked(err error) {
	if a.over {
		return
	}
	a.over = true
	a.ep.Timers().Set(&a.tm, time.Time{}, time.Time{})
	if a.tr != nil {
		a.tr.closed(time.Now(), err)
	}
	a.ep.Log().Debug("rudp: association ended", "peer", a.raddr, "err", err, "stats", a.eng.Stats())
	a.up.ended(err)
	a.notifyLocked()
	a.ep.Remove(a) // lock order: a.mu, then the endpoint's
}

// abandon ends the association at once, without the engine's close.
func (a *assoc) abandon(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.endLocked(err)
}

// transmitLocked sends b.out[:n] to the peer, and returns the batch to
// fill next. It reports whether the socket answered that the peer's port
// is unreachable (see socket.Socket.Send). During a Flush with an Outbox,
// b goes there instead and nil comes back: the Outbox sends b later, with
// the datagrams of other peers, and the caller takes another batch only
// if it has more to send.
func (a *assoc) transmitLocked(b *sendBufs, n int) (next *sendBufs, refused bool) {
	if n == 0 {
		return b, false
	}
	if a.out != nil {
		a.out.Add(b.out[:n], a.raddr, a, b)
		return nil, false
	}
	failed, refused := a.ep.Socket().Send(&b.scratch, b.out[:n], a.raddr)
	a.sendErrors += failed
	return b, refused
}

// Refused implements socket.Peer: it records, at now, an ICMP port unreachable from the peer's port,
// as reported by the socket's read (see socket.Endpoint).
func (a *assoc) Refused(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	over := a.refusedLocked(now)
	if _, ok := a.eng.(engine.Pinger); ok && !over {
		a.settleLocked(now) // the ping asked for may be due now
	}
}

// refusedLocked records a refusal at now and ends the association with
// syscall.ECONNREFUSED if it is still in its handshake, or if the
// refusals have persisted (see refusals). It reports whether the
// association is over. Otherwise an engine whose keepalives are seconds
// apart (engine.Pinger) is asked for a ping at once after the first
// report and when the span runs out after the others, so that the
// reports, or a live peer's answer, come within refusalSpanMax.
func (a *assoc) refusedLocked(now time.Time) bool {
	if a.over {
		return true
	}
	if a.eng.State() == engine.StateHandshake || a.refusals.add(now, a.eng.Stats().RTO) {
		a.endLocked(syscall.ECONNREFUSED)
		return true
	}
	if p, ok := a.eng.(engine.Pinger); ok {
		at := now
		if a.refusals.n > 1 {
			at = a.refusals.until
		}
		p.PingAt(at)
	}
	return false
}

// refusalsToFail is how many port unreachable reports, with nothing heard
// from the peer in between, end an open association.
const refusalsToFail = 3

// refusalSpanMax caps the span the refusals must cover: a message conn
// on its reference's timing has an RTO of seconds (LLUDP's 1 to 10 s),
// while a peer that is still there answers well within half a second.
const refusalSpanMax = 500 * time.Millisecond

// refusals decides when ICMP port unreachable reports about an open
// association's peer mean the peer is gone. ICMP is easily forged and a
// single report may be stale, so the reports must persist: at least
// refusalsToFail of them, spread over at least one RTO (as it was at the
// first) or refusalSpanMax, whichever is shorter, with no datagram from
// the peer in between.
type refusals struct {
	n     int       // reports since the last datagram from the peer
	until time.Time // the earliest time the reports may end the association
}

// add records a report at now, rto being the current RTO; it reports
// whether the peer is now taken as gone.
func (r *refusals) add(now time.Time, rto time.Duration) bool {
	if r.n == 0 {
		r.until = now.Add(min(rto, refusalSpanMax))
	}
	r.n++
	return r.n >= refusalsToFail && !now.Before(r.until)
}

// reset forgets the reports: a datagram came from the peer.
func (r *refusals) reset() { r.n = 0 }

// start registers the association with its endpoint and sends its first
// datagrams. It returns false if the endpoint has stopped.
func (a *assoc) start(now time.Time) bool {
	if !a.ep.Add(a) {
		return false
	}
	a.mu.Lock()
	a.settleLocked(now)
	a.mu.Unlock()
	return true
}

// Key implements socket.Peer.
func (a *assoc) Key() socket.Key { return a.key }

// TakesLarge implements socket.Peer.
func (a *assoc) TakesLarge() bool { return a.takesLarge }

// Stopped implements socket.Peer: the socket failed or was closed.
func (a *assoc) Stopped() { a.abandon(errClosed) }

var _ socket.Peer = (*assoc)(nil)

// traceSent reports the engine's datagram p, size bytes on the wire (p
// and its seal).
func (a *assoc) traceSent(now time.Time, p []byte, size int) {
	if a.tr.t.DatagramSent != nil {
		a.tr.t.DatagramSent(now, size, a.tr.describe(p))
	}
}

// noState is no engine state: the first settle reports the engine's.
const noState engine.State = 255

// traceState reports the engine's state if it changed.
func (a *assoc) traceState(now time.Time) {
	if st := a.eng.State(); st != a.trState {
		a.trState = st
		if a.tr.t.StateChanged != nil {
			a.tr.t.StateChanged(now, st.String())
		}
	}
}

// largePool holds the send buffers of associations that send large
// frames, as sendPool those of the others.
var largePool = sync.Pool{New: func() any { return newSendBufs(largeBatch, maxLarge) }}

// largeBatch is how many large datagrams an association sends per
// sendmmsg: as many bytes as socket.SendBatch datagrams of 16 KiB.
const largeBatch = 4
