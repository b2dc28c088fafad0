package lludp

import (
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
)

// FuzzLLUDPSession drives a client and a server over lossy simulated
// links as the input says (see enginetest.Script): messages both ways,
// reliable or not, clock steps, and injected copies, mutated or cut, of
// the vectors and of the pair's own datagrams. Both sessions' bookkeeping
// is checked after every record; then, left alone, every message is
// acknowledged or a session ends within its timers: nothing stalls
// silently.
func FuzzLLUDPSession(f *testing.F) {
	var captures [][]byte
	for _, h := range allVectorHex(loadVectors(f)) {
		captures = append(captures, unhex(f, h))
	}
	enginetest.AddScriptSeeds(f, captures)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzLLUDPSession(t, b[:min(len(b), enginetest.MaxScriptInput)], slices.Clip(captures))
	})
}

func fuzzLLUDPSession(t *testing.T, b []byte, captures [][]byte) {
	cfg := Config{KeepAlive: 500 * time.Millisecond, IdleTimeout: 5 * time.Second, HandshakeTimeout: 5 * time.Second, MaxQueued: 64}
	p := newPair(t, cfg, cfg, 5*ms, 0, 7)
	p.PollLimit = 10_000
	k := 0
	sc := enginetest.Script[*Session]{
		P:    p,
		Pool: captures,
		Send: func(s *Session, n int) {
			k++
			opt := engine.SendOptions{MessageNumber: 9, Delivery: engine.Delivery(k % 2)}
			_ = s.Send(make([]byte, min(n, 1000)), opt)
		},
		Check: func(s *Session) { checkInvariants(t, s) },
	}
	sc.Run(b)
	sc.Settle(time.Minute, 100_000)
}
