package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLifecycleStates: handshake, established, closing, closed; Err only
// once closed.
func TestLifecycleStates(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	l := NewLifecycle(t0)
	require.Equal(t, StateHandshake, l.State())
	require.Equal(t, t0, l.Created)
	require.Equal(t, t0, l.LastRecv)
	l.Establish()
	require.Equal(t, StateEstablished, l.State())
	require.True(t, l.BeginClose(t0.Add(time.Second), true))
	require.Equal(t, StateClosing, l.State())
	require.Equal(t, t0.Add(time.Second), l.CloseAt)
	require.False(t, l.BeginClose(t0.Add(2*time.Second), false), "closing already")
	require.Equal(t, t0.Add(time.Second), l.CloseAt)
	l.Establish()
	require.Equal(t, StateClosing, l.State(), "a handshake completing while closing")
	l.Fail(ErrIdleTimeout)
	require.Equal(t, StateClosed, l.State())
	require.Equal(t, ErrIdleTimeout, l.Err())

	l = NewLifecycle(t0)
	require.False(t, l.BeginClose(t0, true), "nothing to close")
	require.Equal(t, StateClosed, l.State())
	require.NoError(t, l.Err())

	l = NewLifecycle(t0)
	l.PeerClosing()
	require.Equal(t, StateClosing, l.State())
	require.True(t, l.CloseAt.IsZero(), "Linger does not run")
	l.Fail(nil)
	require.NoError(t, l.Err())
}

// TestLifecycleTimers: the handshake timeout runs in StateHandshake, Linger
// in StateClosing, the idle timeout always; none with a duration ≤ 0 (but
// Linger); Deadline is zero in StateClosed.
func TestLifecycleTimers(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	l := NewLifecycle(t0)
	l.LastRecv = t0.Add(time.Second)
	require.Equal(t, End{At: t0.Add(3 * time.Second), Err: ErrHandshakeTimeout, OK: true}, l.HandshakeTimeout(3*time.Second))
	require.False(t, l.HandshakeTimeout(0).OK)
	require.Equal(t, End{At: t0.Add(6 * time.Second), Err: ErrIdleTimeout, OK: true}, l.IdleTimeout(5*time.Second))
	require.False(t, l.IdleTimeout(-1).OK)
	require.False(t, l.Linger(5*time.Second).OK)
	l.Establish()
	require.False(t, l.HandshakeTimeout(3*time.Second).OK)
	require.True(t, l.BeginClose(t0.Add(2*time.Second), false))
	require.Equal(t, End{At: t0.Add(7 * time.Second), Err: ErrLingerTimeout, OK: true}, l.Linger(5*time.Second))
	next := func() time.Time { return t0.Add(time.Second) }
	require.Equal(t, t0.Add(time.Second), l.Deadline(End{}, next))
	require.Equal(t, t0, l.Deadline(End{At: t0, OK: true}, next))
	require.Equal(t, t0, l.Deadline(End{At: t0, OK: true}, func() time.Time { return time.Time{} }))
	l.Fail(nil)
	require.True(t, l.Deadline(End{At: t0, OK: true}, next).IsZero())
}

// TestUnconfirmed: nil with nothing left, else the error wrapped with the
// count.
func TestUnconfirmed(t *testing.T) {
	require.NoError(t, LingerError(0))
	err := LingerError(3)
	require.ErrorIs(t, err, ErrLingerTimeout)
	require.EqualError(t, err, "linger timeout: messages left unconfirmed: 3 messages unconfirmed")
	require.True(t, errors.Is(Unconfirmed(ErrPeerClosed, 1), ErrPeerClosed))
}
