package rudp

import (
	"net"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/porous"
	"github.com/stretchr/testify/require"
)

// TestLargeFrameSize: large frames go only to loopback addresses, within
// the loopback MTU less the IP and UDP headers and the seal.
func TestLargeFrameSize(t *testing.T) {
	v4 := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	v6 := &net.UDPAddr{IP: net.IPv6loopback, Port: 1}
	for _, c := range []struct {
		addr net.Addr
		mtu  int
		want int
	}{
		{v4, 65536, porous.LargeFrameSize},
		{v6, 65536, porous.LargeFrameSize},
		{v4, 16384, 16384 - 28 - sealLen},
		{v6, 16384, 16384 - 48 - sealLen},
		{v4, 1500, 0},
		{v4, 0, 0},
		{&net.UDPAddr{IP: net.IPv4(127, 1, 2, 3)}, 65536, porous.LargeFrameSize},
		{&net.UDPAddr{IP: net.IPv4(10, 0, 0, 1)}, 65536, 0},
		{&net.UDPAddr{IP: net.ParseIP("2001:db8::1")}, 65536, 0},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, 65536, 0},
	} {
		require.Equal(t, c.want, largeFrame(new(porous.Session), c.addr, c.mtu), "%v, MTU %d", c.addr, c.mtu)
	}
}

// TestStreamLargeFrames: both ends of a POROUS stream over loopback send
// large frames, their datagrams averaging well above the protocol's 1472
// bytes, and deliver every byte.
func TestStreamLargeFrames(t *testing.T) {
	if loopbackMTU() < 2*porous.MaxFrameSize {
		t.Skipf("large frames need a loopback MTU of at least 2 × %d bytes; this host's is %d", porous.MaxFrameSize, loopbackMTU())
	}
	c, s, _ := streamPair(t, nil, links[0])
	streamThrough(t, c, s, 4<<20)
	streamThrough(t, s, c, 4<<20)
	for _, st := range []Stats{c.Stats(), s.Stats()} {
		require.Greater(t, st.BytesSent/st.PacketsSent, uint64(4*porous.MaxFrameSize), "%d bytes in %d datagrams", st.BytesSent, st.PacketsSent)
	}
}

// TestOversizeDropped: from a peer without an association that takes
// large frames, a datagram above 2048 bytes is dropped unread and counted,
// as is one above the largest large frame from anyone.
func TestOversizeDropped(t *testing.T) {
	ln := Server(udpSocket(t, nil, 1), nil)
	t.Cleanup(func() { ln.Close() })
	r := newRawPeer(t, ln.Addr())
	r.send(make([]byte, maxDatagram+1))
	r.send(make([]byte, maxLarge+1))
	r.send([]byte{0xff}) // a datagram that opens nothing, after them
	require.Eventually(t, func() bool { return ln.Stats().UnknownDrops == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, uint64(2), ln.Stats().Oversize)
}
