package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
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

// TestLifecycleCounters: Recv, Heard and Sent count what they handle;
// Snapshot adds the estimates.
func TestLifecycleCounters(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	l := NewLifecycle(t0)
	_, ok := l.Recv()
	require.False(t, ok)
	l.Inbox.Push(Message{Data: []byte("a")})
	m, ok := l.Recv()
	require.True(t, ok)
	require.Equal(t, "a", string(m.Data))
	l.Heard(t0.Add(time.Second), 100)
	require.Equal(t, t0.Add(time.Second), l.LastRecv)
	require.Equal(t, 0, l.Sent(0))
	require.Equal(t, 40, l.Sent(40))
	require.Equal(t, Stats{PacketsSent: 1, PacketsReceived: 1, BytesSent: 40, BytesReceived: 100, MessagesRecv: 1}, l.Counters)
	cc := congestion.New(t0, congestion.Config{MaxDatagram: 1200})
	st := l.Snapshot(time.Millisecond, 2*time.Millisecond, 3*time.Millisecond, cc)
	require.Equal(t, l.Counters.BytesSent, st.BytesSent)
	require.Equal(t, []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}, []time.Duration{st.SRTT, st.RTTVar, st.RTO})
	require.Equal(t, cc.Stats(), st.Congestion)
}

// TestLifecycleRefusing: new messages are refused while closed to new
// data, or while MaxRecvQueue messages wait.
func TestLifecycleRefusing(t *testing.T) {
	l := NewLifecycle(time.Unix(1_000_000, 0))
	require.True(t, l.RecvOpen())
	require.False(t, l.Refusing())
	l.SetRecvOpen(false)
	require.False(t, l.RecvOpen())
	require.True(t, l.Refusing())
	l.SetRecvOpen(true)
	for range MaxRecvQueue - 1 {
		l.Inbox.Push(Message{})
	}
	require.False(t, l.Refusing())
	l.Inbox.Push(Message{})
	require.True(t, l.Refusing())
}

// TestLifecycleInput: ErrClosed once closed, without handling; malformed
// and rejected datagrams counted, other errors not.
func TestLifecycleInput(t *testing.T) {
	l := NewLifecycle(time.Unix(1_000_000, 0))
	handled := 0
	handle := func(err error) func() error {
		return func() error { handled++; return err }
	}
	require.NoError(t, l.Input(handle(nil)))
	require.ErrorIs(t, l.Input(handle(fmt.Errorf("%w: x", ErrMalformed))), ErrMalformed)
	require.ErrorIs(t, l.Input(handle(fmt.Errorf("%w: x", ErrRejected))), ErrRejected)
	require.ErrorIs(t, l.Input(handle(ErrPeerRestarted)), ErrPeerRestarted)
	require.Equal(t, 4, handled)
	require.Equal(t, uint64(2), l.Counters.PacketsRejected)
	l.Fail(nil)
	require.ErrorIs(t, l.Input(handle(nil)), ErrClosed)
	require.Equal(t, 4, handled)
	require.Equal(t, uint64(2), l.Counters.PacketsRejected)
}
