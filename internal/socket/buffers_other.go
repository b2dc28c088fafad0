//go:build !linux

package socket

import "net"

// grantBuffers asks for BufferSize bytes each way on uc, best effort:
// the buffer granted is not known here (ok false).
func grantBuffers(uc *net.UDPConn) (int, bool) {
	_ = uc.SetReadBuffer(BufferSize)
	_ = uc.SetWriteBuffer(BufferSize)
	return 0, false
}
