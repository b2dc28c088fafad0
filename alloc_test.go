package rudp

import (
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/porous"
	"github.com/stretchr/testify/require"
)

// TestStreamSteadyStateAllocs streams over loopback with the default
// protocol and counts the allocations of the whole process (not the time)
// over 16 MiB, once 32 MiB have warmed the conns up: sending, receiving,
// acknowledging and waiting in Read and Write allocate nothing per
// datagram. The bound, one allocation per 40 full-size POROUS datagrams'
// worth of bytes (there were 0.3 a datagram), leaves room for the
// runtime's own and for the engine's buffer pools reaching a new
// high-water mark, as a loss held more packets out of order than any
// before. It counts bytes, not datagrams, since over loopback the
// datagrams are large frames (see largeFrame).
func TestStreamSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	c, s, _ := streamPair(t, nil, links[0])
	const chunk, warm, measured = 64 << 10, 512, 256 // bytes, chunks, chunks
	read := make(chan error)
	go func() {
		buf := make([]byte, chunk)
		for _, n := range []int{warm, measured} {
			want := n * chunk
			for want > 0 {
				k, err := s.Read(buf[:min(len(buf), want)])
				if err != nil {
					read <- err
					return
				}
				want -= k
			}
			read <- nil
		}
	}()
	data := make([]byte, chunk)
	write := func(n int) {
		t.Helper()
		for range n {
			_, err := c.Write(data)
			require.NoError(t, err)
		}
		select {
		case err := <-read:
			require.NoError(t, err)
		case <-time.After(ioBound):
			t.Fatalf("the reader did not finish within %v", ioBound)
		}
	}
	datagrams := func() uint64 { return c.Stats().PacketsSent + s.Stats().PacketsSent }

	write(warm)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sent := datagrams()
	write(measured)
	runtime.ReadMemStats(&after)
	sent = datagrams() - sent
	allocs := after.Mallocs - before.Mallocs
	t.Logf("%d allocations for %d datagrams", allocs, sent)
	require.Greater(t, sent, uint64(measured*chunk/maxLarge), "datagrams sent")
	require.LessOrEqual(t, allocs, uint64(measured*chunk/(40*porous.MaxFrameSize)), "allocations for %d MiB", measured*chunk>>20)
}

// TestRoundTripAllocs counts the allocations of the whole process over
// 1,000 round trips of 1,000 bytes between stream conns over loopback:
// each Read blocks until its bytes arrive, and waiting allocates nothing
// (each wait made a channel). (A frame under half a POROUS fragment gets
// a reassembly buffer of its own size, not a recycled one.)
func TestRoundTripAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	c, s, _ := streamPair(t, nil, links[0])
	const trips, size = 1000, 1000
	echoed := make(chan error, 1)
	go func() {
		b := make([]byte, size)
		for range trips + 100 {
			if _, err := io.ReadFull(s, b); err != nil {
				echoed <- err
				return
			}
			if _, err := s.Write(b); err != nil {
				echoed <- err
				return
			}
		}
		echoed <- nil
	}()
	b := make([]byte, size)
	trip := func(n int) {
		t.Helper()
		for i := range n {
			b[0], b[size-1] = byte(i), byte(i>>8)
			_, err := c.Write(b)
			require.NoError(t, err)
			_, err = io.ReadFull(c, b)
			require.NoError(t, err)
			if b[0] != byte(i) || b[size-1] != byte(i>>8) {
				t.Fatalf("round trip %d came back as %d, %d", i, b[0], b[size-1])
			}
		}
	}
	trip(100)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	trip(trips)
	runtime.ReadMemStats(&after)
	require.NoError(t, <-echoed)
	allocs := after.Mallocs - before.Mallocs
	t.Logf("%d allocations for %d round trips", allocs, trips)
	require.LessOrEqual(t, allocs, uint64(trips/4))
}
