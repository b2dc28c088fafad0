//go:build !linux

package socket

import "net"

// IP_RECVERR is Linux's: elsewhere an unconnected socket's peers that
// vanish show only through the idle timeout.
func enableRecvErr(*net.UDPConn) bool { return false }
