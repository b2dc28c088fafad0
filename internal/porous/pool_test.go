package porous

import (
	"runtime"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// heapAfterGC returns the bytes of live heap objects once two collections
// have run: the second one empties the sync.Pools, whose content survives
// one collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestIdleSessionHoldsNoPackets: once two sessions have moved 8 MiB each
// way in packets of one fragment, queued up to Config.MaxQueuedBytes, the receivers recycling what they
// consumed (as a stream does), and every packet is acknowledged, neither
// session keeps the buffers of the packets it sent or received for later
// ones: they went back to the pools shared by the process. What the two
// sessions keep alive (the heap with them, less the heap without them,
// the pools emptied by the collector) is well below the megabytes that
// were in flight at once.
func TestIdleSessionHoldsNoPackets(t *testing.T) {
	now := epoch
	// Arrival: Send takes packets up to MaxQueuedBytes, whatever the
	// congestion window.
	a := newSession(t, now, Config{Nonce: nonceA, SendOrder: Arrival})
	b := newSession(t, now, Config{Nonce: nonceB, SendOrder: Arrival})
	buf := make([]byte, MaxFrameSize)
	exchange := func(from, to *Session) { deliverFrames(t, now, buf, from, to) }
	for range 10 {
		exchange(a, b)
		exchange(b, a)
	}
	require.Equal(t, engine.StateEstablished, a.State())
	require.Equal(t, engine.StateEstablished, b.State())

	const packets = 8 << 20 / FragmentSize
	msg := make([]byte, FragmentSize)
	sent, got := [2]int{}, [2]int{}
	ends := [2]*Session{a, b}
	peakPending := 0
	for step := 0; got[0] < packets || got[1] < packets || a.Pending() > 0 || b.Pending() > 0; step++ {
		require.Less(t, step, 100_000, "packets delivered: %v of %d each way", got, packets)
		for i, s := range ends {
			for sent[i] < packets {
				if err := s.Send(msg, engine.SendOptions{}); err != nil {
					require.ErrorIs(t, err, engine.ErrQueueFull)
					break
				}
				sent[i]++
			}
			peakPending = max(peakPending, s.Pending())
		}
		now = now.Add(time.Millisecond)
		exchange(a, b)
		exchange(b, a)
		for i, s := range []*Session{b, a} {
			for m, ok := s.Recv(); ok; m, ok = s.Recv() {
				require.Len(t, m.Data, FragmentSize)
				got[i]++
				s.Recycle(m.Data)
			}
		}
	}
	require.Greater(t, peakPending*FragmentSize, 1<<20, "at least 1 MiB was pending at once")

	alive := heapAfterGC()
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	gone := heapAfterGC()
	held := int64(alive) - int64(gone)
	t.Logf("the two sessions hold %d bytes; %d packets were pending at most", held, peakPending)
	require.Less(t, held, int64(512<<10), "bytes the two sessions hold once idle")
}
