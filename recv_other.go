//go:build !linux

package rudp

import (
	"net"
	"sync/atomic"
)

// newBatchReader is not reached on systems without batched reads: it reads
// one datagram at a time.
func newBatchReader(uc *net.UDPConn, _, _ int, _ *atomic.Bool) reader {
	return &pcReader{pc: uc, ms: newReceived(1, maxLarge+1)}
}
