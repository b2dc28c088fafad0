package congestion

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTrimRestartsFromIdle: Trim keeps the model while datagrams are in
// flight; with none, it frees it and the controller reads as a fresh one
// (the initial window and state, the counters kept), and the next
// datagrams start a new model, which grows as the first did.
func TestTrimRestartsFromIdle(t *testing.T) {
	for _, alg := range []Algorithm{BBR, AIMD} {
		t.Run(alg.String(), func(t *testing.T) {
			c := New(epoch, Config{Algorithm: alg, MaxDatagram: mss})
			fresh := c.Stats()
			now := epoch
			for range 4 {
				now = roundTrip(c, 10, now, 10*time.Millisecond)
			}
			grown := c.Stats()
			require.NotEqual(t, fresh.Cwnd, grown.Cwnd)

			var p Packet
			c.OnSent(now, &p, mss, false)
			c.Trim()
			require.NotNil(t, c.alg, "a datagram in flight: the model stays")
			c.OnAcked(now.Add(10*time.Millisecond), &p)
			c.Update(now.Add(10*time.Millisecond), RTT{Latest: 10 * time.Millisecond, Smoothed: 10 * time.Millisecond, RTO: 30 * time.Millisecond})
			delivered := c.Stats().Delivered

			c.Trim()
			require.Nil(t, c.alg, "nothing in flight: the model is freed")
			st := c.Stats()
			require.Equal(t, fresh.State, st.State)
			require.Equal(t, fresh.Cwnd, st.Cwnd)
			require.Equal(t, fresh.Cwnd, c.Window())
			require.Equal(t, fresh.Cwnd, c.Room())
			require.Equal(t, delivered, st.Delivered, "counters kept")
			require.True(t, c.CanSend(now.Add(time.Minute), mss))

			now = now.Add(time.Minute)
			for range 4 {
				now = roundTrip(c, 10, now, 10*time.Millisecond)
			}
			require.Equal(t, grown.Cwnd, c.Stats().Cwnd, "the new model grows as the first")
			require.Equal(t, grown.State, c.Stats().State)
		})
	}
}
