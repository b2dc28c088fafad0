package rudp

import (
	"context"
	"net"
	"slices"
	"sync"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/socket"
)

// acceptQueue holds a listener's new peers: those still in their handshake
// or not yet validated (half-open), oldest first, and those ready for
// Accept. Together, with the slots reserved for peers being set up, they
// never exceed the backlog. When it is full and half-open peers hold more
// than half of it, the oldest half-open peer is evicted to make room, so
// that a flood of openings from addresses that never answer cannot lock
// out a peer that does: its handshake only needs to finish before
// backlog/2 more openings arrive. When peers waiting for Accept hold the
// rest, a new opening is dropped instead (see admit).
type acceptQueue[T comparable] struct {
	ep      *socket.Endpoint
	backlog int

	mu      sync.Mutex
	slots   int // reserved for peers being set up
	pending []T // half-open, oldest first
	queue   []T // validated, waiting for Accept, oldest first
	closed  bool
	wake    chan struct{} // capacity 1: a peer became ready, or the queue closed
	done    chan struct{} // closed by close
	drops   uint64        // openings refused: the backlog was mostly ready peers
	evicted uint64        // half-open peers evicted for a newer opening
}

func newAcceptQueue[T comparable](ep *socket.Endpoint, backlog int) *acceptQueue[T] {
	return &acceptQueue[T]{ep: ep, backlog: backlog, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// admit reserves a slot for a new peer. When the backlog is full and
// half-open peers hold more than half of it, the signature of a flood of
// openings that never complete, it takes the oldest half-open peer's slot
// and returns that peer, which the caller evicts (outside the lock).
// Otherwise a full backlog holds mostly peers waiting for Accept, and the
// new opening is dropped: its sender sends it again, as a TCP client does
// a SYN dropped at a full accept queue, whereas an evicted peer whose
// side of the handshake was over (a dialer's ends when the listener's
// answer arrives) would learn of it only at its idle timeout. It returns
// false when the opening is dropped, or after close.
func (q *acceptQueue[T]) admit() (victim T, evict, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return victim, false, false
	case q.slots+len(q.pending)+len(q.queue) < q.backlog:
	case len(q.pending) > q.backlog/2:
		victim, evict = q.pending[0], true
		q.pending = slices.Delete(q.pending, 0, 1)
		q.evicted++
	default:
		q.drops++
		return victim, false, false
	}
	q.slots++
	return victim, evict, true
}

// track puts c, set up on a reserved slot, among the half-open peers.
func (q *acceptQueue[T]) track(c T) {
	q.mu.Lock()
	q.slots--
	q.pending = append(q.pending, c)
	q.mu.Unlock()
}

// release gives back a reserved slot whose peer was not set up.
func (q *acceptQueue[T]) release() {
	q.mu.Lock()
	q.slots--
	q.mu.Unlock()
}

// forget removes c from the half-open peers: it ended before it was
// ready (or was evicted, when this does nothing).
func (q *acceptQueue[T]) forget(c T) {
	q.mu.Lock()
	if i := slices.Index(q.pending, c); i >= 0 {
		q.pending = slices.Delete(q.pending, i, i+1)
	}
	q.mu.Unlock()
}

// claim takes c out of the queue before Accept returns it, half-open or
// ready; false if Accept returned it already (or it ended).
func (q *acceptQueue[T]) claim(c T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := slices.Index(q.pending, c); i >= 0 {
		q.pending = slices.Delete(q.pending, i, i+1)
		return true
	}
	if i := slices.Index(q.queue, c); i >= 0 {
		q.queue = slices.Delete(q.queue, i, i+1)
		return true
	}
	return false
}

// ready moves c, validated, from the half-open peers to the Accept queue;
// false if the listener has closed or c was evicted meanwhile (the caller
// then refuses the peer).
func (q *acceptQueue[T]) ready(c T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.pending, c)
	if q.closed || i < 0 {
		return false
	}
	q.pending = slices.Delete(q.pending, i, i+1)
	q.queue = append(q.queue, c)
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// accept waits for the next ready peer, or for ctx to end (then it
// returns ctx.Err()).
func (q *acceptQueue[T]) accept(ctx context.Context) (T, error) {
	for {
		q.mu.Lock()
		if len(q.queue) > 0 {
			c := q.queue[0]
			q.queue = slices.Delete(q.queue, 0, 1)
			if len(q.queue) > 0 {
				select { // the next waiter goes on
				case q.wake <- struct{}{}:
				default:
				}
			}
			q.mu.Unlock()
			return c, nil
		}
		closed := q.closed
		q.mu.Unlock()
		if !closed {
			select {
			case <-q.wake:
				continue
			case <-q.done:
				continue // a peer ready before the close still counts
			case <-q.ep.Done():
			case <-ctx.Done():
				var zero T
				return zero, ctx.Err()
			}
		}
		var zero T
		return zero, &net.OpError{Op: "accept", Net: "rudp", Addr: q.ep.PacketConn().LocalAddr(), Err: errClosed}
	}
}

// close stops accepting and returns the peers that were ready and never
// accepted, and those still half-open.
func (q *acceptQueue[T]) close() (unaccepted, halfOpen []T, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, nil, false
	}
	q.closed = true
	close(q.done)
	unaccepted, q.queue = q.queue, nil
	halfOpen, q.pending = q.pending, nil
	return unaccepted, halfOpen, true
}

// counts returns the openings refused and the peers evicted.
func (q *acceptQueue[T]) counts() (drops, evicted uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.drops, q.evicted
}

// acceptable is a conn kind a listener accepts.
type acceptable interface {
	comparable
	net.Conn
	base() *connBase
	attach(ep *socket.Endpoint, eng engine.Engine, tr *connTrace)
	// claim takes the conn, a listener's, from its accept queue for a
	// dial to the same peer (see Transport.Dial): false if Accept
	// returned it already.
	claim() bool
}

// claimConn takes c, whose association is a, from its accept queue *q
// (see acceptQueue.claim); from then on c is no listener's: *q is nil.
func claimConn[T comparable](a *assoc, q **acceptQueue[T], c T) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if *q == nil || !(*q).claim(c) {
		return false
	}
	*q = nil
	return true
}
