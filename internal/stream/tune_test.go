package stream

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// transferAt moves total bytes from a to b, delivering frames in order
// and reading at b at once, advancing the clock by step per exchange of
// frames; b tunes its window with rtt. It returns b's window at the end.
func transferAt(t *testing.T, total int, step, rtt time.Duration) int {
	cfg := Config{MaxFrame: 1024, RecvWindow: 64 << 10, MaxRecvWindow: 1 << 20, SendBuffer: 16 << 20}
	a, b := New(cfg), New(cfg)
	buf := make([]byte, 1024)
	read := make([]byte, 1<<20)
	now := time.Unix(1_000_000, 0)
	src := make([]byte, total)
	require.Equal(t, total, a.Write(src))
	got := 0
	for range 100_000 {
		b.Tune(now, rtt)
		for n := a.NextFrame(buf); n > 0; n = a.NextFrame(buf) {
			require.NoError(t, b.HandleFrame(buf[:n]))
		}
		k, err := b.Read(read)
		require.NoError(t, err)
		got += k
		for n := b.NextFrame(buf); n > 0; n = b.NextFrame(buf) {
			require.NoError(t, a.HandleFrame(buf[:n]))
		}
		if got == total {
			return b.RecvWindow()
		}
		now = now.Add(step)
	}
	t.Fatalf("transfer stalled at %d of %d bytes", got, total)
	return 0
}

// TestAutoTuneGrows: a reader that keeps up with a sender held back by
// the window (each window's worth delivered per round trip) doubles the
// window up to MaxRecvWindow.
func TestAutoTuneGrows(t *testing.T) {
	require.Equal(t, 1<<20, transferAt(t, 16<<20, 20*time.Millisecond, 20*time.Millisecond))
}

// TestAutoTuneSlowReader: when the window is consumed slowly (far more
// than four round trips per window), it stays at RecvWindow.
func TestAutoTuneSlowReader(t *testing.T) {
	require.Equal(t, 64<<10, transferAt(t, 4<<20, 20*time.Millisecond, time.Millisecond))
}

// TestAutoTuneNeedsRTT: without an RTT the window never grows.
func TestAutoTuneNeedsRTT(t *testing.T) {
	require.Equal(t, 64<<10, transferAt(t, 4<<20, 20*time.Millisecond, 0))
}
