package lludp

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestPingAt: on an open circuit whose next regular StartPingCheck is
// seconds away, PingAt(t) sends one at t exactly, and the regular
// cadence goes on from it.
func TestPingAt(t *testing.T) {
	p := newPair(t, Config{}, Config{}, 5*ms, 0, 1)
	p.RunUntil(1000, func() bool {
		return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished
	})
	p.Advance(p.Now.Add(100 * ms))
	at := p.Now.Add(50 * ms)
	regular, ok := p.A.regularPingDue()
	require.True(t, ok)
	require.True(t, regular.After(at.Add(time.Second)), "the regular ping is seconds away")
	sent := len(p.AB.Log)
	p.A.PingAt(at)
	require.Equal(t, at, p.A.Deadline())
	p.Advance(at)
	var pings []string
	for _, b := range p.AB.Log[sent:] {
		pings = append(pings, Describe(b).Type)
	}
	require.Equal(t, []string{"start_ping_check"}, pings)
	require.True(t, p.A.extraPing.IsZero())
	next, _ := p.A.pingDue()
	require.Equal(t, at.Add(p.A.cfg.KeepAlive), next)
}
