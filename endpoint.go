package rudp

import (
	"cmp"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
)

// endpoint owns one net.PacketConn: one reader goroutine demultiplexes
// datagrams by remote address to associations, and every association sends
// through it. The PacketConn is closed when the last user (listener or
// association) releases it.
type endpoint struct {
	pc        net.PacketConn
	connected bool        // pc is a connected *net.UDPConn: send without address
	batch     batchConn   // batched I/O on pc, or nil
	gso       atomic.Bool // send with UDP segmentation offload
	gro       bool        // receive with UDP receive offload
	recvErr   bool        // pc, not connected, reports ICMP errors (see enableRecvErr)
	sendErr   atomic.Bool // with recvErr: a send took an ICMP error report, which the reader must look up
	log       *slog.Logger

	mu       sync.Mutex
	assocs   map[addrKey]*assoc
	peak     int // the most entries assocs has held (see remove)
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
	if uc, ok := pc.(*net.UDPConn); ok {
		// Best effort: a larger socket buffer absorbs bursts of a full
		// window; the kernel caps it at its configured maximum.
		_ = uc.SetReadBuffer(4 << 20)
		_ = uc.SetWriteBuffer(4 << 20)
	}
	ep := &endpoint{
		pc:        pc,
		connected: connected,
		batch:     newBatchConn(pc),
		log:       log,
		assocs:    make(map[addrKey]*assoc),
		refs:      1,
		done:      make(chan struct{}),
	}
	if ep.batch != nil {
		uc := pc.(*net.UDPConn)
		gso, gro := enableOffload(uc)
		ep.gso.Store(gso)
		ep.gro = gro
		ep.recvErr = !connected && enableRecvErr(uc)
	}
	return ep
}

// refusedSend reports whether a send's error is an ICMP port unreachable
// from a connected socket's peer. On an unconnected socket with
// IP_RECVERR, the report belongs to whichever destination the error
// queue names: the reader is told to look it up.
func (ep *endpoint) refusedSend(err error) bool {
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	if ep.recvErr {
		ep.sendErr.Store(true)
	}
	return ep.connected
}

