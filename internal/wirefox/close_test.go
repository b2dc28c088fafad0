package wirefox

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestCrossingCloses: both ends close at once, as two rudp streams do once
// each has read the other's end, with challenges on as streams run them.
// Each end's DISCONNECT_REQUEST meets the other's: each answers the
// other's, and both end gracefully within a few round trips, not at
// Linger (10 s).
func TestCrossingCloses(t *testing.T) {
	cfg := Config{Challenge: true, Linger: 10 * time.Second}
	p := newPair(t, cfg, cfg, 10*ms, 0, 1)
	connect(t, p)
	require.NoError(t, p.A.Send([]byte{CmdUser, 1}, engine.SendOptions{Delivery: engine.Reliable}))
	p.RunUntil(10_000, func() bool { return p.A.Pending() == 0 })
	start := p.Now
	p.A.Close(p.Now)
	p.B.Close(p.Now)
	p.RunUntil(10_000, func() bool {
		return p.A.State() == engine.StateClosed && p.B.State() == engine.StateClosed
	})
	require.NoError(t, p.A.Err())
	require.NoError(t, p.B.Err())
	require.Less(t, p.Now.Sub(start), 200*ms, "closed at %v", p.Now.Sub(start))
}
