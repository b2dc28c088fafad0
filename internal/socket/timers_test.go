package socket

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTimersOrder: timers fire once each, at their deadline (virtual
// time), in deadline order; a timer moved later fires at its new
// deadline, a stopped one never; one set again after firing fires again.
func TestTimersOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ts Timers
		start := time.Now()
		var mu sync.Mutex
		var fired []string
		var at []time.Duration
		mk := func(name string) *Timer {
			tm := MakeTimer(func() {
				mu.Lock()
				fired = append(fired, name)
				at = append(at, time.Since(start))
				mu.Unlock()
			})
			return &tm
		}
		a, b, c, d := mk("a"), mk("b"), mk("c"), mk("d")
		now := time.Now()
		ts.Set(a, now.Add(30*time.Millisecond), now)
		ts.Set(b, now.Add(10*time.Millisecond), now)
		ts.Set(c, now.Add(20*time.Millisecond), now)
		ts.Set(d, now.Add(5*time.Millisecond), now)
		ts.Set(b, now.Add(40*time.Millisecond), now) // moved later
		ts.Set(d, time.Time{}, now)                  // stopped
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []string{"c", "a", "b"}, fired)
		require.Equal(t, []time.Duration{20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond}, at)

		now = time.Now()
		ts.Set(a, now.Add(time.Millisecond), now)
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []string{"c", "a", "b", "a"}, fired)
		require.Zero(t, ts.q.Len())
	})
}

// TestTimersOneGoroutine: 10,000 timers due at once fire from one
// goroutine, one after the other, not from a goroutine each.
func TestTimersOneGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ts Timers
		var running, most, count atomic.Int64
		tms := make([]Timer, 10_000)
		now := time.Now()
		for i := range tms {
			tms[i] = MakeTimer(func() {
				n := running.Add(1)
				if n > most.Load() {
					most.Store(n)
				}
				count.Add(1)
				running.Add(-1)
			})
			ts.Set(&tms[i], now.Add(time.Duration(i%7)*time.Microsecond), now)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		require.EqualValues(t, len(tms), count.Load())
		require.EqualValues(t, 1, most.Load())
	})
}

// TestTimersShrink: once the queue holds a quarter of its room or less,
// it gives the room back, so that a listener whose conns ended keeps
// none of their timers' room.
func TestTimersShrink(t *testing.T) {
	var ts Timers
	tms := make([]Timer, 1000)
	now := time.Now()
	for i := range tms {
		tms[i] = MakeTimer(func() {})
		ts.Set(&tms[i], now.Add(time.Hour+time.Duration(i)), now)
	}
	require.GreaterOrEqual(t, cap(ts.q), 1000)
	for i := range tms[:990] {
		ts.Set(&tms[i], time.Time{}, now)
	}
	require.Equal(t, 10, ts.q.Len())
	require.LessOrEqual(t, cap(ts.q), 64)
	for i := range tms[990:] {
		require.Equal(t, now.Add(time.Hour+time.Duration(990+i)), ts.q[0].at, "the earliest left stays first")
		ts.Set(&tms[990+i], time.Time{}, now)
	}
	ts.rt.Stop()
}
