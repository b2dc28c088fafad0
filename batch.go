package rudp

import (
	"golang.org/x/net/ipv4"
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
	// maxDatagram is the largest datagram taken, except by a stream that
	// takes large frames (see largeFrame), which takes up to maxLarge;
	// larger ones are dropped. A read buffer without UDP receive offload
	// holds maxDatagram bytes.
	maxDatagram = 2048
)

// batchConn sends batches of messages: on Linux a *net.UDPConn's
// sendmmsg (see mmsgConn). WriteBatch lays the messages out in sc and
// returns how many it sent, as ipv4.PacketConn.WriteBatch does.
type batchConn interface {
	WriteBatch(ms []ipv4.Message, sc *sendScratch) (int, error)
}
