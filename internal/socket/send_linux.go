package socket

import (
	"encoding/binary"
	"net"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// mmsgConn sends batches of datagrams on a *net.UDPConn with one
// sendmmsg(2) each, laying the messages out in the caller's Scratch,
// so that a send allocates nothing.
//
// Its system calls, like the batch reader's recvmmsg, go through
// unix.RawSyscall6, not unix.Syscall6: the socket is non-blocking, so
// they never block (a full buffer is EAGAIN, and the goroutine then waits
// in the poller as usual). Syscall6 tells the scheduler a system call is
// under way, which wakes its monitor thread whenever the process was idle:
// with idle conns, whose every keepalive wakes an idle process, those
// wake-ups cost as much CPU time as the sends themselves.
type mmsgConn struct {
	uc *net.UDPConn
	rc syscall.RawConn
	v4 bool // the socket is AF_INET: peers go as sockaddr_in, else sockaddr_in6
}

// newBatchConn returns the batch interface of pc, or nil where batching
// does not apply.
func newBatchConn(pc net.PacketConn) batchConn {
	uc, ok := pc.(*net.UDPConn)
	if !ok {
		return nil
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil
	}
	la, _ := uc.LocalAddr().(*net.UDPAddr)
	return &mmsgConn{uc: uc, rc: rc, v4: la != nil && la.IP.To4() != nil}
}

// mmsgScratch is the room a sendmmsg call's messages are laid out in,
// and the call's outcome. It is not copied once used: send is bound to
// its address.
type mmsgScratch struct {
	hs    []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // also holds a sockaddr_in

	send  func(fd uintptr) bool // s.sendmmsg, bound once
	count int                   // messages laid out in hs
	n     int                   // messages sent
	errno syscall.Errno
}

// sendmmsg is the raw conn's write function: it reports false to wait
// until the socket is writable.
func (s *mmsgScratch) sendmmsg(fd uintptr) bool {
	n, errno, ready := mmsg(unix.SYS_SENDMMSG, fd, s.hs[:s.count])
	if ready {
		s.n, s.errno = n, errno
	}
	return ready
}

// WriteBatch implements batchConn: it sends ms with one sendmmsg and
// returns how many messages the kernel took; an error that ended the call
// before the first one is returned with 0.
func (c *mmsgConn) WriteBatch(ms []ipv4.Message, sc *Scratch) (int, error) {
	if len(ms) == 0 {
		return 0, nil
	}
	s := &sc.sys
	if err := c.pack(s, ms); err != nil {
		return 0, c.opError(err)
	}
	if s.send == nil {
		s.send = s.sendmmsg
	}
	s.count = len(ms)
	err := c.rc.Write(s.send)
	if err == nil && s.errno != 0 {
		err = os.NewSyscallError("sendmmsg", s.errno)
	}
	if err != nil {
		return 0, c.opError(err)
	}
	return s.n, nil
}

func (c *mmsgConn) opError(err error) error {
	return &net.OpError{Op: "write", Net: c.uc.LocalAddr().Network(), Source: c.uc.LocalAddr(), Err: err}
}

// pack lays ms out in s: a header per message, an iovec per buffer and
// the peer's address, if any. s grows only when ms needs more room than
// any batch before.
func (c *mmsgConn) pack(s *mmsgScratch, ms []ipv4.Message) error {
	bufs := 0
	for i := range ms {
		bufs += len(ms[i].Buffers)
	}
	if len(s.hs) < len(ms) {
		s.hs = make([]mmsghdr, len(ms))
		s.names = make([]unix.RawSockaddrInet6, len(ms))
	}
	if len(s.iovs) < bufs {
		s.iovs = make([]unix.Iovec, bufs)
	}
	iovs := s.iovs
	for i := range ms {
		m, h := &ms[i], &s.hs[i].hdr
		*h = unix.Msghdr{}
		iov := iovs[:len(m.Buffers)]
		iovs = iovs[len(m.Buffers):]
		for j, b := range m.Buffers {
			iov[j] = unix.Iovec{}
			if len(b) > 0 {
				iov[j].Base = &b[0]
			}
			iov[j].SetLen(len(b))
		}
		if len(iov) > 0 {
			h.Iov = &iov[0]
			h.SetIovlen(len(iov))
		}
		if len(m.OOB) > 0 {
			h.Control = &m.OOB[0]
			h.SetControllen(len(m.OOB))
		}
		if m.Addr != nil {
			n, err := c.putAddr(&s.names[i], m.Addr)
			if err != nil {
				return err
			}
			h.Name = (*byte)(unsafe.Pointer(&s.names[i]))
			h.Namelen = n
		}
	}
	return nil
}

// putAddr writes a, a *net.UDPAddr, into sa in the socket's family (an
// IPv4 peer of an IPv6 socket as a v4-mapped address) and returns its
// length.
func (c *mmsgConn) putAddr(sa *unix.RawSockaddrInet6, a net.Addr) (uint32, error) {
	ua, ok := a.(*net.UDPAddr)
	if !ok {
		return 0, net.InvalidAddrError("not a UDP address: " + a.String())
	}
	ap := ua.AddrPort()
	ip := ap.Addr()
	if c.v4 {
		ip = ip.Unmap()
		if !ip.Is4() {
			return 0, syscall.EAFNOSUPPORT
		}
		s4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*s4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ip.As4()}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&s4.Port))[:], ap.Port())
		return unix.SizeofSockaddrInet4, nil
	}
	if !ip.IsValid() {
		return 0, syscall.EAFNOSUPPORT
	}
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ip.As16()}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], ap.Port())
	if z := ip.Zone(); z != "" {
		sa.Scope_id = zoneIndex(z)
	}
	return unix.SizeofSockaddrInet6, nil
}

// zoneIndex returns the interface index an IPv6 zone names: a number, or
// an interface's name (0 if there is none).
func zoneIndex(zone string) uint32 {
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n)
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	return 0
}
