package impair

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func pair(t *testing.T) (net.PacketConn, net.PacketConn) {
	a, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	b, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestLossIsSeededAndCounted(t *testing.T) {
	a, b := pair(t)
	run := func() Stats {
		c := New(a, Config{Loss: 0.3, Duplicate: 0.1, Seed: 7})
		for range 1000 {
			n, err := c.WriteTo([]byte("x"), b.LocalAddr())
			require.NoError(t, err)
			require.Equal(t, 1, n)
		}
		return c.Stats()
	}
	s1, s2 := run(), run()
	require.Equal(t, s1, s2, "same seed, same decisions")
	require.InDelta(t, 300, s1.Dropped, 60)
	require.InDelta(t, 70, s1.Duplicated, 30)
	require.Equal(t, 1000-s1.Dropped+s1.Duplicated, s1.Sent)
}

func TestDelayAndDelivery(t *testing.T) {
	a, b := pair(t)
	c := New(a, Config{Delay: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Seed: 1})
	start := time.Now()
	_, err := c.WriteTo([]byte("hello"), b.LocalAddr())
	require.NoError(t, err)
	buf := make([]byte, 64)
	require.NoError(t, b.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, from, err := b.ReadFrom(buf)
	require.NoError(t, err)
	require.Equal(t, "hello", string(buf[:n]))
	require.Equal(t, a.LocalAddr().String(), from.String())
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
}

func TestDelayKeepsOrder(t *testing.T) {
	a, b := pair(t)
	c := New(a, Config{Delay: 2 * time.Millisecond})
	defer c.Close()
	const n = 200
	for i := range n {
		_, err := c.WriteTo([]byte{byte(i)}, b.LocalAddr())
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.line.Len() == 0
	}, 5*time.Second, time.Millisecond)
	buf := make([]byte, 8)
	last, got := -1, 0
	for {
		require.NoError(t, b.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
		k, _, err := b.ReadFrom(buf)
		if err != nil {
			break // all read; the socket may have dropped some of the burst
		}
		require.Equal(t, 1, k)
		require.Greater(t, int(buf[0]), last, "datagrams leave in order")
		last = int(buf[0])
		got++
	}
	require.Greater(t, got, n/2)
}

func TestQueueBound(t *testing.T) {
	a, b := pair(t)
	c := New(a, Config{Delay: time.Hour, MaxDelayed: 3})
	for range 5 {
		_, err := c.WriteTo([]byte("x"), b.LocalAddr())
		require.NoError(t, err)
	}
	require.Equal(t, Stats{Sent: 3, QueueDropped: 2}, c.Stats())
	require.NoError(t, c.Close())
}

func TestReorder(t *testing.T) {
	a, b := pair(t)
	c := New(a, Config{Reorder: 1, ReorderDelay: 50 * time.Millisecond})
	_, err := c.WriteTo([]byte("late"), b.LocalAddr())
	require.NoError(t, err)
	c.cfg.Reorder = 0
	_, err = c.WriteTo([]byte("early"), b.LocalAddr())
	require.NoError(t, err)
	require.Equal(t, uint64(1), c.Stats().Reordered)
	buf := make([]byte, 16)
	require.NoError(t, b.SetReadDeadline(time.Now().Add(5*time.Second)))
	for _, want := range []string{"early", "late"} {
		n, _, err := b.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, want, string(buf[:n]))
	}
}

// TestMaxDatagram: a datagram longer than MaxDatagram is dropped and
// counted; one of exactly MaxDatagram bytes arrives.
func TestMaxDatagram(t *testing.T) {
	a, b := pair(t)
	c := New(a, Config{MaxDatagram: 10})
	n, err := c.WriteTo(make([]byte, 11), b.LocalAddr())
	require.NoError(t, err)
	require.Equal(t, 11, n, "reported written, as a lossy path does")
	_, err = c.WriteTo([]byte("0123456789"), b.LocalAddr())
	require.NoError(t, err)
	require.NoError(t, b.SetReadDeadline(time.Now().Add(5*time.Second)))
	buf := make([]byte, 64)
	n, _, err = b.ReadFrom(buf)
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(buf[:n]))
	require.Equal(t, Stats{Sent: 1, TooLarge: 1}, c.Stats())
}
