package socket

import (
	"golang.org/x/net/ipv4"
)

// Batched I/O: on Linux, a *net.UDPConn reads up to readBatch datagrams
// per recvmmsg and an association sends up to SendBatch datagrams per
// sendmmsg. Other PacketConns, and other systems, use one ReadFrom or
// WriteTo per datagram through the same code.
const (
	readBatch = 32
	groBatch  = 8 // with GRO, each read buffer holds up to 64 KiB of joined datagrams
	// groBatchConnected is groBatch for a connected socket (a dialed
	// conn's): its one peer's datagrams are joined already, and a program
	// with many busy conns should not take half a MiB of buffers for each
	// (an idle one holds none, see batchReader).
	groBatchConnected = 2
	// SendBatch is how many datagrams a sender hands Send at once.
	SendBatch = 16
	// MaxDatagram is the largest datagram a batched read takes without
	// UDP receive offload, in bytes: its buffers hold MaxDatagram + 1
	// bytes, so that a longer datagram reads as truncated.
	MaxDatagram = 2048
)

// batchConn sends batches of messages: on Linux a *net.UDPConn's
// sendmmsg (see mmsgConn). WriteBatch lays the messages out in sc and
// returns how many it sent, as ipv4.PacketConn.WriteBatch does.
type batchConn interface {
	WriteBatch(ms []ipv4.Message, sc *Scratch) (int, error)
}
