//go:build !linux

package rudp

import "net"

// newBatchReader is not reached on systems without batched reads: it reads
// one datagram at a time.
func newBatchReader(uc *net.UDPConn, _, _ int, _ bool) reader {
	return &pcReader{pc: uc, ms: newReceived(1, maxLarge+1)}
}
