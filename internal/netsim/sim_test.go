package netsim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// transfer sends n messages each way between two srEngines over links
// configured by cfg and checks that each arrives exactly once. It returns
// the Sim's stats and the trace of deliveries.
func transfer(t *testing.T, seed uint64, n int, cfg LinkConfig) (Stats, []string) {
	t.Helper()
	engines := [2]*srEngine{newSR(100*time.Millisecond, 32), newSR(100*time.Millisecond, 32)}
	s := New(seed, engines[A], engines[B], cfg, cfg)
	var trace []string
	got := [2]map[string]int{{}, {}}
	for _, side := range []Side{A, B} {
		s.OnDeliver(side, func(m engine.Message) {
			got[side][string(m.Data)]++
			trace = append(trace, fmt.Sprintf("%v %v %s", s.Stats().Elapsed, side, m.Data))
		})
	}
	var sent [2]int
	done := func() bool {
		for i, e := range engines {
			for sent[i] < n && e.Pending() < e.maxQ {
				require.NoError(t, e.Send(fmt.Appendf(nil, "%v-%d", Side(i), sent[i]), engine.SendOptions{}))
				sent[i]++
			}
		}
		return sent == [2]int{n, n} && engines[A].Pending() == 0 && engines[B].Pending() == 0
	}
	require.NoError(t, s.RunUntil(done, time.Hour))
	for from, to := range []Side{B, A} {
		require.Len(t, got[to], n)
		for i := range n {
			require.Equal(t, 1, got[to][fmt.Sprintf("%v-%d", Side(from), i)])
		}
	}
	return s.Stats(), trace
}

func TestSimExactlyOnceUnderLoss(t *testing.T) {
	cfg := LinkConfig{
		Loss: 0.3, Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond,
		Reorder: 0.05, ReorderDelay: 30 * time.Millisecond, Duplicate: 0.02,
	}
	st1, trace1 := transfer(t, 1, 1000, cfg)
	st2, trace2 := transfer(t, 1, 1000, cfg)
	assert.Equal(t, st1, st2, "same seed, same stats")
	assert.Equal(t, trace1, trace2, "same seed, same deliveries at the same times")
	t.Logf("1000 messages each way at 30%% loss: %v virtual, %d steps", st1.Elapsed, st1.Steps)

	for _, out := range []LinkStats{st1.A.Out, st1.B.Out} {
		assert.InDelta(t, 0.3, float64(out.Lost)/float64(out.Sent), 0.03)
		assert.NotZero(t, out.Duplicated)
		assert.NotZero(t, out.Reordered)
	}
	assert.Equal(t, st1.A.Out.Delivered, st1.B.Datagrams)
	assert.Equal(t, st1.B.Out.Delivered, st1.A.Datagrams)
	assert.Equal(t, uint64(1000), st1.A.Messages)
	assert.Equal(t, uint64(1000), st1.B.Messages)
	assert.Zero(t, st1.A.Errors+st1.B.Errors)

	st3, _ := transfer(t, 2, 1000, cfg)
	assert.NotEqual(t, st1, st3, "another seed, another run")
}

func TestSimIdle(t *testing.T) {
	s := New(1, &stubEngine{}, &stubEngine{}, LinkConfig{}, LinkConfig{})
	assert.False(t, s.Step())
	err := s.RunUntil(func() bool { return false }, time.Hour)
	require.ErrorIs(t, err, ErrIdle)
	t.Log(err)
	assert.Equal(t, Epoch(), s.Now())
	assert.NoError(t, s.RunUntil(func() bool { return true }, 0))
}

func TestSimPeerNeverAnswers(t *testing.T) {
	a := newSR(100*time.Millisecond, 8)
	s := New(1, a, &stubEngine{}, LinkConfig{Delay: 10 * time.Millisecond}, LinkConfig{})
	require.NoError(t, a.Send([]byte("hello?"), engine.SendOptions{}))
	err := s.RunUntil(func() bool { return a.Pending() == 0 }, 5*time.Second)
	require.ErrorIs(t, err, ErrTimeLimit)
	t.Log(err)
	assert.Equal(t, Epoch().Add(5*time.Second), s.Now())
	assert.Equal(t, uint64(51), a.Stats().PacketsSent, "one every 100 ms from 0 to 5 s, both included")
}

