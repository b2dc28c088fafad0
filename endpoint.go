package rudp

import (
	"cmp"
	"errors"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rudpkit/rudp/internal/socket"
)

// endpoint owns one socket: one reader goroutine demultiplexes
// datagrams by remote address to associations, and every association sends
// through it. The PacketConn is closed when the last user (listener or
// association) releases it.
type endpoint struct {
	pc   net.PacketConn
	sock *socket.Socket
	log  *slog.Logger

	mu       sync.Mutex
	assocs   map[socket.Key]*assoc
	refs     int
	newPeer  func(p []byte, from net.Addr, now time.Time) // nil: datagrams from unknown peers are dropped
	readErr  error                                        // why the reader stopped
	done     chan struct{}                                // closed when the reader stops
	released bool

	unknownDrops atomic.Uint64 // datagrams from peers with no association that open none
	oversize     atomic.Uint64 // datagrams too large for any protocol
}

// newEndpoint wraps pc; serve starts reading. The caller holds the first
// reference.
func newEndpoint(pc net.PacketConn, connected bool, log *slog.Logger) *endpoint {
	return &endpoint{
		pc:     pc,
		sock:   socket.New(pc, connected),
		log:    log,
		assocs: make(map[socket.Key]*assoc),
		refs:   1,
		done:   make(chan struct{}),
	}
}

// serve starts the reader goroutine.
func (ep *endpoint) serve() { go ep.readLoop() }

// stopAccepting drops datagrams from unknown peers from now on.
func (ep *endpoint) stopAccepting() {
	ep.mu.Lock()
	ep.newPeer = nil
	ep.mu.Unlock()
}

func (ep *endpoint) readLoop() {
	defer close(ep.done)
	var touched []*assoc
	r := ep.sock.NewReader(maxLarge)
	for {
		ms, err := r.Read()
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				ep.refused(time.Now(), r.Unreachable())
				continue // about a peer, not the socket
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue // a deadline set on pc by its owner; keep serving
			}
			ep.stop(err)
			return
		}
		now := time.Now()
		for i := range ms {
			m := &ms[i]
			data := m.Data()
			seg := cmp.Or(m.SegmentSize(), len(data))
			if seg > maxLarge || m.Truncated() {
				ep.oversize.Add(1) // larger than any protocol's datagram
				continue
			}
			for len(data) > 0 {
				n, a := ep.dispatch(data, seg, m, now)
				if a != nil && !slices.Contains(touched, a) {
					touched = append(touched, a)
				}
				data = data[n:]
			}
		}
		for i, a := range touched {
			a.flush(now)
			touched[i] = nil
		}
		touched = touched[:0]
	}
}

// dispatch hands datagrams of m, the first ones of data (seg bytes each,
// the last one of data may be shorter), to their association, or one of
// them to newPeer, and returns how many bytes it consumed. The datagrams
// GRO joined come from one peer: its association takes them under one
// lock. It returns the association whose engine took datagrams and now
// needs a flush.
func (ep *endpoint) dispatch(data []byte, seg int, m *socket.Received, now time.Time) (int, *assoc) {
	ep.mu.Lock()
	a := ep.assocs[m.Key()]
	newPeer := ep.newPeer
	ep.mu.Unlock()
	n := min(seg, len(data))
	if seg > socket.MaxDatagram && (a == nil || !a.takesLarge) {
		ep.oversize.Add(uint64((len(data) + seg - 1) / seg)) // larger than the protocol's datagram
		return len(data), nil
	}
	if a != nil {
		k, took, restarted := a.input(now, data, seg)
		if !restarted {
			if took {
				return k, a
			}
			return k, nil
		}
		// The last datagram consumed is the restarted peer's.
		n = k
		data = data[(k-1)/seg*seg : k]
	}
	if newPeer == nil {
		ep.unknownDrops.Add(1)
		return n, nil
	}
	newPeer(data[:min(seg, len(data))], m.Sender(), now)
	return n, nil
}

// refused reports ICMP port unreachables to the associations of the
// peers they are about: a connected socket's to its one peer, another's
// to the destinations in to (where the socket tells them: Linux's
// IP_RECVERR, see enableRecvErr; elsewhere an unconnected socket's peers
// that vanish show only through the idle timeout).
func (ep *endpoint) refused(now time.Time, to []socket.Key) {
	if ep.sock.Connected() {
		for _, a := range ep.snapshot() {
			a.refused(now)
		}
		return
	}
	for _, k := range to {
		ep.mu.Lock()
		a := ep.assocs[k]
		ep.mu.Unlock()
		if a != nil {
			a.refused(now)
		}
	}
}

// stop ends every association after the socket failed or was closed.
func (ep *endpoint) stop(err error) {
	ep.mu.Lock()
	ep.readErr = err
	ep.newPeer = nil
	ep.mu.Unlock()
	for _, a := range ep.snapshot() {
		a.abandon(errClosed)
	}
}

// snapshot returns the registered associations, to be called outside
// ep.mu (lock order: a.mu, then ep.mu).
func (ep *endpoint) snapshot() []*assoc {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return slices.Collect(maps.Values(ep.assocs))
}

// add registers a under its address; it takes a reference. It returns false
// if the address already has an association or the endpoint has stopped.
func (ep *endpoint) add(a *assoc) bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.readErr != nil || ep.assocs[a.key] != nil {
		return false
	}
	ep.assocs[a.key] = a
	ep.refs++
	return true
}

// remove unregisters a and drops its reference.
func (ep *endpoint) remove(a *assoc) {
	ep.mu.Lock()
	if ep.assocs[a.key] == a {
		delete(ep.assocs, a.key)
	}
	ep.mu.Unlock()
	ep.release()
}

// release drops one reference; the last one closes the PacketConn.
func (ep *endpoint) release() {
	ep.mu.Lock()
	ep.refs--
	last := ep.refs == 0 && !ep.released
	if last {
		ep.released = true
	}
	ep.mu.Unlock()
	if last {
		_ = ep.pc.Close()
	}
}
