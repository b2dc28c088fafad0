package wirefox

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// refSim drives a client Session against a refModel on a virtual clock:
// links of a fixed delay and seeded loss each way.
type refSim struct {
	t        testing.TB
	now      time.Time
	s        *Session
	m        *refModel
	toM, toS refLink
	buf      []byte
	steps    int
	closing  bool // the session may end

	got          [][]byte // delivered by the session
	peakReasm    int      // most messages the session reassembled at once
	peakBuffered int      // most bytes it held for reassembly and order
	maxBurst     int      // most datagrams the session wrote at one instant
}

func newRefSim(t testing.TB, cfg Config, delay time.Duration, loss float64, seed uint64) *refSim {
	cfg.Client, cfg.PeerID, cfg.Channels = true, clientID, testChannels
	x := &refSim{t: t, now: t0, buf: make([]byte, MTU)}
	x.toM = refLink{delay: delay, loss: loss, rng: rand.New(rand.NewPCG(seed, 1))}
	x.toS = refLink{delay: delay, loss: loss, rng: rand.New(rand.NewPCG(seed, 2))}
	x.s = newSession(t, t0, cfg)
	x.m = newRefModel(t0, func(now time.Time, b []byte) { x.toS.send(now, b) })
	x.run(time.Minute, func() bool { return x.s.State() == engine.StateEstablished && x.m.connected })
	return x
}

// run advances the clock from event to event (the model's cycle, the
// session's Deadline, arrivals) until done, failing the test on a fault
// of the model, an error of HandleDatagram, a Deadline that does not move
// (a busy loop) or when limit of virtual time passes.
func (x *refSim) run(limit time.Duration, done func() bool) {
	x.t.Helper()
	end := x.now.Add(limit)
	spins := 0
	for !done() {
		require.Empty(x.t, x.m.fault, "the reference model")
		if !x.closing {
			require.NotEqual(x.t, engine.StateClosed, x.s.State(), "session ended: %v", x.s.Err())
		}
		if x.now.After(end) {
			x.t.Fatalf("not done after %v: session %+v, model got %d, overflow %d", limit, x.s.Stats(), len(x.m.got), x.m.overflow)
		}
		next := x.m.nextTick
		if d := x.s.Deadline(); !d.IsZero() && d.Before(next) {
			next = d
		}
		for _, q := range [][]refDgram{x.toM.q, x.toS.q} {
			if len(q) > 0 && q[0].at.Before(next) {
				next = q[0].at
			}
		}
		next = maxTime(next, x.now)
		progress := next.After(x.now)
		x.now = next
		x.steps++
		progress = x.exchange() || progress
		if progress {
			spins = 0
		} else if spins++; spins > 100 {
			x.t.Fatalf("busy loop at %v: Deadline %v", x.now.Sub(t0), x.s.Deadline().Sub(t0))
		}
	}
}

