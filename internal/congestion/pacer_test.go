package congestion

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var epoch = time.Unix(1_000_000, 0)

// TestPacerBurst: the pacer lets rate × 1 ms leave at once (at least two
// datagrams, at most MaxBurst), then one byte's worth of time per byte.
func TestPacerBurst(t *testing.T) {
	var p pacer
	p.setRate(epoch, 10_000_000, 1000) // 10 MB/s: 10,000 bytes a millisecond
	require.Equal(t, int64(10_000), p.burst)
	for i := range 10 {
		require.True(t, p.ready(epoch), "datagram %d of the burst", i)
		p.sent(epoch, 1000)
	}
	require.False(t, p.ready(epoch))
	// One byte of credit takes 100 ns at 10 MB/s; next never answers
	// less than a microsecond ahead.
	require.Equal(t, epoch.Add(time.Microsecond), p.next(epoch))
	require.False(t, p.ready(epoch.Add(99*time.Nanosecond)))
	require.True(t, p.ready(epoch.Add(101*time.Nanosecond)))
	require.Equal(t, int64(1), p.credit)
	// Credit never exceeds the burst, however long the pacer idles.
	p.refill(epoch.Add(time.Hour))
	require.Equal(t, int64(10_000), p.credit)

	p.setRate(epoch, 100_000, 1000) // 100 bytes a millisecond: the burst is two datagrams
	require.Equal(t, int64(2000), p.burst)
	p.setRate(epoch, 1_000_000_000, 1000) // 1 GB/s: capped at MaxBurst
	require.Equal(t, int64(MaxBurst), p.burst)
}

// TestPacerUnpaced: rate 0 never holds a datagram back.
func TestPacerUnpaced(t *testing.T) {
	var p pacer
	p.setRate(epoch, 0, 1000)
	for range 1000 {
		require.True(t, p.ready(epoch))
		p.sent(epoch, 1000)
	}
	require.Equal(t, epoch, p.next(epoch))
}
