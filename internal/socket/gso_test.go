package socket

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
)

// noSegmentation is a batchConn over a real socket whose path cannot
// segment: a message carrying several datagrams (GSO) fails with err, as
// sendmsg does with EIO when the device cannot segment or EINVAL when the
// kernel refuses the segment size; single datagrams are sent.
type noSegmentation struct {
	pc        net.PacketConn
	err       error
	segmented int // messages refused
}

func (f *noSegmentation) WriteBatch(ms []ipv4.Message, _ *Scratch) (int, error) {
	for i, m := range ms {
		if len(m.Buffers) > 1 {
			f.segmented++
			return i, f.err
		}
		if _, err := f.pc.WriteTo(m.Buffers[0], m.Addr); err != nil {
			return i, err
		}
	}
	return len(ms), nil
}

// gsoEndpoint returns a Socket that sends through f with GSO on, and a
// socket to receive what it sends.
func gsoEndpoint(t *testing.T, err error) (*Socket, *noSegmentation, net.PacketConn) {
	rx := udpSocket(t)
	t.Cleanup(func() { rx.Close() })
	tx := udpSocket(t)
	s := New(tx, false, nil)
	t.Cleanup(func() { tx.Close() })
	f := &noSegmentation{pc: tx, err: err}
	s.batch = f
	s.gso.Store(true)
	return s, f, rx
}

// ioBound bounds every read of a test, so that a regression fails in
// seconds instead of hanging.
const ioBound = 30 * time.Second

// udpSocket returns a UDP socket on 127.0.0.1.
func udpSocket(t testing.TB) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	return pc
}

// datagrams returns n datagrams of size bytes, numbered in their first
// bytes, and a last one of 100 bytes: one GSO run.
func datagrams(n, size int) [][]byte {
	bufs := make([][]byte, n+1)
	for i := range bufs {
		bufs[i] = make([]byte, size)
		if i == n {
			bufs[i] = bufs[i][:100]
		}
		copy(bufs[i], fmt.Sprintf("datagram %d", i))
	}
	return bufs
}

// requireReceived reads len(want) datagrams from rx and checks each.
func requireReceived(t *testing.T, rx net.PacketConn, want [][]byte) {
	t.Helper()
	buf := make([]byte, 2048)
	for i, w := range want {
		require.NoError(t, rx.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, _, err := rx.ReadFrom(buf)
		require.NoError(t, err, "datagram %d", i)
		require.Equal(t, w, buf[:n], "datagram %d", i)
	}
}

// sendWithin is Socket.Send, failing the test if it has not returned within
// 10 s (a send that retries forever).
func sendWithin(t *testing.T, ep *Socket, sc *Scratch, bufs [][]byte, to net.Addr) uint64 {
	t.Helper()
	failed := make(chan uint64, 1)
	go func() {
		n, _ := ep.Send(sc, bufs, to)
		failed <- n
	}()
	select {
	case n := <-failed:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("send still running after 10 s")
		return 0
	}
}

// TestGSOFallback: when the socket refuses a segmented send with EIO or
// EINVAL, the same datagrams go one by one, none is lost or counted as
// failed, and GSO stays off for the endpoint from then on.
func TestGSOFallback(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EIO, syscall.EINVAL} {
		t.Run(errno.Error(), func(t *testing.T) {
			ep, f, rx := gsoEndpoint(t, errno)
			sc := NewScratch(SendBatch)
			bufs := datagrams(5, 1200)
			require.Zero(t, sendWithin(t, ep, &sc, bufs, rx.LocalAddr()))
			require.Equal(t, 1, f.segmented, "GSO was tried")
			require.False(t, ep.gso.Load(), "GSO is off")
			requireReceived(t, rx, bufs)

			more := datagrams(3, 1000)
			require.Zero(t, sendWithin(t, ep, &sc, more, rx.LocalAddr()))
			require.Equal(t, 1, f.segmented, "GSO is not tried again")
			requireReceived(t, rx, more)
		})
	}
}

// TestGSOOtherErrors: any other error on a segmented send (a full socket
// buffer) loses that message's datagrams, counted as failed for the
// engine to resend, and GSO stays on.
func TestGSOOtherErrors(t *testing.T) {
	ep, f, rx := gsoEndpoint(t, syscall.ENOBUFS)
	sc := NewScratch(SendBatch)
	bufs := append([][]byte{[]byte("alone")}, datagrams(5, 1200)...)
	require.Equal(t, uint64(6), sendWithin(t, ep, &sc, bufs, rx.LocalAddr()))
	require.Equal(t, 1, f.segmented)
	require.True(t, ep.gso.Load())
	requireReceived(t, rx, bufs[:1])
}
