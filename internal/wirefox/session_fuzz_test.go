package wirefox

import (
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
)

// FuzzWirefoxSession drives a client and a server over lossy simulated
// links as the input says (see enginetest.Script): messages both ways on
// every channel, reliable or not, clock steps, and injected copies,
// mutated or cut, of the vectors and of the pair's own datagrams. Both
// sessions' bookkeeping is checked after every record; then, left alone,
// every message is acknowledged or a session ends within its timers.
func FuzzWirefoxSession(f *testing.F) {
	_, captures, _ := allDatagrams(f)
	enginetest.AddScriptSeeds(f, captures)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzSession(t, b[:min(len(b), enginetest.MaxScriptInput)], slices.Clip(captures))
	})
}

func fuzzSession(t *testing.T, b []byte, captures [][]byte) {
	cfg := Config{KeepAlive: 500 * time.Millisecond, IdleTimeout: 5 * time.Second, MaxQueued: 64, SendLimit: 10}
	p := newPair(t, cfg, cfg, 5*ms, 0, 7)
	p.PollLimit = 10_000
	k := 0
	sc := enginetest.Script[*Session]{
		P:    p,
		Pool: captures,
		Send: func(s *Session, n int) {
			k++
			m := make([]byte, 1+n*13)
			m[0] = CmdUser
			_ = s.Send(m, engine.SendOptions{Channel: uint8(k % 3), Delivery: engine.Delivery(k / 3 % 2)})
		},
		Check: func(s *Session) { checkInvariants(t, s) },
	}
	sc.Run(b)
	sc.Settle(time.Minute, 100_000)
}

// checkInvariants checks a session's bookkeeping.
func checkInvariants(t *testing.T, s *Session) {
	n := 0
	for p := s.inflight.head; p != nil; p = p.next {
		if p.acked || p.due {
			t.Fatalf("packet %d in flight acked %v due %v", p.id, p.acked, p.due)
		}
		n++
	}
	if n > s.unackedN {
		t.Fatalf("%d in flight, %d unacknowledged", n, s.unackedN)
	}
	if s.pending < 0 || s.pendBytes < 0 || s.unackedN < 0 || s.buffered < 0 {
		t.Fatalf("negative counts: pending %d bytes %d unacked %d buffered %d", s.pending, s.pendBytes, s.unackedN, s.buffered)
	}
	held := 0
	for _, c := range s.chans {
		for _, m := range c.held {
			held += heldCost + cap(m.data)
		}
	}
	for _, r := range s.reasm {
		cost := reasmCost
		for _, q := range r.segs {
			cost += segCost + cap(q.body)
		}
		if cost != r.cost {
			t.Fatalf("reassembly counts %d, holds %d", r.cost, cost)
		}
		held += cost
	}
	if held != s.buffered || held > s.cfg.MaxRecvBuffer+msgCost(s.cfg.MaxMessage) {
		t.Fatalf("buffered %d, held %d, bound %d", s.buffered, held, s.cfg.MaxRecvBuffer)
	}
	if len(s.owedAcks) > maxOwedAcks || len(s.owedNaks) > maxOwedNaks {
		t.Fatalf("owed %d acks %d naks", len(s.owedAcks), len(s.owedNaks))
	}
}
