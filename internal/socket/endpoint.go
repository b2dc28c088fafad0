package socket

import (
	"cmp"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Peer is an association as an Endpoint sees it: what the package above
// registers under a remote address, to which the endpoint hands that
// address's datagrams.
type Peer interface {
	// Key is the remote address's Key.
	Key() Key
	// Input takes the datagrams of data, seg bytes each (the last one may
	// be shorter), and returns how many bytes it consumed. took reports
	// that it took at least one, so that Flush is due; restarted, that
	// the last one consumed comes from a restarted peer and ended this
	// association, so that the endpoint offers it as a new peer's.
	Input(now time.Time, data []byte, seg int) (n int, took, restarted bool)
	// Flush brings the association up to date after a batch of Input. With
	// out (an unconnected socket's), it queues its datagrams there rather
	// than sending them, and leaves itself locked in out's care (see
	// Outbox.Hold).
	Flush(now time.Time, out *Outbox)
	// Refused reports an ICMP port unreachable about the peer.
	Refused(now time.Time)
	// Stopped ends the association: the socket failed or was closed.
	Stopped()
	// TakesLarge reports whether it takes datagrams above MaxDatagram.
	TakesLarge() bool
}

// Endpoint owns one Socket: one reader goroutine demultiplexes datagrams
// by remote address to the Peers registered (Add), or offers a datagram
// from an unknown address to the new-peer function (SetNewPeer), and every
// Peer sends through Socket. The PacketConn is closed when the last user
// releases it (Release). An Endpoint may also read a group of sockets
// bound to one address (see Spread).
type Endpoint struct {
	sock    *Socket
	more    []*Socket // the rest of a SO_REUSEPORT group (see Spread)
	log     *slog.Logger
	largest int // the largest datagram taken (see Received)
	readers sync.WaitGroup
	stopped sync.Once

	mu       sync.Mutex
	peers    peerTable
	refs     int
	newPeer  func(p []byte, from net.Addr, now time.Time) // nil: datagrams from unknown peers are dropped
	readErr  error                                        // why the readers stopped
	done     chan struct{}                                // closed when every reader has stopped
	released bool

	timers Timers // the Peers' timers

	unknownDrops atomic.Uint64 // datagrams from peers with no association that open none
	oversize     atomic.Uint64 // datagrams too large for any protocol
}

// NewEndpoint wraps pc (see New); Serve starts reading. largest is the
// largest datagram any Peer takes, in bytes; larger ones are dropped and
// counted. The caller holds the first reference.
func NewEndpoint(pc net.PacketConn, connected bool, largest int, log *slog.Logger) *Endpoint {
	return &Endpoint{
		sock:    New(pc, connected, log),
		log:     log,
		largest: largest,
		refs:    1,
		done:    make(chan struct{}),
	}
}

// Timers returns the timers of the endpoint's Peers.
func (ep *Endpoint) Timers() *Timers { return &ep.timers }

// Socket returns the endpoint's socket.
func (ep *Endpoint) Socket() *Socket { return ep.sock }

// PacketConn returns the endpoint's PacketConn.
func (ep *Endpoint) PacketConn() net.PacketConn { return ep.sock.pc }

// Log returns the endpoint's logger.
func (ep *Endpoint) Log() *slog.Logger { return ep.log }

// Done is closed when the readers have stopped.
func (ep *Endpoint) Done() <-chan struct{} { return ep.done }

// Spread adds to the endpoint the other sockets of a SO_REUSEPORT group
// bound to its socket's address, unconnected: each is read by a reader of
// its own, and the endpoint's Peers are those of every socket. The kernel
// hands every datagram of a remote address to the same socket of the
// group (by a hash of the addresses and ports), so that one reader sees
// all of a peer's datagrams, in order. Peers send through Socket; a
// reader's Outbox through its own socket, bound to the same address.
// Release closes them all. Call before Serve.
func (ep *Endpoint) Spread(pcs []net.PacketConn) {
	for _, pc := range pcs {
		ep.more = append(ep.more, New(pc, false, ep.log))
	}
}

// Serve starts the reader goroutines, one per socket.
func (ep *Endpoint) Serve() {
	socks := append([]*Socket{ep.sock}, ep.more...)
	ep.readers.Add(len(socks))
	for _, s := range socks {
		go ep.readLoop(s)
	}
	go func() {
		ep.readers.Wait()
		close(ep.done)
	}()
}

// SetNewPeer sets the function that takes a datagram from an address
// without a Peer; nil drops them (counted as unknown).
func (ep *Endpoint) SetNewPeer(f func(p []byte, from net.Addr, now time.Time)) {
	ep.mu.Lock()
	ep.newPeer = f
	ep.mu.Unlock()
}

// DropUnknown counts a datagram from an unknown address that opened
// nothing.
func (ep *Endpoint) DropUnknown() { ep.unknownDrops.Add(1) }

// Counts returns the datagrams from unknown addresses that opened
// nothing, and those too large for any Peer.
func (ep *Endpoint) Counts() (unknown, oversize uint64) {
	return ep.unknownDrops.Load(), ep.oversize.Load()
}

// readLoop reads sock until it fails or is closed.
func (ep *Endpoint) readLoop(sock *Socket) {
	defer ep.readers.Done()
	var touched []Peer
	var out *Outbox // one sendmmsg for the datagrams of many peers
	if !sock.Connected() {
		out = newOutbox(sock)
	}
	r := sock.NewReader(ep.largest)
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
			if seg > ep.largest || m.Truncated() {
				ep.oversize.Add(1) // larger than any protocol's datagram
				continue
			}
			for len(data) > 0 {
				n, p := ep.Dispatch(data, seg, m, now)
				if p != nil && !slices.Contains(touched, p) {
					touched = append(touched, p)
				}
				data = data[n:]
			}
		}
		if len(ep.more) > 0 {
			// Flush leaves each Peer locked until out.Release: readers
			// take the locks in one order, so that two readers each
			// holding a Peer the other wants (their datagrams reached
			// two sockets of the group, as when the group shrinks) wait
			// for one another rather than for ever.
			slices.SortFunc(touched, func(a, b Peer) int { return a.Key().compare(b.Key()) })
		}
		for i, p := range touched {
			p.Flush(now, out)
			touched[i] = nil
		}
		touched = touched[:0]
		if out != nil {
			out.Release()
		}
	}
}

