//go:build !linux

package socket

import (
	"net"
	"sync/atomic"
)

// newBatchReader is not reached on systems without batched reads: it reads
// one datagram at a time.
func newBatchReader(uc *net.UDPConn, _, _ int, _ *atomic.Bool, largest int) Reader {
	return &pcReader{pc: uc, ms: newReceived(1, largest+1)}
}
