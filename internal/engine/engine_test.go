package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRTTFirstSampleAndSmoothing(t *testing.T) {
	r := NewRTT(time.Second, 10*time.Millisecond, 10*time.Second)
	require.Equal(t, time.Second, r.RTO())
	require.False(t, r.Sampled())

	r.Sample(100 * time.Millisecond) // §2.2
	require.Equal(t, 100*time.Millisecond, r.SRTT())
	require.Equal(t, 50*time.Millisecond, r.RTTVar())
	require.Equal(t, 300*time.Millisecond, r.RTO())

	r.Sample(200 * time.Millisecond) // §2.3
	require.Equal(t, (3*50*time.Millisecond+100*time.Millisecond)/4, r.RTTVar())
	require.Equal(t, (7*100*time.Millisecond+200*time.Millisecond)/8, r.SRTT())
	require.Equal(t, r.SRTT()+4*r.RTTVar(), r.RTO())
}

func TestRTTClampAndBackoff(t *testing.T) {
	r := NewRTT(time.Second, 200*time.Millisecond, 3*time.Second)
	r.Sample(time.Millisecond)
	require.Equal(t, 200*time.Millisecond, r.RTO(), "clamped to min")
	r.Backoff()
	require.Equal(t, 400*time.Millisecond, r.RTO())
	for range 10 {
		r.Backoff()
	}
	require.Equal(t, 3*time.Second, r.RTO(), "clamped to max")
	r.Sample(0)
	require.Equal(t, 3*time.Second, r.RTO(), "non-positive sample ignored")
	r.Sample(time.Millisecond)
	require.Equal(t, 200*time.Millisecond, r.RTO(), "sample clears back-off")

	r.Backoff()
	r.Backoff()
	require.Equal(t, 800*time.Millisecond, r.RTO())
	r.ClearBackoff()
	require.Equal(t, 200*time.Millisecond, r.RTO())

	fresh := NewRTT(time.Second, 200*time.Millisecond, 3*time.Second)
	fresh.Backoff()
	fresh.ClearBackoff()
	require.Equal(t, time.Second, fresh.RTO(), "back to the initial RTO before any sample")
}

func TestSerial(t *testing.T) {
	require.True(t, Less16(65535, 0))
	require.False(t, Less16(0, 65535))
	require.True(t, Less16(1, 2))
	require.False(t, Less16(2, 2))
	require.True(t, Less8(250, 3))
	require.True(t, Less32(0xFFFFFFFF, 1))
	require.True(t, Within8(0, 250, 5))
	require.True(t, Within8(250, 250, 5))
	require.True(t, Within8(5, 250, 5))
	require.False(t, Within8(6, 250, 5))
	require.False(t, Within8(249, 250, 5))
	require.True(t, Within16(3, 65530, 10))
	require.False(t, Within16(11, 65530, 10))
}

func TestTimeoutErrors(t *testing.T) {
	for _, err := range []error{ErrIdleTimeout, ErrHandshakeTimeout} {
		var te interface{ Timeout() bool }
		require.ErrorAs(t, err, &te)
		require.True(t, te.Timeout())
	}
	require.NotErrorIs(t, ErrIdleTimeout, ErrHandshakeTimeout)
}

func TestFIFO(t *testing.T) {
	var q FIFO[int]
	_, ok := q.Take()
	require.False(t, ok)
	for i := range 5 {
		q.Push(i)
	}
	q.Pop()
	q.Pop()
	require.Equal(t, 3, q.Len())
	require.Equal(t, 2, *q.Front())
	for i := 5; i < 20; i++ { // wraps storage: the live part moves to the front
		q.Push(i)
	}
	for want := 2; want < 20; want++ {
		v, ok := q.Take()
		require.True(t, ok)
		require.Equal(t, want, v)
	}
	require.Zero(t, q.Len())
	q.Push(7)
	q.Reset()
	require.Zero(t, q.Len())
}
