package socket

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
)

// TestBatchWriterPeers sends one sendmmsg batch to two peers from IPv4,
// IPv6 and dual-stack sockets: each peer reads exactly its datagrams, in
// order, from the sender's address.
func TestBatchWriterPeers(t *testing.T) {
	for _, c := range []struct{ name, tx, rx, rxHost string }{
		{"udp4", "udp4", "udp4", "127.0.0.1:0"},
		{"udp6", "udp6", "udp6", "[::1]:0"},
		{"dual-stack to IPv4", "udp", "udp4", "127.0.0.1:0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			txHost := map[string]string{"udp4": "127.0.0.1:0", "udp6": "[::1]:0", "udp": ":0"}[c.tx]
			tx, err := net.ListenPacket(c.tx, txHost)
			if err != nil {
				t.Skipf("no %s socket: %v", c.tx, err)
			}
			defer tx.Close()
			rxs := make([]net.PacketConn, 2)
			for i := range rxs {
				rx, err := net.ListenPacket(c.rx, c.rxHost)
				if err != nil {
					t.Skipf("no %s loopback: %v", c.rx, err)
				}
				defer rx.Close()
				rxs[i] = rx
			}
			w := newBatchConn(tx)
			require.NotNil(t, w)
			sc := NewScratch(SendBatch)
			ms := []ipv4.Message{
				{Buffers: [][]byte{[]byte("to 0, first")}, Addr: rxs[0].LocalAddr()},
				{Buffers: [][]byte{[]byte("to 1")}, Addr: rxs[1].LocalAddr()},
				{Buffers: [][]byte{[]byte("to 0, "), []byte("second")}, Addr: rxs[0].LocalAddr()},
			}
			n, err := w.WriteBatch(ms, &sc)
			require.NoError(t, err)
			require.Equal(t, 3, n)
			port := tx.LocalAddr().(*net.UDPAddr).Port
			buf := make([]byte, 64)
			for i, want := range [][]string{{"to 0, first", "to 0, second"}, {"to 1"}} {
				for _, w := range want {
					require.NoError(t, rxs[i].SetReadDeadline(time.Now().Add(ioBound)))
					k, from, err := rxs[i].ReadFrom(buf)
					require.NoError(t, err)
					require.Equal(t, w, string(buf[:k]))
					require.Equal(t, port, from.(*net.UDPAddr).Port)
				}
			}
		})
	}
}

// TestBatchWriterAllocs: a sendmmsg batch allocates nothing once the
// scratch it is laid out in has grown to its size.
func TestBatchWriterAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	rx, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer rx.Close()
	tx, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer tx.Close()
	w, sc := newBatchConn(tx), NewScratch(SendBatch)
	ms := []ipv4.Message{
		{Buffers: [][]byte{[]byte("one")}, Addr: rx.LocalAddr()},
		{Buffers: [][]byte{[]byte("two"), []byte("three")}, Addr: rx.LocalAddr()},
	}
	sent := 0
	allocs := testing.AllocsPerRun(20, func() {
		n, err := w.WriteBatch(ms, &sc)
		require.NoError(t, err)
		sent += n
	})
	require.Zero(t, allocs)
	require.Equal(t, 2*21, sent) // AllocsPerRun runs it once more to warm up
}

// TestBatchWriterWrongFamily: an IPv4 socket cannot send to an IPv6
// peer; the batch fails before any message is sent.
func TestBatchWriterWrongFamily(t *testing.T) {
	tx, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer tx.Close()
	sc := NewScratch(SendBatch)
	n, err := newBatchConn(tx).WriteBatch([]ipv4.Message{
		{Buffers: [][]byte{[]byte("x")}, Addr: &net.UDPAddr{IP: net.IPv6loopback, Port: 9}},
	}, &sc)
	require.Zero(t, n)
	require.ErrorIs(t, err, syscall.EAFNOSUPPORT)
}

// TestGSOLongRun sends a run of 50 full-size datagrams (1472 bytes, 73600
// in all) through a real socket: they go as more than one segmented
// message, since one carries at most 65507 bytes, and each arrives whole,
// in order, with none counted as failed.
func TestGSOLongRun(t *testing.T) {
	rx := udpSocket(t)
	defer rx.Close()
	tx := udpSocket(t)
	defer tx.Close()
	require.NoError(t, rx.(*net.UDPConn).SetReadBuffer(1<<20))
	ep := New(tx, false, nil)
	sc := NewScratch(64)
	bufs := datagrams(50, 1472)
	failed, refused := ep.Send(&sc, bufs, rx.LocalAddr())
	require.Zero(t, failed)
	require.False(t, refused)
	requireReceived(t, rx, bufs)
}
