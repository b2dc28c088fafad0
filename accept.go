package rudp

import (
	"net"
	"sync"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// acceptQueue holds a listener's new peers: those still in their handshake
// (pending) and those ready for Accept. Together they never exceed the
// backlog.
type acceptQueue[T any] struct {
	ep      *endpoint
	backlog int

	mu      sync.Mutex
	pending int
	queue   chan T // capacity backlog
	closed  bool
	done    chan struct{} // closed by close
	drops   uint64        // datagrams of new peers refused because the backlog was full
}

func newAcceptQueue[T any](ep *endpoint, backlog int) *acceptQueue[T] {
	return &acceptQueue[T]{ep: ep, backlog: backlog, queue: make(chan T, backlog), done: make(chan struct{})}
}

// reserve makes room for one new peer in its handshake; false if the
// backlog is full or the listener closed.
func (q *acceptQueue[T]) reserve() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.pending+len(q.queue) >= q.backlog {
		q.drops++
		return false
	}
	q.pending++
	return true
}

// abandon gives back a reservation whose peer never completed.
func (q *acceptQueue[T]) abandon() {
	q.mu.Lock()
	q.pending--
	q.mu.Unlock()
}

// ready moves a reserved peer to the Accept queue; false if the listener
// has closed (the caller then refuses the peer).
func (q *acceptQueue[T]) ready(c T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending--
	if q.closed {
		return false
	}
	q.queue <- c // never blocks: pending+len(queue) <= backlog
	return true
}

// accept waits for the next ready peer.
func (q *acceptQueue[T]) accept() (T, error) {
	var zero T
	select {
	case c := <-q.queue:
		return c, nil
	case <-q.done:
	case <-q.ep.done:
	}
	select { // a peer that was ready before the close still counts
	case c := <-q.queue:
		return c, nil
	default:
	}
	return zero, &net.OpError{Op: "accept", Net: "rudp", Addr: q.ep.pc.LocalAddr(), Err: errClosed}
}

// close stops accepting and returns the peers that were never accepted.
func (q *acceptQueue[T]) close() (unaccepted []T, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, false
	}
	q.closed = true
	close(q.done)
	for {
		select {
		case c := <-q.queue:
			unaccepted = append(unaccepted, c)
		default:
			return unaccepted, true
		}
	}
}

// newPeerFunc builds the endpoint callback that admits a datagram from an
// unknown address as a new peer: it reserves backlog room, builds an
// engine, and hands the datagram to it; start registers the new conn.
func newPeerFunc[T any](q *acceptQueue[T], cfg *Config, stream bool,
	start func(from net.Addr, eng engine.Engine, now time.Time) bool) func([]byte, net.Addr, time.Time) {
	return func(p []byte, from net.Addr, now time.Time) {
		if !q.reserve() {
			cfg.Logger.Debug("rudp: backlog full, datagram dropped", "peer", from)
			return
		}
		eng, err := cfg.newEngine(now, stream, true)
		if err == nil {
			err = eng.HandleDatagram(now, p)
		}
		if err != nil {
			q.abandon()
			q.ep.unknownDrops.Add(1)
			return
		}
		if !start(from, eng, now) {
			q.abandon()
		}
	}
}
