package socket

import (
	"encoding/binary"
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Segmentation offload (Linux): with UDP GSO one sendmsg carries a run of
// equal-size datagrams that the kernel splits; with UDP GRO the kernel
// hands over several datagrams of one peer joined, with their size in a
// control message. Both cut the per-datagram cost of the system calls.

// enableOffload turns on GSO and GRO on uc where the kernel supports them
// and reports which are on.
func enableOffload(uc *net.UDPConn) (gso, gro bool) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return false, false
	}
	_ = rc.Control(func(fd uintptr) {
		_, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
		gso = err == nil
		gro = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
	})
	return gso, gro
}

// oobSize is the room for one control message carrying an int.
var oobSize = unix.CmsgSpace(4)

// putSegmentSize writes into oob (at least oobSize bytes) the control
// message that asks for GSO with segments of size bytes, and returns it.
func putSegmentSize(oob []byte, size int) []byte {
	oob = oob[:unix.CmsgSpace(2)]
	clear(oob)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.IPPROTO_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(oob[unix.CmsgLen(0):], uint16(size))
	return oob
}

// segmentSize returns the size of the datagrams the kernel joined, read
// from the control messages of a receive, or 0 if it joined none.
// It walks the headers in place: unix.ParseSocketControlMessage would
// allocate for every receive.
func segmentSize(oob []byte) int {
	hdr := unix.CmsgLen(0)
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		if h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_GRO && l >= unix.CmsgLen(4) {
			return int(binary.NativeEndian.Uint32(oob[hdr:]))
		}
		oob = oob[min(unix.CmsgSpace(l-hdr), len(oob)):]
	}
	return 0
}
