package socket

import (
	"log/slog"
	"net"
	"sync"
)

// BufferSize is the kernel buffer asked for each way on every UDP
// socket, in bytes: room for a burst of full windows from many peers
// between two reads of a busy listener.
const BufferSize = 4 << 20

// bufferWarning makes the warning about small socket buffers (see
// sizeBuffers) once per process.
var bufferWarning sync.Once

// sizeBuffers asks for BufferSize bytes of receive and send buffer on
// uc (see grantBuffers). Where the kernel grants a smaller receive buffer,
// log, if not nil, gets a warning, once per process: with hundreds of
// busy peers a listener then drops datagrams at its socket, each one a
// resend, and a dropped handshake a wait of its own.
func sizeBuffers(uc *net.UDPConn, log *slog.Logger) {
	got, ok := grantBuffers(uc)
	if ok && got < BufferSize && log != nil {
		bufferWarning.Do(func() {
			log.Warn("rudp: the kernel grants a smaller UDP receive buffer than asked; under load datagrams are dropped at the socket (on Linux, raise net.core.rmem_max and net.core.wmem_max, or grant CAP_NET_ADMIN)",
				"addr", uc.LocalAddr(), "granted", got, "asked", BufferSize)
		})
	}
}
