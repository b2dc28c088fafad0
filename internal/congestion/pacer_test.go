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

// TestPacerDebtKeepsRate: datagrams sent ahead of the pacer (canOwe) take
// their bytes as a debt that the paced datagrams after them repay: a
// sender that always has 1000-byte datagrams waiting, and sends a
// 100-byte one ahead every 10 ms, moves no more bytes in a second than
// the rate and one burst allow; the 10,000 bytes sent ahead are not on
// top of that.
func TestPacerDebtKeepsRate(t *testing.T) {
	const rate = 1_000_000 // bytes/s
	var p pacer
	p.setRate(epoch, rate, 1000)
	require.Equal(t, int64(2000), p.burst)
	total, ahead := 0, 0
	for us := range 1_000_000 {
		now := epoch.Add(time.Duration(us) * time.Microsecond)
		if us%10_000 == 5_000 {
			require.True(t, p.canOwe(now))
			p.sent(now, 100)
			total, ahead = total+100, ahead+100
		}
		for p.ready(now) {
			p.sent(now, 1000)
			total += 1000
		}
	}
	require.Equal(t, 10_000, ahead)
	require.LessOrEqual(t, total, rate+2000, "at most the rate and the first burst")
	require.GreaterOrEqual(t, total, rate-1000)
}

// TestPacerDebtBound: the debt stops at one burst: canOwe is false once
// the credit is at minus the burst, until the pacer has caught up.
func TestPacerDebtBound(t *testing.T) {
	var p pacer
	p.setRate(epoch, 1_000_000, 1000) // 1,000 bytes a millisecond, burst 2,000
	n := 0
	for p.canOwe(epoch) {
		p.sent(epoch, 500)
		n++
	}
	require.Equal(t, 8, n, "2,000 of credit and 2,000 of debt, 500 at a time")
	require.Equal(t, int64(-2000), p.credit)
	require.False(t, p.canOwe(epoch.Add(time.Microsecond-time.Nanosecond)))
	require.True(t, p.canOwe(epoch.Add(time.Microsecond)), "one byte repaid")
	require.Equal(t, epoch.Add(2001*time.Microsecond+time.Nanosecond), p.next(epoch.Add(time.Microsecond)), "the next paced datagram waits for all of it")
}