func TestSimStaleDeadline(t *testing.T) {
	s := New(1, &stubEngine{deadline: Epoch()}, &stubEngine{}, LinkConfig{}, LinkConfig{})
	err := s.RunUntil(func() bool { return false }, 10*time.Millisecond)
	require.ErrorIs(t, err, ErrTimeLimit)
	assert.Equal(t, Epoch().Add(10*time.Millisecond), s.Now())
	assert.Equal(t, uint64(10_000), s.Stats().Steps, "a stale deadline moves time by 1 µs")
}

func TestSimStalled(t *testing.T) {
	defer func(old int) { maxStill = old }(maxStill)
	maxStill = 1000
	a := &stubEngine{echo: true, out: [][]byte{[]byte("ping")}}
	s := New(1, a, &stubEngine{echo: true}, LinkConfig{}, LinkConfig{})
	err := s.RunUntil(func() bool { return false }, time.Hour)
	require.ErrorIs(t, err, ErrStalled)
	t.Log(err)
	assert.Equal(t, Epoch(), s.Now())
}

func TestSimHandleErrors(t *testing.T) {
	bad := errors.New("bad datagram")
	a := &stubEngine{out: [][]byte{{1}, {2}, {3}}}
	b := &stubEngine{err: bad}
	s := New(1, a, b, LinkConfig{Delay: time.Millisecond}, LinkConfig{})
	var seen []error
	s.OnError(B, func(err error) { seen = append(seen, err) })
	for s.Step() {
	}
	assert.Equal(t, []error{bad, bad, bad}, seen)
	st := s.Stats()
	assert.Equal(t, SideStats{Datagrams: 3, Errors: 3}, st.B)
	assert.Equal(t, uint64(3), st.A.Out.Delivered)
	assert.Equal(t, time.Millisecond, st.Elapsed)
	assert.Equal(t, 3, b.handled)
}

func TestSimReplace(t *testing.T) {
	a, b1, b2 := newSR(50*time.Millisecond, 8), newSR(50*time.Millisecond, 8), newSR(50*time.Millisecond, 8)
	s := New(1, a, b1, LinkConfig{Delay: 5 * time.Millisecond}, LinkConfig{Delay: 5 * time.Millisecond})
	var got []string
	s.OnDeliver(B, func(m engine.Message) { got = append(got, string(m.Data)) })
	send := func(msgs ...string) {
		for _, m := range msgs {
			require.NoError(t, a.Send([]byte(m), engine.SendOptions{}))
		}
	}
	send("one", "two")
	require.NoError(t, s.RunUntil(func() bool { return a.Pending() == 0 }, time.Second))
	assert.Same(t, b1, s.Engine(B))
	s.Replace(B, b2)
	assert.Same(t, b2, s.Engine(B))
	send("three")
	require.NoError(t, s.RunUntil(func() bool { return a.Pending() == 0 }, time.Second))
	assert.Equal(t, []string{"one", "two", "three"}, got)
	assert.Equal(t, uint64(2), b1.Stats().MessagesRecv)
	assert.Equal(t, uint64(1), b2.Stats().MessagesRecv)
	assert.Equal(t, uint64(3), s.Stats().B.Messages)
}

func TestSimLinkChange(t *testing.T) {
	a, b := newSR(50*time.Millisecond, 8), newSR(50*time.Millisecond, 8)
	s := New(1, a, b, LinkConfig{}, LinkConfig{Delay: time.Millisecond})
	s.Link(B).SetConfig(LinkConfig{Loss: 1})
	require.NoError(t, a.Send([]byte("x"), engine.SendOptions{}))
	err := s.RunUntil(func() bool { return a.Pending() == 0 }, time.Second)
	require.ErrorIs(t, err, ErrTimeLimit)
	assert.Equal(t, uint64(1), b.Stats().MessagesRecv, "the message arrives, its acks do not")
	assert.Equal(t, s.Stats().B.Out.Sent, s.Stats().B.Out.Lost)
}

func TestSide(t *testing.T) {
	assert.Equal(t, "A", A.String())
	assert.Equal(t, "B", B.String())
}
