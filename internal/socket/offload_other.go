//go:build !linux

package socket

import "net"

// Segmentation offload exists on Linux only.

func enableOffload(*net.UDPConn) (gso, gro bool) { return false, false }

var oobSize = 0

func putSegmentSize(oob []byte, _ int) []byte { return oob[:0] }

func segmentSize([]byte) int { return 0 }

// Batched sends exist on Linux only.

type mmsgScratch struct{}

func newBatchConn(net.PacketConn) batchConn { return nil }
