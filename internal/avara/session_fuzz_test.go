package avara

import (
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
)

// FuzzAvaraSession drives a client and a server over lossy simulated
// links as the input says (see enginetest.Script): messages both ways,
// clock steps, and injected copies, mutated or cut, of the vectors and of
// the pair's own datagrams (a mutated copy fails the checksum unless the
// mutation is in it, so most injections test the checksum). Both
// sessions' bookkeeping is checked after every record; then, left alone,
// every message is acknowledged or a session ends within its timers:
// nothing stalls silently.
func FuzzAvaraSession(f *testing.F) {
	var captures [][]byte
	for _, h := range allVectorHex(loadVectors(f)) {
		captures = append(captures, unhex(f, h))
	}
	enginetest.AddScriptSeeds(f, captures)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzAvaraSession(t, b[:min(len(b), enginetest.MaxScriptInput)], slices.Clip(captures))
	})
}

func fuzzAvaraSession(t *testing.T, b []byte, captures [][]byte) {
	cfg := Config{AckRTT: true, HandshakeTimeout: 5 * time.Second, DeadTimeout: 10 * time.Second, MaxQueued: 64}
	if len(b) > 0 { // the first byte's low bits choose the options
		cfg.ReferencePeer, cfg.ChallengeClose, cfg.ReliablePeer = b[0]&1 != 0, b[0]&2 != 0, b[0]&4 != 0
	}
	p := newPair(t, cfg, cfg, 5*ms, 0, 7)
	p.PollLimit = 10_000
	k := 0
	sc := enginetest.Script[*Session]{
		P:    p,
		Pool: captures,
		Send: func(s *Session, n int) {
			k++
			_ = s.Send(make([]byte, min(n, MaxData)), engine.SendOptions{Params: engine.Params{Command: int8(k % 37), P3: int32(k)}})
		},
		Check: func(s *Session) { checkInvariants(t, s) },
	}
	sc.Run(b)
	sc.Settle(time.Minute, 100_000)
}

// checkInvariants checks the session's bookkeeping with plain
// comparisons (see enginetest.PollChecked).
func checkInvariants(t *testing.T, s *Session) {
	pending, bytes := s.queue.Len(), 0
	for _, m := range s.flight {
		if !m.acked && !m.transport {
			pending++
			bytes += len(m.data)
		}
	}
	for _, m := range s.ctl {
		if !m.transport {
			t.Fatal("a game message among the transport messages")
		}
	}
	queued := s.queue.Clone()
	for m, ok := queued.Take(); ok; m, ok = queued.Take() {
		if m.transport {
			pending--
		} else {
			bytes += len(m.data)
		}
	}
	if pending != s.pending || bytes != s.pendBytes {
		t.Fatalf("pending %d (%d bytes), counted %d (%d bytes)", s.pending, s.pendBytes, pending, bytes)
	}
	if len(s.flight) > heldSlots+1 {
		t.Fatalf("%d messages in flight beyond the window", len(s.flight))
	}
	if len(s.flight) > 0 && s.flight[0].acked {
		t.Fatal("an acknowledged message at the front of the flight")
	}
	if s.cfg.ReferencePeer && len(s.flight) > 0 && s.nextSerial-s.flight[0].serial > 2*ReferenceSkipAfter {
		t.Fatalf("serials %d..%d outstanding", s.flight[0].serial, s.nextSerial-2)
	}
	held := 0
	for i := range s.ring {
		if h := &s.ring[i]; h.ok {
			held++
			if off := h.serial - s.expected; off == 0 || off >= windowSerials {
				t.Fatalf("serial %d held with %d expected", h.serial, s.expected)
			}
		}
	}
	if held != s.nHeld {
		t.Fatalf("%d held, counted %d", held, s.nHeld)
	}
	if s.cc.InFlight() < 0 {
		t.Fatal("negative bytes in flight")
	}
	enginetest.PollChecked(t, s, s.now, make([]byte, MaxDatagram), func(b []byte) {
		if len(b) > s.cfg.MaxDatagram || len(b) == PunchLen {
			t.Fatalf("datagram of %d bytes", len(b))
		}
	})
}
