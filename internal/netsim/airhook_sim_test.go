package netsim_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/airhook"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/netsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Session IDs of the simulated endpoints.
const (
	sessionA  = 0x0a0a0a0a
	sessionB  = 0x0b0b0b0b
	sessionB2 = 0x0b0b0b02
)

// ahMessage is message i from side from: 1 + i%256 bytes whose first byte
// holds i/256 (plus 128 from B) and whose other bytes follow from i, so
// that the length and the content name the message.
func ahMessage(from netsim.Side, i int) []byte {
	p := make([]byte, 1+i%256)
	p[0] = byte(i/256) + 128*byte(from)
	for j := 1; j < len(p); j++ {
		p[j] = byte(i*31+j) ^ byte(from)
	}
	return p
}

// ahIndex is the index of message p from side from, or -1 if p is no such
// message.
func ahIndex(from netsim.Side, p []byte) int {
	if len(p) == 0 || p[0]/128 != byte(from) {
		return -1
	}
	i := int(p[0]%128)*256 + len(p) - 1
	if !bytes.Equal(p, ahMessage(from, i)) {
		return -1
	}
	return i
}

func newAirhook(t *testing.T, now time.Time, cfg airhook.Config) *airhook.Session {
	t.Helper()
	s, err := airhook.New(now, cfg)
	require.NoError(t, err)
	return s
}

// ahTransfer is a simulation of two Airhook sessions sending each other n
// messages, fed only while Pending is below MaxQueued.
type ahTransfer struct{ *duplex[*airhook.Session] }

func newAHTransfer(t *testing.T, seed uint64, n int, link netsim.LinkConfig, cfg airhook.Config) *ahTransfer {
	var sessions [2]*airhook.Session
	for side, id := range []uint32{sessionA, sessionB} {
		c := cfg
		c.Session = id
		sessions[side] = newAirhook(t, netsim.Epoch(), c)
	}
	return &ahTransfer{newDuplex(t, seed, n, link, sessions[netsim.A], sessions[netsim.B], ahMessage,
		func(int) engine.SendOptions { return engine.SendOptions{} },
		func(from netsim.Side, m engine.Message) int { return ahIndex(from, m.Data) })}
}

func (x *ahTransfer) check() {
	t := x.t
	for side, s := range x.sessions {
		name := netsim.Side(side)
		x.checkDelivered(name)
		assert.Zero(t, s.Pending(), "%v", name)
		assert.LessOrEqual(t, x.maxPend[side], s.Capabilities().MaxQueued, "%v", name)
		assert.NoError(t, s.Err(), "%v", name)
		assert.Equal(t, uint64(x.n), s.Stats().MessagesRecv, "%v", name)
	}
}

func TestAirhookTransfer(t *testing.T) {
	impaired := func(loss float64) netsim.LinkConfig {
		return netsim.LinkConfig{
			Loss: loss, Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond,
			Reorder: 0.05, ReorderDelay: 30 * time.Millisecond, Duplicate: 0.02,
		}
	}
	const n = 10_000
	for _, tc := range []struct {
		name  string
		seed  uint64
		link  netsim.LinkConfig
		limit time.Duration
	}{
		{"clean", 1, netsim.LinkConfig{Delay: 10 * time.Millisecond}, time.Minute},
		{"loss10", 2, impaired(0.1), 5 * time.Minute},
		{"loss30", 3, impaired(0.3), 10 * time.Minute},
		{"rate", 4, netsim.LinkConfig{
			Loss: 0.05, Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond,
			Rate: 100_000, QueueLimit: 8 << 10,
		}, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			x := newAHTransfer(t, tc.seed, n, tc.link, airhook.Config{})
			err := x.sim.RunUntil(x.step, tc.limit)
			st := x.sim.Stats()
			t.Logf("seed %d: %v virtual, %v real, %d steps; received A %d B %d; most in flight A→B %d B→A %d",
				tc.seed, st.Elapsed, time.Since(start).Round(time.Millisecond), st.Steps,
				x.received[netsim.A], x.received[netsim.B], x.maxQ[netsim.A], x.maxQ[netsim.B])
			t.Logf("A→B %+v, errors at B %d", st.A.Out, st.B.Errors)
			t.Logf("B→A %+v, errors at A %d", st.B.Out, st.A.Errors)
			require.NoError(t, err, "seed %d", tc.seed)
			x.check()
			if tc.link.Rate > 0 {
				assert.NotZero(t, st.A.Out.QueueDropped+st.B.Out.QueueDropped, "the rate limiter drops")
			}
		})
	}
}

