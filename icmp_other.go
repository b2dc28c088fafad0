//go:build !linux

package rudp

import "net"

// IP_RECVERR is Linux's: elsewhere an unconnected socket's peers that
// vanish show only through the idle timeout.
func enableRecvErr(*net.UDPConn) bool { return false }
