package socket

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An unconnected UDP socket (a listener's, or a PacketConn given to
// Client) hears nothing of the ICMP errors its datagrams cause, unless
// IP_RECVERR (IPV6_RECVERR) is on: the kernel then queues each error,
// with the destination of the datagram that caused it, on the socket's
// error queue (ip(7), ipv6(7)), and reports ECONNREFUSED on the next call.
// The reader takes the port unreachable ones from the queue and reports
// them to the association of that destination, which applies the same
// rule as a connected socket's refusals (see refusals).

// maxUnreachable bounds the errors taken from the queue per read: the
// queue itself is bounded by the socket's receive buffer.
const maxUnreachable = 64

// enableRecvErr turns on IP_RECVERR (and IPV6_RECVERR on an IPv6 socket)
// on uc and reports whether it is on.
func enableRecvErr(uc *net.UDPConn) bool {
	rc, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	on := false
	_ = rc.Control(func(fd uintptr) {
		v4 := unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVERR, 1) == nil
		v6 := unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVERR, 1) == nil
		on = v4 || v6
	})
	return on
}

// errQueue reads a socket's error queue without allocating: one
// recvmsg(2) with MSG_ERRQUEUE into buffers it keeps.
type errQueue struct {
	hdr  unix.Msghdr
	iov  unix.Iovec
	name unix.RawSockaddrInet6
	buf  [64]byte  // the start of the datagram that caused the error
	oob  [512]byte // the IP_RECVERR control message
}

func newErrQueue() *errQueue {
	q := new(errQueue)
	q.iov.Base = &q.buf[0]
	q.iov.SetLen(len(q.buf))
	q.hdr.Name = (*byte)(unsafe.Pointer(&q.name))
	q.hdr.Iov = &q.iov
	q.hdr.SetIovlen(1)
	q.hdr.Control = &q.oob[0]
	return q
}

// read takes the queued errors of socket fd, without blocking, and
// appends to to the destinations that answered port unreachable
// (ECONNREFUSED), at most maxUnreachable of them in all. Other errors
// (host unreachable, a too-big datagram) are taken and dropped: the
// engines recover from them as from loss.
func (q *errQueue) read(fd uintptr, to []Key) []Key {
	for len(to) < maxUnreachable {
		q.hdr.Namelen = unix.SizeofSockaddrInet6
		q.hdr.SetControllen(len(q.oob))
		q.hdr.Flags = 0
		_, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&q.hdr)), unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return to // EAGAIN: the queue is empty
		}
		if k, ok := q.unreachable(); ok {
			to = append(to, k)
		}
	}
	return to
}

// unreachable reports the destination of the error just read if its
// control message says port unreachable.
func (q *errQueue) unreachable() (Key, bool) {
	oob := q.oob[:min(int(q.hdr.Controllen), len(q.oob))]
	refused := false
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < unix.SizeofCmsghdr || n > len(oob) {
			break
		}
		data := oob[unix.CmsgLen(0):n]
		ip := h.Level == unix.IPPROTO_IP && h.Type == unix.IP_RECVERR
		ip6 := h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_RECVERR
		// struct sock_extended_err starts with ee_errno, a u32 in the
		// host's order.
		if (ip || ip6) && len(data) >= 4 && syscall.Errno(binary.NativeEndian.Uint32(data)) == syscall.ECONNREFUSED {
			refused = true
		}
		oob = oob[min(unix.CmsgSpace(n-unix.CmsgLen(0)), len(oob)):]
	}
	if !refused {
		return Key{}, false
	}
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&q.name.Port))[:])
	var ip netip.Addr
	switch q.name.Family {
	case unix.AF_INET:
		ip = netip.AddrFrom4((*unix.RawSockaddrInet4)(unsafe.Pointer(&q.name)).Addr)
	case unix.AF_INET6:
		ip = netip.AddrFrom16(q.name.Addr).Unmap()
	default:
		return Key{}, false
	}
	return Key{ap: netip.AddrPortFrom(ip, port)}, true
}