func TestAirhookDeterministic(t *testing.T) {
	link := netsim.LinkConfig{
		Loss: 0.2, Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond,
		Reorder: 0.05, ReorderDelay: 30 * time.Millisecond, Duplicate: 0.02,
	}
	run := func() (netsim.Stats, [2]engine.Stats) {
		x := newAHTransfer(t, 9, 2000, link, airhook.Config{})
		require.NoError(t, x.sim.RunUntil(x.step, 5*time.Minute))
		x.check()
		return x.sim.Stats(), [2]engine.Stats{x.sessions[0].Stats(), x.sessions[1].Stats()}
	}
	sim1, eng1 := run()
	sim2, eng2 := run()
	assert.Equal(t, sim1, sim2)
	assert.Equal(t, eng1, eng2)
}

// runFor runs s for d of virtual time, or until no event is left.
func runFor(t *testing.T, s *netsim.Sim, d time.Duration) {
	t.Helper()
	if err := s.RunUntil(func() bool { return false }, d); !errors.Is(err, netsim.ErrIdle) {
		require.ErrorIs(t, err, netsim.ErrTimeLimit)
	}
}

// restartSim establishes A and B, confirms one message each way, then
// replaces B with a new session. It returns the Sim, A and the new B.
func restartSim(t *testing.T, cfgA airhook.Config) (*netsim.Sim, *airhook.Session, *airhook.Session) {
	link := netsim.LinkConfig{Delay: 10 * time.Millisecond}
	cfgA.Session = sessionA
	a := newAirhook(t, netsim.Epoch(), cfgA)
	b := newAirhook(t, netsim.Epoch(), airhook.Config{Session: sessionB})
	s := netsim.New(5, a, b, link, link)
	require.NoError(t, a.Send([]byte("before"), engine.SendOptions{}))
	require.NoError(t, b.Send([]byte("before"), engine.SendOptions{}))
	established := func() bool {
		return a.State() == engine.StateEstablished && b.State() == engine.StateEstablished &&
			a.Pending() == 0 && b.Pending() == 0
	}
	require.NoError(t, s.RunUntil(established, 10*time.Second))
	runFor(t, s, time.Second)
	b2 := newAirhook(t, s.Now(), airhook.Config{Session: sessionB2})
	s.Replace(netsim.B, b2)
	return s, a, b2
}

func TestAirhookPeerRestartAdopted(t *testing.T) {
	s, a, b2 := restartSim(t, airhook.Config{})
	var gotB2 []string
	s.OnDeliver(netsim.B, func(m engine.Message) { gotB2 = append(gotB2, string(m.Data)) })
	require.NoError(t, a.Send([]byte("after"), engine.SendOptions{}))
	require.NoError(t, b2.Send([]byte("hello from B2"), engine.SendOptions{}))
	done := func() bool { return a.Pending() == 0 && b2.Pending() == 0 && len(gotB2) > 0 }
	require.NoError(t, s.RunUntil(done, 30*time.Second))
	assert.Equal(t, uint64(1), a.Stats().PeerRestarts)
	assert.Equal(t, []string{"after"}, gotB2)
	assert.Equal(t, engine.StateEstablished, a.State())
	assert.NoError(t, a.Err())
}

