package rudp

import (
	"log/slog"
	"net"
	"sync"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/socket"
)

// Large frames. Between two rudp stream peers on one host, the path is
// the loopback interface, whose MTU (65,536 bytes on Linux) is far above
// the 1472 bytes a POROUS datagram has on the Internet; the kernel's own
// TCP uses it whole. A POROUS stream whose peer is on a loopback address
// sends Data frames of up to 64 KB (44 fragments, engine.LargeFramer)
// once the peer's HELLO has shown that it takes them (stream version 3),
// and so pays its costs per datagram (system calls, seal,
// acknowledgement, congestion control) once per 44 fragments. Every
// other stream, and every message conn, keeps its protocol's bound.
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

// newEndpoint wraps pc in the socket layer's endpoint (see
// socket.NewEndpoint): datagrams up to maxLarge are taken.
func newEndpoint(pc net.PacketConn, connected bool, log *slog.Logger) *socket.Endpoint {
	return socket.NewEndpoint(pc, connected, maxLarge, log)
}