// sendErrFlag returns the flag a send raises when it takes an ICMP error
// report (see batchReader.recvmmsg), or nil without IP_RECVERR.
func (ep *endpoint) sendErrFlag() *atomic.Bool {
	if !ep.recvErr {
		return nil
	}
	return &ep.sendErr
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
	r := newReader(ep)
	for {
		ms, err := r.read()
		if err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) {
				ep.refused(time.Now(), r.unreachable())
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
			data := m.buf[:m.n]
			seg := len(data)
			if ep.gro {
				seg = cmp.Or(segmentSize(m.oob[:m.nn]), seg)
			}
			if seg > maxLarge || m.flags&syscall.MSG_TRUNC != 0 {
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
func (ep *endpoint) dispatch(data []byte, seg int, m *received, now time.Time) (int, *assoc) {
	ep.mu.Lock()
	a := ep.assocs[m.key]
	newPeer := ep.newPeer
	ep.mu.Unlock()
	n := min(seg, len(data))
	if seg > maxDatagram && (a == nil || !a.takesLarge) {
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
	newPeer(data[:min(seg, len(data))], m.sender(), now)
	return n, nil
}

// refused reports ICMP port unreachables to the associations of the
// peers they are about: a connected socket's to its one peer, another's
// to the destinations in to (where the socket tells them: Linux's
// IP_RECVERR, see enableRecvErr; elsewhere an unconnected socket's peers
// that vanish show only through the idle timeout).
func (ep *endpoint) refused(now time.Time, to []addrKey) {
	if ep.connected {
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
	ep.peak = max(ep.peak, len(ep.assocs))
	ep.refs++
	return true
}

// shrinkPeak is the least peak of entries whose room remove gives back.
const shrinkPeak = 64

// remove unregisters a and drops its reference. A Go map keeps the room
// it grew to: once its entries fall to a quarter of their peak (of at
// least shrinkPeak), the associations move to a new map, so that a
// listener whose conns ended keeps only what its live ones need.
func (ep *endpoint) remove(a *assoc) {
	ep.mu.Lock()
	if ep.assocs[a.key] == a {
		delete(ep.assocs, a.key)
	}
	if n := len(ep.assocs); ep.peak >= shrinkPeak && n <= ep.peak/4 {
		m := make(map[addrKey]*assoc, n)
		maps.Copy(m, ep.assocs)
		ep.assocs, ep.peak = m, n
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

// send transmits the datagrams bufs to to, using sc for the messages. With
// GSO, each run of equal-size datagrams (the last of a run may be shorter)
// goes as one message. It returns how many datagrams the socket refused (a
// full socket buffer, a vanished route): they count as losses, which the
// engines recover from. refused reports that a connected socket failed a
// send with syscall.ECONNREFUSED: an ICMP port unreachable from the peer,
// reported by this send rather than by the next read.
func (ep *endpoint) send(sc *sendScratch, bufs [][]byte, to net.Addr) (failed uint64, refused bool) {
	if ep.connected {
		to = nil
	}
	for len(bufs) > 0 {
		if ep.batch == nil {
			var err error
			if ep.connected {
				_, err = ep.pc.(*net.UDPConn).Write(bufs[0])
			} else {
				_, err = ep.pc.WriteTo(bufs[0], to)
			}
			if err != nil {
				failed++
				refused = refused || ep.refusedSend(err)
			}
			bufs = bufs[1:]
			continue
		}
		gso := ep.gso.Load()
		ms := sc.messages(bufs, to, gso)
		n, err := ep.batch.WriteBatch(ms, sc)
		n = max(n, 0)
		if err == nil && n < len(ms) {
			err = io.ErrShortWrite // never spin on a call that sent nothing
		}
		for _, m := range ms[:n] {
			bufs = bufs[len(m.Buffers):]
		}
		if err == nil || n == len(ms) {
			continue
		}
		if gso && len(ms[n].Buffers) > 1 && (errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EINVAL)) {
			ep.gso.Store(false) // the path cannot segment: send one by one from now on
			continue
		}
		failed += uint64(len(ms[n].Buffers))
		refused = refused || ep.refusedSend(err)
		bufs = bufs[len(ms[n].Buffers):]
	}
	return failed, refused
}

// GSO bounds: one segmented message carries at most maxSegments
// datagrams (64, the kernel's UDP_MAX_SEGMENTS wherever UDP GSO exists;
// recent kernels take more) and at most maxGSOBytes of
// UDP payload, what one IPv4 packet holds (65535 less the IPv4 and UDP
// headers). A longer run is split into several messages: the kernel
// would fail the whole message with EMSGSIZE.
const (
	maxSegments = 64
	maxGSOBytes = 65535 - 20 - 8
)

// sendScratch holds an association's messages for send, so that sending
// allocates nothing.
type sendScratch struct {
	ms   []ipv4.Message
	oobs [][]byte
	sys  mmsgScratch // the system's layout of ms
}

func newSendScratch(n int) sendScratch {
	sc := sendScratch{ms: make([]ipv4.Message, n), oobs: make([][]byte, n)}
	for i := range sc.oobs {
		sc.oobs[i] = make([]byte, oobSize)
	}
	return sc
}

// messages lays bufs out as messages to to, grouping runs for GSO.
func (sc *sendScratch) messages(bufs [][]byte, to net.Addr, gso bool) []ipv4.Message {
	k := 0
	for i := 0; i < len(bufs) && k < len(sc.ms); k++ {
		size, j := len(bufs[i]), i+1
		most := min(maxSegments, maxGSOBytes/max(size, 1))
		for gso && j < len(bufs) && j-i < most && len(bufs[j-1]) == size && len(bufs[j]) <= size {
			j++
		}
		m := &sc.ms[k]
		m.Buffers, m.Addr, m.OOB = bufs[i:j], to, nil
		if j-i > 1 {
			m.OOB = putSegmentSize(sc.oobs[k], size)
		}
		i = j
	}
	return sc.ms[:k]
}

// addrKey identifies a remote address: UDP addresses by value, without
// allocating, other address types by their string.
type addrKey struct {
	ap netip.AddrPort
	s  string
}

func keyOf(a net.Addr) addrKey {
	if ua, ok := a.(*net.UDPAddr); ok {
		ap := ua.AddrPort()
		return addrKey{ap: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())}
	}
	return addrKey{s: a.String()}
}
