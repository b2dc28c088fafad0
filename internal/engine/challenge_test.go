package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestChallenge: an announcement starts a challenge; others wait while it
// runs; the probe's answer refuses it and leaves nothing passed; running
// out lets exactly the next announcement of its kind through.
func TestChallenge(t *testing.T) {
	t0 := time.Unix(100, 0)
	var c Challenge
	act, started := c.Ask(ChallengeClose, 7, t0)
	require.False(t, act)
	require.True(t, started)
	require.Equal(t, Challenge{Kind: ChallengeClose, Probe: 7, Until: t0}, c)
	act, started = c.Ask(ChallengeRestart, 8, t0.Add(time.Second))
	require.False(t, act || started, "one challenge at a time")
	require.False(t, c.Answer(8), "another probe's answer")
	require.True(t, c.Answer(7))
	require.Equal(t, Challenge{Probe: 7, Until: t0}, c)
	require.False(t, c.Running())

	_, started = c.Ask(ChallengeRestart, 9, t0)
	require.True(t, started)
	require.Equal(t, ChallengeRestart, c.Expire())
	require.False(t, c.Running())
	act, _ = c.Ask(ChallengeClose, 10, t0)
	require.False(t, act, "a close is not what ran out")
	require.True(t, c.Answer(10))
	act, started = c.Ask(ChallengeRestart, 11, t0)
	require.False(t, act, "an answer clears what ran out")
	require.True(t, started)
	c.Expire()
	act, started = c.Ask(ChallengeRestart, 12, t0)
	require.True(t, act)
	require.False(t, started)
}
