package porous

import (
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestSendWindow: a session whose peer is a ReliablePeer numbers new
// frames at most RxAhead past its oldest unacknowledged frame, which the
// peer, refusing frames further ahead of its oldest one not accepted
// (never older), would refuse; to another peer, TransferWindow past it,
// the reference's N_P. The frames before are stood in for by slots of
// the transfer queue that the congestion controller does not count, so
// that only the window holds the next frame back.
func TestSendWindow(t *testing.T) {
	for _, tc := range []struct {
		reliable bool
		window   int
	}{{true, RxAhead}, {false, TransferWindow}} {
		a, _ := connected(t, Config{ReliablePeer: tc.reliable}, Config{ReliablePeer: tc.reliable})
		require.NoError(t, a.Send(make([]byte, 100), engine.SendOptions{Delivery: engine.Reliable}))
		for a.ring.n < tc.window-1 {
			a.ring.push()
			a.nextSeq++
		}
		_, ok, _ := a.buildLimit()
		require.True(t, ok, "reliable %v: a frame %d past the oldest", tc.reliable, tc.window-1)
		a.ring.push()
		a.nextSeq++
		_, ok, _ = a.buildLimit()
		require.False(t, ok, "reliable %v: a frame %d past the oldest", tc.reliable, tc.window)
		_, due := a.dataAt()
		require.False(t, due, "reliable %v: nothing due", tc.reliable)
	}
}
