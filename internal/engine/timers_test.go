package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEarliest: the earliest of the times added with ok, zero if none.
func TestEarliest(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var d Earliest
	require.True(t, d.Time().IsZero())
	d.Add(t0, false)
	require.True(t, d.Time().IsZero(), "a timer that does not run")
	d.Add(t0.Add(2*time.Second), true)
	d.Add(t0.Add(time.Second), true)
	d.Add(t0.Add(3*time.Second), true)
	d.Add(t0, false)
	require.Equal(t, t0.Add(time.Second), d.Time())
}

// TestEnd: the earliest end timer and its error; of two due at the same
// instant, the one added first.
func TestEnd(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	errA, errB := errors.New("a"), errors.New("b")
	var e End
	require.False(t, e.OK)
	require.False(t, e.Due(t0))
	e.Add(t0.Add(2*time.Second), errA)
	e.Add(t0.Add(time.Second), nil)
	e.Add(t0.Add(time.Second), errB)
	require.Equal(t, End{At: t0.Add(time.Second), OK: true}, e)
	require.False(t, e.Due(t0.Add(time.Second-1)))
	require.True(t, e.Due(t0.Add(time.Second)))
	e.Add(t0, errB)
	require.Equal(t, End{At: t0, Err: errB, OK: true}, e)
}
