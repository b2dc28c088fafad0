package rudp

import (
	"net"
	"runtime"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Batched I/O: on Linux, a *net.UDPConn reads up to readBatch datagrams
// per recvmmsg and an association sends up to sendBatch datagrams per
// sendmmsg. Other PacketConns, and other systems, use one ReadFrom or
// WriteTo per datagram through the same code.
const (
	readBatch = 32
	groBatch  = 8 // with GRO, each read buffer holds up to 64 KiB of joined datagrams
	// groBatchConnected is groBatch for a connected socket (a dialed
	// conn's): its one peer's datagrams are joined already, and a program
	// with many conns should not hold half a MiB of buffers for each.
	groBatchConnected = 2
	sendBatch         = 16
	maxDatagram       = 2048 // largest datagram taken; larger ones are dropped
)

// batchConn is what ipv4.PacketConn and ipv6.PacketConn share for
// sending (reads go through a reader: see newReader).
type batchConn interface {
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// newBatchConn returns the batch interface of pc, or nil where batching
// does not apply.
func newBatchConn(pc net.PacketConn) batchConn {
	uc, ok := pc.(*net.UDPConn)
	if !ok || runtime.GOOS != "linux" {
		return nil
	}
	if la, ok := uc.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() == nil {
		return ipv6.NewPacketConn(uc)
	}
	return ipv4.NewPacketConn(uc)
}
