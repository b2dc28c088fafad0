package socket

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// batchReader reads up to n datagrams per recvmmsg(2), decoding each
// sender's address in place: golang.org/x/net/ipv4's ReadBatch allocates
// a net.Addr for every datagram (internal/socket, mmsghdrs.unpack), which
// is most of the garbage a busy endpoint makes.
//
// Idle, a reader holds no receive buffers: only its headers, iovecs and
// address scratch (under 4 KiB with n = readBatch). Its buffer set, n
// buffers of size bytes and their control message room (512 KiB for a
// listener with GRO, 128 KiB for a connected socket with GRO, 32 of
// 2,049 bytes without), comes from the process-wide pool of its shape
// when a read attempt starts, and goes back when recvmmsg finds the
// socket empty, before the raw conn waits for the socket to be readable.
// That is in the Read after the one that returned the messages in the
// set: the caller is done with them. Under load, while each attempt finds
// datagrams, the reader keeps the same set: no pool traffic. A program
// with many idle sockets (a dialed conn has one each) thus holds buffers
// in proportion to the sockets with datagrams waiting, not to the
// sockets. The pool keeps at most maxFreeSets sets of each shape (see
// recvPool); a set given back beyond them is left to the garbage
// collector.
type batchReader struct {
	uc    *net.UDPConn
	rc    syscall.RawConn
	pool  *recvPool // of this reader's shape
	set   *recvSet  // the buffers hs point into; nil while idle
	hs    []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6
	recv  func(fd uintptr) bool // r.recvmmsg, bound once
	n     int
	errno syscall.Errno

	zoneIndex uint32 // the last IPv6 zone seen, and its name
	zoneName  string

	// With IP_RECVERR on (see enableRecvErr): the destinations that
	// answered port unreachable, and scratch to read the error queue.
	errq    *errQueue    // nil without IP_RECVERR
	sendErr *atomic.Bool // raised when a send took the socket's ICMP error (see endpoint.sendErr)
	unreach []Key
}

// recvSet is one batch reader's receive buffers, as its pool holds them.
type recvSet struct{ ms []Received }

// recvShape is the shape of a batch reader's buffers: n of size bytes.
type recvShape struct{ n, size int }

// recvPool is the free list of buffer sets of one shape, shared by the
// readers of that shape in the process. A mutex and a slice, not a
// sync.Pool: a fast stream's reader gives its set back every time the
// socket runs dry, many times between two garbage collections, and a
// sync.Pool emptied by each collection (frequent with a small heap) made
// it allocate a new set most times.
type recvPool struct {
	shape recvShape
	mu    sync.Mutex
	free  []*recvSet
}

// maxFreeSets bounds the sets a recvPool keeps: about as many readers as
// can run at once take one, and at most one set per running reader is
// given back between two reads of that reader.
var maxFreeSets = 4*runtime.GOMAXPROCS(0) + 4

// get returns a set from the free list, or a new one.
func (p *recvPool) get() *recvSet {
	p.mu.Lock()
	if k := len(p.free); k > 0 {
		s := p.free[k-1]
		p.free[k-1] = nil
		p.free = p.free[:k-1]
		p.mu.Unlock()
		return s
	}
	p.mu.Unlock()
	return &recvSet{ms: newReceived(p.shape.n, p.shape.size)}
}

// put keeps s for the next get, unless maxFreeSets are kept already.
func (p *recvPool) put(s *recvSet) {
	p.mu.Lock()
	if len(p.free) < maxFreeSets {
		p.free = append(p.free, s)
	}
	p.mu.Unlock()
}

// recvPools holds the pool of buffer sets of each shape (there are three
// in use, see Socket.NewReader): readers of one shape share theirs.
var recvPools struct {
	mu sync.Mutex
	m  map[recvShape]*recvPool
}

// poolOf returns the pool of buffer sets of n buffers of size bytes.
func poolOf(n, size int) *recvPool {
	recvPools.mu.Lock()
	defer recvPools.mu.Unlock()
	sh := recvShape{n, size}
	p := recvPools.m[sh]
	if p == nil {
		p = &recvPool{shape: sh}
		if recvPools.m == nil {
			recvPools.m = make(map[recvShape]*recvPool)
		}
		recvPools.m[sh] = p
	}
	return p
}

// mmsghdr is struct mmsghdr of recvmmsg(2).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// newBatchReader returns a reader of n datagrams at a time into buffers of
// size bytes; one that reads a datagram at a time if uc has no raw conn.
// With sendErr, uc has IP_RECVERR on and the reader takes the ICMP
// errors queued on it; sendErr is raised when a send took the error
// report instead of a read.
func newBatchReader(uc *net.UDPConn, n, size int, sendErr *atomic.Bool, largest int) Reader {
	rc, err := uc.SyscallConn()
	if err != nil {
		return &pcReader{pc: uc, ms: newReceived(1, largest+1)}
	}
	r := &batchReader{
		uc:    uc,
		rc:    rc,
		pool:  poolOf(n, size),
		hs:    make([]mmsghdr, n),
		iovs:  make([]unix.Iovec, n),
		names: make([]unix.RawSockaddrInet6, n),
	}
	if sendErr != nil {
		r.errq, r.sendErr = newErrQueue(), sendErr
	}
	r.recv = r.recvmmsg
	for i := range r.hs {
		r.iovs[i].SetLen(size)
		h := &r.hs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&r.names[i]))
		h.Iov = &r.iovs[i]
		h.SetIovlen(1)
	}
	return r
}