// exchange delivers what arrived by x.now, polls the session, runs the
// model's cycle when due and reports whether anything happened.
func (x *refSim) exchange() bool {
	did := false
	for len(x.toM.q) > 0 && !x.toM.q[0].at.After(x.now) {
		x.m.arrive(x.toM.q[0].b)
		x.toM.q = x.toM.q[1:]
		did = true
	}
	for len(x.toS.q) > 0 && !x.toS.q[0].at.After(x.now) {
		require.NoError(x.t, x.s.HandleDatagram(x.now, x.toS.q[0].b))
		x.toS.q = x.toS.q[1:]
		x.peakReasm = max(x.peakReasm, len(x.s.reasm))
		x.peakBuffered = max(x.peakBuffered, x.s.buffered)
		did = true
	}
	burst := 0
	for n := x.s.Poll(x.now, x.buf); n > 0; n = x.s.Poll(x.now, x.buf) {
		x.toM.send(x.now, bytes.Clone(x.buf[:n]))
		burst++
		require.Less(x.t, burst, 100_000, "Poll does not stop")
	}
	x.maxBurst = max(x.maxBurst, burst)
	if !x.m.nextTick.After(x.now) {
		x.m.tick(x.now)
		did = true
	}
	for m, ok := x.s.Recv(); ok; m, ok = x.s.Recv() {
		x.got = append(x.got, m.Data)
	}
	return did || burst > 0
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// flows sends n messages of sizes drawn from [lo, hi] each way on the
// ORDERED channel 1, reliably: the model's all queued at once (its
// outbox holds them all, as an application that sends faster than the
// reference drains), the session's as Send takes them; it runs until
// both sides have every message and nothing is pending, and checks the
// messages, in order, byte for byte.
func (x *refSim) flows(n, lo, hi int, seed uint64, limit time.Duration) {
	x.t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	var toS, toM [][]byte
	for i := range n {
		toS = append(toS, msgBlob(rng, i, lo+rng.IntN(hi-lo+1)))
		toM = append(toM, msgBlob(rng, i, lo+rng.IntN(hi-lo+1)))
	}
	for _, b := range toS {
		x.m.send(b, 1, true)
	}
	sent := 0
	x.run(limit, func() bool {
		for sent < n && x.s.Send(toM[sent], engine.SendOptions{Channel: 1}) == nil {
			sent++
		}
		return sent == n && len(x.got) == n && len(x.m.got) == n && x.s.Pending() == 0 && x.m.idle()
	})
	for i := range n {
		require.True(x.t, bytes.Equal(toS[i], x.got[i]), "message %d to the session", i)
		require.True(x.t, bytes.Equal(toM[i], x.m.got[i]), "message %d to the model", i)
	}
}

// TestReferencePacedNoOverflow: with ReferencePeer, 10,000
// fragmented messages (8 to 5,000 bytes) each way between the session
// and the reference model at 0 % loss arrive exactly; the model's socket
// buffer, read one datagram per 5 ms cycle, never overflows, and the
// session never writes two datagrams at one instant.
func TestReferencePacedNoOverflow(t *testing.T) {
	x := newRefSim(t, Config{ReferencePeer: true}, 5*ms, 0, 1)
	x.flows(10_000, 8, 5000, 1, 2*time.Hour)
	x.logf()
	require.Zero(t, x.m.overflow)
	require.Equal(t, 1, x.maxBurst)
}

// TestReferenceLongQueue: with 30,000 messages (8 to 5,000 bytes) queued
// at once at the reference model, the packets it sends ahead lie more
// than 65,536 packet IDs past its oldest unacknowledged one: with
// ReferencePeer the session's packet history, 1,048,576 IDs, still tells
// them from duplicates, and every message arrives.
func TestReferenceLongQueue(t *testing.T) {
	x := newRefSim(t, Config{ReferencePeer: true}, 5*ms, 0, 6)
	x.flows(30_000, 8, 5000, 6, 10*time.Hour)
	x.logf()
	require.Greater(t, x.m.spread, uint32(historySize))
	require.Zero(t, x.s.Stats().Refused)
}

// TestReferencePacedLossy: with ReferencePeer, 1,000 messages of up
// to 3 segments each way at 10 % loss arrive exactly, within the model's
// 6 sends and without overflowing its socket buffer.
func TestReferencePacedLossy(t *testing.T) {
	x := newRefSim(t, Config{ReferencePeer: true}, 5*ms, 0.1, 2)
	x.flows(1000, 8, 3*SegmentSize, 2, time.Hour)
	x.logf()
	require.Zero(t, x.m.overflow)
	require.Equal(t, 1, x.maxBurst)
}

// TestUnpacedOverflowsReference: without ReferencePeer the session
// writes bursts that overflow the model's socket buffer: the condition
// the tests above check is a real one.
func TestUnpacedOverflowsReference(t *testing.T) {
	x := newRefSim(t, Config{}, 5*ms, 0, 1)
	x.flows(1000, 8, 5000, 1, time.Hour)
	x.logf()
	require.NotZero(t, x.m.overflow)
	require.Greater(t, x.maxBurst, 1)
}

func (x *refSim) logf() {
	x.t.Logf("virtual %v, %d steps; session: peak %d messages reassembled, %d bytes held, burst %d, %+v; model: overflow %d, sends %d, sequences %d apart in a datagram, packet IDs %d past the oldest unacknowledged",
		x.now.Sub(t0), x.steps, x.peakReasm, x.peakBuffered, x.maxBurst, x.s.Stats(), x.m.overflow, x.m.maxSends, x.m.farAhead, x.m.spread)
}

// TestReferenceKeepAlive: idle for 40 s after a transfer, the session's
// keepalives reach the reference model, which takes them without
// asserting and acknowledges them, so that the session (IdleTimeout 30 s)
// stays established.
func TestReferenceKeepAlive(t *testing.T) {
	x := newRefSim(t, Config{ReferencePeer: true}, 5*ms, 0, 4)
	x.flows(10, 8, 3000, 4, time.Minute)
	sent, end := x.s.Stats().PacketsSent, x.now.Add(40*time.Second)
	x.run(time.Minute, func() bool { return !x.now.Before(end) })
	require.Equal(t, engine.StateEstablished, x.s.State())
	require.InDelta(t, 8, x.s.Stats().PacketsSent-sent, 1, "a keepalive every 5 s")
}

// TestReferenceClosesAfterLastMessage: the reference model's application
// disconnects as soon as our message arrived. Its DISCONNECT_REQUEST goes
// out in the next write cycle, before its ACK of our message (10 ms
// later); the session waits for that ACK and closes gracefully, and its
// DISCONNECT_ACK reaches the model within its 200 ms linger.
func TestReferenceClosesAfterLastMessage(t *testing.T) {
	x := newRefSim(t, Config{ReferencePeer: true}, 20*ms, 0, 5)
	x.flows(3, 8, 3000, 5, time.Minute) // RTT samples
	x.m.onRead = func() {
		if len(x.m.got) == 4 && x.m.disconnect.IsZero() {
			x.m.disconnectPeer()
		}
	}
	require.NoError(t, x.s.Send([]byte{CmdUser, 'l', 'a', 's', 't'}, engine.SendOptions{Channel: 1}))
	x.closing = true
	x.run(time.Minute, func() bool { return x.s.State() == engine.StateClosed && x.m.closed })
	require.NoError(t, x.s.Err())
	require.False(t, x.m.gotPeerDisc)
	require.Len(t, x.m.got, 4)
}