func TestAirhookPeerRestartRejected(t *testing.T) {
	s, a, b2 := restartSim(t, airhook.Config{RejectNewPeerSession: true})
	var errs []error
	s.OnError(netsim.A, func(err error) { errs = append(errs, err) })
	require.NoError(t, b2.Send([]byte("hello from B2"), engine.SendOptions{}))
	require.NoError(t, s.RunUntil(func() bool { return len(errs) > 0 }, 10*time.Second))
	for _, err := range errs {
		assert.ErrorIs(t, err, engine.ErrPeerRestarted)
	}
	assert.Zero(t, a.Stats().PeerRestarts)
	assert.Equal(t, engine.StateEstablished, a.State())
}

func TestAirhookIdleTimeout(t *testing.T) {
	const idle, keepAlive = 3 * time.Second, 500 * time.Millisecond
	link := netsim.LinkConfig{Delay: 10 * time.Millisecond}
	cfg := airhook.Config{IdleTimeout: idle, KeepAlive: keepAlive}
	cfg.Session = sessionA
	a := newAirhook(t, netsim.Epoch(), cfg)
	cfg.Session = sessionB
	b := newAirhook(t, netsim.Epoch(), cfg)
	s := netsim.New(6, a, b, link, link)
	var lastRecv time.Time // when a datagram last reached A
	var datagrams uint64
	closed := func() bool {
		if d := s.Stats().A.Datagrams; d != datagrams {
			lastRecv, datagrams = s.Now(), d
		}
		return a.State() == engine.StateClosed
	}
	require.NoError(t, a.Send([]byte("hi"), engine.SendOptions{}))

	// Keep-alives hold the association up well past the idle timeout.
	require.ErrorIs(t, s.RunUntil(closed, 3*idle), netsim.ErrTimeLimit)
	require.Equal(t, engine.StateEstablished, a.State())
	require.Equal(t, engine.StateEstablished, b.State())
	require.Zero(t, a.Pending())

	// B vanishes: nothing reaches A any more.
	s.Link(netsim.B).SetConfig(netsim.LinkConfig{Loss: 1})
	vanished := s.Now()
	require.NoError(t, s.RunUntil(closed, idle+time.Second))
	assert.ErrorIs(t, a.Err(), engine.ErrIdleTimeout)
	t.Logf("B vanished at %v, A last received at %v and closed at %v",
		vanished.Sub(netsim.Epoch()), lastRecv.Sub(netsim.Epoch()), s.Now().Sub(netsim.Epoch()))
	assert.GreaterOrEqual(t, s.Now().Sub(lastRecv), idle)
	assert.LessOrEqual(t, s.Now().Sub(lastRecv), idle+50*time.Millisecond)
	assert.LessOrEqual(t, s.Now().Sub(vanished), idle+50*time.Millisecond)
}

// TestAirhookReceiverBackoffClears: a side that only receives never takes
// an RTT sample (its packets carry no messages), so only the peer's
// confirmations may end the back-off of its header repeats. Otherwise its
// RTO stays near RTOMax and its confirmations, due one RTO after its last
// packet, throttle the sender.
func TestAirhookReceiverBackoffClears(t *testing.T) {
	link := netsim.LinkConfig{Loss: 0.1, Delay: 10 * time.Millisecond}
	x := newAHTransfer(t, 11, 3000, link, airhook.Config{})
	x.sent[netsim.B], x.received[netsim.A] = x.n, x.n // one way: A to B
	require.NoError(t, x.sim.RunUntil(x.step, 10*time.Minute))
	for i, c := range x.got[netsim.B] {
		require.Equal(t, 1, c, "message %d", i)
	}
	b := x.sessions[netsim.B].Stats()
	require.Zero(t, b.SRTT, "the receiver took no sample")
	require.Equal(t, airhook.DefaultRTOInitial, b.RTO, "and its back-off was cleared")
	t.Logf("virtual %v", x.sim.Stats().Elapsed)
}