// attach takes a buffer set from the pool and points the headers at it.
func (r *batchReader) attach() {
	r.set = r.pool.get()
	for i := range r.hs {
		m := &r.set.ms[i]
		r.iovs[i].Base = &m.buf[0]
		if len(m.oob) > 0 {
			r.hs[i].hdr.Control = &m.oob[0]
		}
	}
}

// release gives the buffer set back to the pool, and clears the headers'
// pointers into it, so that the reader keeps none of it alive.
func (r *batchReader) release() {
	for i := range r.hs {
		r.iovs[i].Base = nil
		r.hs[i].hdr.Control = nil
	}
	r.pool.put(r.set)
	r.set = nil
}

// Read implements Reader.
func (r *batchReader) Read() ([]Received, error) {
	for i := range r.hs {
		h := &r.hs[i].hdr
		h.Namelen = unix.SizeofSockaddrInet6
		h.SetControllen(oobSize)
		h.Flags = 0
	}
	err := r.rc.Read(r.recv)
	if err == nil && r.errno != 0 {
		err = os.NewSyscallError("recvmmsg", r.errno)
	}
	if err != nil {
		return nil, &net.OpError{Op: "read", Net: r.uc.LocalAddr().Network(), Source: r.uc.LocalAddr(), Err: err}
	}
	ms := r.set.ms[:r.n]
	for i := range ms {
		h, m := &r.hs[i].hdr, &ms[i]
		m.n, m.nn, m.flags = int(r.hs[i].n), int(h.Controllen), int(h.Flags)
		if !r.sender(m, i) {
			m.n = 0 // not from an IP address: nothing to take
		}
	}
	return ms, nil
}

// recvmmsg is the raw conn's read function: it reports false to wait
// until the socket is readable. With IP_RECVERR, when the socket reports
// an error, or a send took the report since the last look, it takes the
// queued errors (an ICMP error is always reported once, to a read or a
// send, so the queue is never left to fill); any port unreachable among
// them makes the read fail with ECONNREFUSED, so that the endpoint
// reports them.
//
// It reads into the reader's buffer set, taking one from the pool if it
// has none, and gives the set back when the socket has no datagram: the
// caller of Read is done with the last read's messages by then, and the
// reader holds no buffers while it waits.
func (r *batchReader) recvmmsg(fd uintptr) bool {
	if r.set == nil {
		r.attach()
	}
	n, errno, ready := mmsg(unix.SYS_RECVMMSG, fd, r.hs)
	if !ready {
		r.release()
	}
	if r.errq != nil && (errno != 0 || r.sendErr.Load() && r.sendErr.Swap(false)) {
		if r.unreach = r.errq.read(fd, r.unreach); len(r.unreach) > 0 {
			n, errno, ready = 0, unix.ECONNREFUSED, true
		}
	}
	if ready {
		r.n, r.errno = n, errno
	}
	return ready
}

// unreachable returns the destinations that answered port unreachable
// since the last call.
func (r *batchReader) Unreachable() []Key {
	u := r.unreach
	r.unreach = r.unreach[:0]
	return u
}

// mmsg makes system call trap, recvmmsg(2) or sendmmsg(2), on fd with the
// headers hs, again after EINTR, and returns how many messages it moved
// and its error. It reports ready false on EAGAIN: the raw conn then
// waits until the socket is ready. The socket is non-blocking, so the
// call never blocks and goes through RawSyscall6 (see mmsgConn).
func mmsg(trap, fd uintptr, hs []mmsghdr) (n int, errno syscall.Errno, ready bool) {
	for {
		r, _, e := unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(len(hs)), 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, 0, false
		}
		return int(r), e, true
	}
}

// sender decodes the address of datagram i into m, and reports whether it
// is an IPv4 or IPv6 one.
func (r *batchReader) sender(m *Received, i int) bool {
	sa := &r.names[i]
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
	var ip netip.Addr
	switch sa.Family {
	case unix.AF_INET:
		ip = netip.AddrFrom4((*unix.RawSockaddrInet4)(unsafe.Pointer(sa)).Addr)
	case unix.AF_INET6:
		ip = netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 {
			ip = ip.WithZone(r.zone(sa.Scope_id))
		}
	default:
		return false
	}
	m.from, m.addr = netip.AddrPortFrom(ip, port), nil
	m.key = Key{ap: netip.AddrPortFrom(ip.Unmap(), port)}
	return true
}

// zone returns the name of interface index, as net.UDPAddr.Zone holds
// it, or the index in decimal if it has none. It remembers the last one,
// so that a link-local peer costs no lookup per datagram.
func (r *batchReader) zone(index uint32) string {
	if index != r.zoneIndex {
		r.zoneIndex, r.zoneName = index, strconv.FormatUint(uint64(index), 10)
		if ifi, err := net.InterfaceByIndex(int(index)); err == nil {
			r.zoneName = ifi.Name
		}
	}
	return r.zoneName
}
