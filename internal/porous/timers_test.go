package porous

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// TestDeadlineProgress drives pairs of sessions through their whole life
// with seeded random inputs: the handshake (the second side accepting or
// not), packets of every delivery mode over a lossy link that reorders,
// spoofed Disconnects, Connects and Pings that start challenges, a
// restart of the peer, Close on either side, and the timeouts. Each
// session is polled at its deadline whenever that comes first: such a
// poll must make progress, a frame written or the deadline moved later
// (enginetest.PollChecked), and both sessions must end within a bounded number of
// steps. Every timer must have been due at some poll.
func TestDeadlineProgress(t *testing.T) {
	fired := make(map[timer]int)
	for seed := range uint64(300) {
		deadlineProgress(t, seed, fired)
	}
	for k := tIdle; k <= tTimeWait; k++ {
		if fired[k] == 0 {
			t.Errorf("timer %d never due", k)
		}
	}
}

// deadlineProgress is one run of TestDeadlineProgress, counting in fired
// the timers due at each poll.
func deadlineProgress(t *testing.T, seed uint64, fired map[timer]int) {
	const (
		events   = 60 * time.Second // random events, then both sides close
		maxSteps = 200_000
	)
	rng := rand.New(rand.NewPCG(seed, 1))
	pick := func(ds ...time.Duration) time.Duration { return ds[rng.IntN(len(ds))] }
	config := func(accept bool) Config {
		return Config{
			Nonce:            rng.Uint32() | 1,
			Channels:         2,
			Accept:           accept,
			KeepAlive:        pick(0, 100*time.Millisecond, 700*time.Millisecond),
			PingWhenQuiet:    rng.IntN(2) == 0,
			IdleTimeout:      pick(0, 2*time.Second, 6*time.Second),
			HandshakeTimeout: pick(0, time.Second, 4*time.Second),
			Linger:           pick(0, 300*time.Millisecond, 2*time.Second),
			NoChallenge:      rng.IntN(4) == 0,
		}
	}
	cfgB := config(rng.IntN(2) == 0)
	s := [2]*Session{newSession(t, epoch, config(false)), newSession(t, epoch, cfgB)}
	type flight struct {
		at time.Time
		to int
		b  []byte
	}
	var flights []flight
	loss := float64(rng.IntN(4)) / 10
	buf := make([]byte, MaxFrameSize)
	now := epoch
	next := epoch // the next random event
	for step := 0; ; step++ {
		if step == maxSteps {
			t.Fatalf("seed %d: sessions %v and %v still open after %d steps, at %v", seed, s[0].State(), s[1].State(), maxSteps, now.Sub(epoch))
		}
		// Deliver what arrived, then poll each session.
		kept := flights[:0]
		for _, f := range flights {
			if f.at.After(now) {
				kept = append(kept, f)
				continue
			}
			_ = s[f.to].HandleDatagram(now, f.b) // spoofs and strays are refused
		}
		flights = kept
		for i, x := range s {
			recvAll(x)
			for k, at := range x.timers {
				if !now.Before(at) {
					fired[k]++
				}
			}
			enginetest.PollChecked(t, x, now, buf, func(b []byte) {
				if rng.Float64() >= loss {
					delay := time.Duration(rng.IntN(40)+1) * time.Millisecond
					flights = append(flights, flight{now.Add(delay), 1 - i, slices.Clone(b)})
				}
			})
		}
		if s[0].State() == engine.StateClosed && s[1].State() == engine.StateClosed {
			return
		}
		// The next step: the first deadline, arrival or event.
		d := time.Time{}
		earliest := func(at time.Time) {
			if !at.IsZero() && (d.IsZero() || at.Before(d)) {
				d = at
			}
		}
		for _, x := range s {
			earliest(x.Deadline())
		}
		for _, f := range flights {
			earliest(f.at)
		}
		if now.Sub(epoch) < events {
			earliest(next)
		}
		if d.IsZero() {
			t.Fatalf("seed %d: nothing due, with sessions %v and %v", seed, s[0].State(), s[1].State())
		}
		now = d
		if now.Equal(next) && now.Sub(epoch) < events {
			next = now.Add(time.Duration(rng.IntN(300)+1) * time.Millisecond)
			i := rng.IntN(2)
			switch r := rng.IntN(100); {
			case r < 60:
				p := make([]byte, rng.IntN(3*FragmentSize))
				_ = s[i].Send(p, engine.SendOptions{Channel: uint8(rng.IntN(2)), Delivery: engine.Delivery(rng.IntN(3))})
			case r < 61:
				s[i].Close(now)
			case r < 64:
				flights = append(flights, flight{now, i, []byte{byte(FrameDisconnect)}})
			case r < 67:
				f := Frame{Type: FrameConnect, Version: Version, Channels: 2, Nonce: rng.Uint32()}
				flights = append(flights, flight{now, i, f.AppendTo(nil)})
			case r < 70:
				flights = append(flights, flight{now, i, []byte{byte(FramePing), 0, byte(rng.IntN(9))}})
			case r < 71:
				cfgB.Nonce = rng.Uint32() | 1
				s[1] = newSession(t, now, cfgB) // the peer restarts
			}
		} else if now.Sub(epoch) >= events {
			s[0].Close(now)
			s[1].Close(now)
		}
	}
}

// TestPingWhenQuiet: with Config.PingWhenQuiet, both sessions still ping
// at once after the handshake, for a first RTT sample; then a session
// whose peer's Pings arrive more often than its own KeepAlive never
// pings, the peer pings once per its KeepAlive and each Ping is
// answered, so an idle connection carries one Ping and one PingAck per
// interval.
func TestPingWhenQuiet(t *testing.T) {
	const intervals = 20
	a := Config{KeepAlive: time.Second, PingWhenQuiet: true}
	b := Config{KeepAlive: 2 * time.Second, PingWhenQuiet: true}
	p := newPair(t, a, b, 10*time.Millisecond, 0, 1)
	p.Advance(epoch.Add(time.Second))
	require.Equal(t, engine.StateEstablished, p.A.State())
	require.Equal(t, engine.StateEstablished, p.B.State())
	require.True(t, p.A.rtt.Sampled() && p.B.rtt.Sampled(), "no RTT sample from a first ping")
	sentA, sentB := p.A.Stats().PacketsSent, p.B.Stats().PacketsSent
	p.Advance(p.Now.Add(intervals * time.Second))
	require.Equal(t, engine.StateEstablished, p.A.State())
	require.InDelta(t, intervals, p.A.Stats().PacketsSent-sentA, 1, "A: one Ping per interval")
	require.InDelta(t, intervals, p.B.Stats().PacketsSent-sentB, 1, "B: one PingAck per Ping, no Ping")
}
