package socket

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
)

// TestGSOGrouping: runs of equal-size datagrams (the last of a run may be
// shorter) become one message with a segment size; anything else goes
// alone; without GSO every datagram is its own message.
func TestGSOGrouping(t *testing.T) {
	mk := func(sizes ...int) [][]byte {
		bufs := make([][]byte, len(sizes))
		for i, n := range sizes {
			bufs[i] = make([]byte, n)
		}
		return bufs
	}
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	sc := NewScratch(8)
	runs := func(ms []ipv4.Message) []int {
		var r []int
		for _, m := range ms {
			r = append(r, len(m.Buffers))
			require.Equal(t, to, m.Addr)
			require.Equal(t, len(m.Buffers) > 1, len(m.OOB) > 0, "a segment size exactly on grouped messages")
		}
		return r
	}
	bufs := mk(1290, 1290, 1290, 700, 1290, 4, 1290, 1290)
	require.Equal(t, []int{4, 2, 2}, runs(sc.layout([]Run{{Bufs: bufs, To: to}}, false, true)), "a shorter datagram ends a run")
	require.Equal(t, []int{1, 1, 1, 1, 1, 1, 1, 1}, runs(sc.layout([]Run{{Bufs: bufs, To: to}}, false, false)))
	require.Equal(t, []int{1, 1}, runs(sc.layout([]Run{{Bufs: mk(4, 1290), To: to}}, false, true)), "a larger datagram starts a new run")

	// 1472-byte datagrams: 44 fit in one IPv4 packet's 65507 bytes.
	long := make([]int, 50)
	for i := range long {
		long[i] = 1472
	}
	require.Equal(t, []int{44, 6}, runs(sc.layout([]Run{{Bufs: mk(long...), To: to}}, false, true)), "a run ends at 65507 bytes")
	small := make([]int, 70)
	for i := range small {
		small[i] = 100
	}
	require.Equal(t, []int{64, 6}, runs(sc.layout([]Run{{Bufs: mk(small...), To: to}}, false, true)), "a run ends at 64 datagrams")
}