// Dispatch hands datagrams of m, the first ones of data (seg bytes each,
// the last one of data may be shorter), to their Peer, or one of them to
// the new-peer function, and returns how many bytes it consumed. The
// datagrams GRO joined come from one peer: its Peer takes them at once.
// It returns the Peer that took datagrams and now needs a Flush.
func (ep *Endpoint) Dispatch(data []byte, seg int, m *Received, now time.Time) (int, Peer) {
	ep.mu.Lock()
	p := ep.peers.get(m.Key())
	newPeer := ep.newPeer
	ep.mu.Unlock()
	n := min(seg, len(data))
	if seg > MaxDatagram && (p == nil || !p.TakesLarge()) {
		ep.oversize.Add(uint64((len(data) + seg - 1) / seg)) // larger than the protocol's datagram
		return len(data), nil
	}
	if p != nil {
		k, took, restarted := p.Input(now, data, seg)
		if !restarted {
			if took {
				return k, p
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

// refused reports ICMP port unreachables to the Peers they are about: a
// connected socket's to its one peer, another's to the destinations in to
// (where the socket tells them: Linux's IP_RECVERR, see enableRecvErr;
// elsewhere an unconnected socket's peers that vanish show only through
// their idle timeout).
func (ep *Endpoint) refused(now time.Time, to []Key) {
	if ep.sock.Connected() {
		for _, p := range ep.snapshot() {
			p.Refused(now)
		}
		return
	}
	for _, k := range to {
		ep.mu.Lock()
		p := ep.peers.get(k)
		ep.mu.Unlock()
		if p != nil {
			p.Refused(now)
		}
	}
}

// stop ends every Peer after a socket failed or was closed, once; the
// other sockets of a group are closed, which stops their readers.
func (ep *Endpoint) stop(err error) {
	ep.stopped.Do(func() {
		ep.mu.Lock()
		ep.readErr = err
		ep.newPeer = nil
		ep.mu.Unlock()
		ep.closeMore()
		for _, p := range ep.snapshot() {
			p.Stopped()
		}
	})
}

// closeMore closes the other sockets of a group.
func (ep *Endpoint) closeMore() {
	for _, s := range ep.more {
		_ = s.pc.Close()
	}
}

// snapshot returns the registered Peers, to be called outside ep.mu
// (lock order: a Peer's lock, then ep.mu).
func (ep *Endpoint) snapshot() []Peer {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.peers.peers()
}

// Add registers p under its address; it takes a reference. It returns
// false if the address already has a Peer or the endpoint has stopped.
func (ep *Endpoint) Add(p Peer) bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.readErr != nil || ep.peers.get(p.Key()) != nil {
		return false
	}
	ep.peers.add(p.Key(), p)
	ep.refs++
	return true
}

// Remove unregisters p and drops its reference; the table gives back
// the room of ended associations (see peerTable).
func (ep *Endpoint) Remove(p Peer) {
	ep.mu.Lock()
	ep.peers.remove(p.Key(), p)
	ep.mu.Unlock()
	ep.Release()
}

// Release drops one reference; the last one closes the PacketConn.
func (ep *Endpoint) Release() {
	ep.mu.Lock()
	ep.refs--
	last := ep.refs == 0 && !ep.released
	if last {
		ep.released = true
	}
	ep.mu.Unlock()
	if last {
		_ = ep.sock.pc.Close()
		ep.closeMore()
	}
}

// Peers returns the registered Peers, to be called outside any Peer's
// lock.
func (ep *Endpoint) Peers() []Peer { return ep.snapshot() }

// Peer returns the Peer registered under k, nil if none.
func (ep *Endpoint) Peer(k Key) Peer {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.peers.get(k)
}
