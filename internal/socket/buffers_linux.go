package socket

import (
	"net"

	"golang.org/x/sys/unix"
)

// grantBuffers asks for BufferSize bytes each way on uc and returns the
// receive buffer granted, in bytes (ok false if it cannot be read). Linux
// grants at most net.core.rmem_max and wmem_max (208 KiB on many
// systems); past them it grants SO_RCVBUFFORCE and SO_SNDBUFFORCE to a
// process with CAP_NET_ADMIN, and refuses them, harmlessly, to others.
func grantBuffers(uc *net.UDPConn) (int, bool) {
	_ = uc.SetReadBuffer(BufferSize)
	_ = uc.SetWriteBuffer(BufferSize)
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0, false
	}
	got, ok := 0, false
	_ = rc.Control(func(fd uintptr) {
		if got, ok = recvBuffer(fd); ok && got < BufferSize {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, BufferSize)
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, BufferSize)
			got, ok = recvBuffer(fd)
		}
	})
	return got, ok
}

// recvBuffer returns the receive buffer of socket fd, in bytes of the
// size asked for: Linux reports twice that (socket(7), SO_RCVBUF), the
// other half being its bookkeeping.
func recvBuffer(fd uintptr) (int, bool) {
	n, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	return n / 2, err == nil
}
