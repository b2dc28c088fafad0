package airhook

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// link is a one-way simulated link.
type link = enginetest.Link

// pair is two sessions joined by two links, driven on a virtual clock.
type pair = enginetest.Pair[*Session]

func newPair(t testing.TB, cfgA, cfgB Config, delay time.Duration, loss float64, seed uint64) *pair {
	t.Helper()
	now := time.Unix(1_000_000, 0)
	a, err := New(now, cfgA)
	require.NoError(t, err)
	b, err := New(now, cfgB)
	require.NoError(t, err)
	p := enginetest.NewPair(t, now, a, b, delay, loss, seed, DefaultMaxDatagram)
	p.AdvanceLimit = 100_000
	return p
}
