package airhook

import (
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
)

// FuzzAirhookSession drives two sessions over lossy simulated links as
// the input says (see enginetest.Script): messages both ways, clock steps,
// and injected copies, mutated or cut, of the reference captures and of
// the pair's own datagrams. Both sessions' bookkeeping is checked after
// every record; then, left alone, every message is confirmed or a
// session ends within its timers: nothing stalls silently.
func FuzzAirhookSession(f *testing.F) {
	var captures [][]byte
	for _, h := range allVectorHex(loadVectors(f)) {
		captures = append(captures, unhex(f, h))
	}
	enginetest.AddScriptSeeds(f, captures)
	f.Fuzz(func(t *testing.T, b []byte) {
		fuzzAirhookSession(t, b[:min(len(b), enginetest.MaxScriptInput)], slices.Clip(captures))
	})
}

func fuzzAirhookSession(t *testing.T, b []byte, captures [][]byte) {
	cfg := Config{KeepAlive: 500 * time.Millisecond, IdleTimeout: 5 * time.Second, HandshakeTimeout: 5 * time.Second, MaxQueued: 64}
	cfgA, cfgB := cfg, cfg
	cfgA.Session, cfgB.Session = idA, idB
	p := newPair(t, cfgA, cfgB, 5*time.Millisecond, 0, 7)
	p.PollLimit = 10_000
	sc := enginetest.Script[*Session]{
		P:    p,
		Pool: captures,
		Send: func(s *Session, n int) {
			_ = s.Send(make([]byte, min(n, maxMessageLen)), engine.SendOptions{})
		},
		Check: func(s *Session) { checkInvariants(t, s) },
	}
	sc.Run(b)
	sc.Settle(time.Minute, 100_000)
}
