package rudp

import (
	"net"
	"net/netip"
	"time"

	"github.com/rudpkit/rudp/internal/socket"
)

// lludpAckDelay is how long an LLUDP stream's ack waits for a datagram to
// ride on (internal/lludp's ackDelay).
const lludpAckDelay = 2 * time.Millisecond

// avaraStreamClientID is the player id of the client of an Avara stream
// (internal/avara's streamClientID).
const avaraStreamClientID = 1

// addrPortOf returns a UDP address as a netip.AddrPort (the zero one for
// other kinds of address).
func addrPortOf(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	return netip.AddrPort{}
}

// Short names for the socket layer's seal and keys in this package's
// tests.
type addrKey = socket.Key

const (
	sealLen     = socket.SealLen
	maxDatagram = socket.MaxDatagram
)

func seal(b []byte) []byte           { return socket.Seal(b, 0) }
func unseal(b []byte) ([]byte, bool) { return socket.Unseal(b, 0) }
func keyOf(a net.Addr) socket.Key    { return socket.KeyOf(a) }
