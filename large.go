package rudp

import (
	"cmp"
	"net"
	"sync"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/socket"
)

// Large frames. Between two rudp stream peers on one host, the path is
// the loopback interface, whose MTU (65,536 bytes on Linux) is far above
// the 1472 bytes a POROUS datagram has on the Internet; the kernel's own
// TCP uses it whole. A POROUS stream whose peer is on a loopback address,
// at the loopback's RTT (below localRTT), sends Data frames of up to
// 64 KB (44 fragments, engine.LargeFramer) once the peer's HELLO has
// shown that it takes them (stream version 3), and so pays its costs per
// datagram (system calls, seal, acknowledgement, congestion control) once
// per 44 fragments. Every other stream, and every message conn, keeps its
// protocol's bound.
//
// The first large frames probe the path: if one is lost before one has
// been acknowledged (a relay on the loopback address forwarding to a
// smaller MTU at a loopback's RTT, a receiver without UDP receive offload
// whose read buffers are socket.MaxDatagram bytes), the engine gives large
// frames up and resends what they carried in frames of the usual size,
// without taking the loss for congestion (see porous.Session.SetMaxFrame).

// maxLarge is the largest datagram sent or taken (a large frame and its
// seal).
const maxLarge = engine.MaxLargeDatagram

// largeBatch is how many large datagrams an association sends per
// sendmmsg: as many bytes as socket.SendBatch datagrams of 16 KiB.
const largeBatch = 4

// largePool holds the send buffers of associations that send large
// frames, as sendPool those of the others.
var largePool = sync.Pool{New: func() any { return newSendBufs(largeBatch, maxLarge) }}

// loopbackMTU is the MTU of the host's loopback interface, 0 if there is
// none or it cannot be read.
var loopbackMTU = sync.OnceValue(func() int {
	ifs, err := net.Interfaces()
	if err != nil {
		return 0
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 && i.Flags&net.FlagUp != 0 {
			return i.MTU
		}
	}
	return 0
})

// largeFrame returns the largest frame to send to raddr, in bytes, if
// it is above the protocol's usual bound (lf's FrameSizes): raddr must be
// a loopback address, and the frame, its seal and the IP and UDP headers
// fit the loopback MTU. It returns 0 otherwise.
func largeFrame(lf engine.LargeFramer, raddr net.Addr, mtu int) int {
	ua, ok := raddr.(*net.UDPAddr)
	if !ok || !ua.IP.IsLoopback() {
		return 0
	}
	headers := 20 + 8
	if ua.IP.To4() == nil {
		headers = 40 + 8
	}
	usual, large := lf.FrameSizes()
	if n := min(large, mtu-headers-socket.SealLen); n > usual {
		return n
	}
	return 0
}

// localRTT is the smoothed RTT below which a path to a loopback address
// is taken for the loopback interface itself, which answers in tens of
// microseconds; a relay listening on the loopback address in front of a
// real path answers in that path's RTT, and gets no large frames.
const localRTT = time.Millisecond

// useLarge lets the engine send large frames, given the path's smoothed
// RTT, once the conn is open (the peer's HELLO has arrived, and a
// listener's peer has shown that it receives, which lifts the
// amplification limit that would otherwise drop a large frame as if the
// path had), if the engine can, the address and MTU allow, and srtt is
// below localRTT; while only srtt stands in the way it asks again at the
// next call. Call with the lock held.
func (c *Conn) useLarge(srtt time.Duration) {
	if c.largeChecked || !c.opened {
		return
	}
	lf, ok := c.a.eng.(engine.LargeFramer)
	if !ok || largeFrame(lf, c.raddr, loopbackMTU()) == 0 {
		c.largeChecked = true
		return
	}
	if srtt <= 0 || srtt >= cmp.Or(c.cfg.largeRTT, localRTT) {
		return
	}
	c.largeChecked = true
	lf.SetMaxFrame(largeFrame(lf, c.raddr, loopbackMTU()))
	c.a.sendsLarge = true
}
