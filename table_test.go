package rudp

import (
	"net"
	"net/netip"
	"time"
)

// lludpAckDelay is how long an LLUDP stream's ack waits for a datagram to
// ride on (internal/lludp's ackDelay).
const lludpAckDelay = 2 * time.Millisecond

// addrPortOf returns a UDP address as a netip.AddrPort (the zero one for
// other kinds of address).
func addrPortOf(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	return netip.AddrPort{}
}
