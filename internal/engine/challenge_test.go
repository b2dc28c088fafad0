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
	act, started := c.Ask(t0, ChallengeClose, 7, t0)
	require.False(t, act)
	require.True(t, started)
	require.Equal(t, Challenge{Kind: ChallengeClose, Probe: 7, Until: t0}, c)
	act, started = c.Ask(t0, ChallengeRestart, 8, t0.Add(time.Second))
	require.False(t, act || started, "one challenge at a time")
	require.False(t, c.Answer(t0, 8), "another probe's answer")
	require.True(t, c.Answer(t0, 7))
	require.Equal(t, Challenge{Probe: 7, Until: t0}, c)
	require.False(t, c.Running())

	_, started = c.Ask(t0, ChallengeRestart, 9, t0)
	require.True(t, started)
	require.Equal(t, ChallengeRestart, c.Expire(t0))
	require.False(t, c.Running())
	act, _ = c.Ask(t0, ChallengeClose, 10, t0)
	require.False(t, act, "a close is not what ran out")
	require.True(t, c.Answer(t0, 10))
	act, started = c.Ask(t0, ChallengeRestart, 11, t0)
	require.False(t, act, "an answer clears what ran out")
	require.True(t, started)
	c.Expire(t0)
	act, started = c.Ask(t0, ChallengeRestart, 12, t0)
	require.True(t, act)
	require.False(t, started)
}

// TestChallengeReprobe: an answer to any of the running challenge's
// probes refuses the announcement; of the probes after the first the
// latest three are kept; a new challenge forgets the old probes.
func TestChallengeReprobe(t *testing.T) {
	t0 := time.Unix(100, 0)
	var c Challenge
	c.Reprobe(3)
	require.False(t, c.Probed(3), "no challenge runs")
	_, started := c.Ask(t0, ChallengeClose, 7, t0)
	require.True(t, started)
	for _, id := range []uint32{8, 9, 9, 10, 11} {
		c.Reprobe(id)
	}
	for id, want := range map[uint32]bool{7: true, 8: false, 9: true, 10: true, 11: true, 12: false} {
		require.Equal(t, want, c.Probed(id), "probe %d", id)
	}
	require.True(t, c.Answer(t0, 9))
	require.False(t, c.Running())

	_, started = c.Ask(t0, ChallengeRestart, 20, t0)
	require.True(t, started)
	require.False(t, c.Answer(t0, 11), "a probe of an earlier challenge")
	require.True(t, c.Answer(t0, 20))
}
