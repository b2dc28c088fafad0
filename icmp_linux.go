package rudp

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"

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

// readUnreachable takes the queued errors of socket fd, without blocking,
// and appends to to the destinations that answered port unreachable
// (ECONNREFUSED), at most maxUnreachable of them in all. Other errors
// (host unreachable, a too-big datagram) are taken and dropped: the
// engines recover from them as from loss. buf and oob are scratch.
func readUnreachable(fd uintptr, to []addrKey, buf, oob []byte) []addrKey {
	for len(to) < maxUnreachable {
		_, oobn, _, from, err := unix.Recvmsg(int(fd), buf, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if err != nil {
			return to // EAGAIN: the queue is empty
		}
		if k, ok := unreachableFrom(oob[:oobn], from); ok {
			to = append(to, k)
		}
	}
	return to
}

// unreachableFrom reports the destination of a queued error whose control
// message says port unreachable.
func unreachableFrom(oob []byte, from unix.Sockaddr) (addrKey, bool) {
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return addrKey{}, false
	}
	refused := false
	for _, cm := range cms {
		ip := cm.Header.Level == unix.IPPROTO_IP && cm.Header.Type == unix.IP_RECVERR
		ip6 := cm.Header.Level == unix.IPPROTO_IPV6 && cm.Header.Type == unix.IPV6_RECVERR
		// struct sock_extended_err starts with ee_errno, a u32 in the
		// host's order.
		if (ip || ip6) && len(cm.Data) >= 4 && syscall.Errno(binary.NativeEndian.Uint32(cm.Data)) == syscall.ECONNREFUSED {
			refused = true
		}
	}
	var ap netip.AddrPort
	switch sa := from.(type) {
	case *unix.SockaddrInet4:
		ap = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
	default:
		return addrKey{}, false
	}
	return addrKey{ap: ap}, refused
}
