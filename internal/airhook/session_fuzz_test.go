package airhook

import (
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
)

// maxInput is the longest input the session fuzzer reads (the rest is
// ignored). The fuzzer minimizes every input it finds interesting, in a
// number of runs that grows with the square of its length: with inputs
// grown to a kilobyte or more it would minimize for minutes and hardly
// fuzz.
const maxInput = 256

// FuzzAirhookSession drives two sessions over lossy simulated links as
// the input says (see enginetest.Script): messages both ways, clock steps,
// and injected copies, mutated or cut, of the reference captures and of
// the pair's own datagrams. Both sessions' bookkeeping is checked after
// every record; then, left alone, every message is confirmed or a
// session ends within its timers: nothing stalls silently.
func FuzzAirhookSession(f *testing.F) {
	var captures [][]byte
	for _, h := range allVectorHex(loadVectors(f)) {
		d := unhex(f, h)
		captures = append(captures, d)
		if len(d) <= maxInput-18 {
			// Handshake, inject the capture into B, then a message each way.
			f.Add(append(append([]byte{1, 50, 0, 0, 4 | 8, byte(len(d))}, d...), 2, 10, 0, 0, 2|8, 200, 0, 0, 1, 100, 0, 0))
		}
	}
	f.Add([]byte{2, 255, 0, 0, 0, 0, 0, 0, 3, 1, 5, 0x80, 3 | 8, 2, 7, 1, 3 | 16, 3, 9, 0, 6, 2, 0, 0, 1, 200, 0, 0, 7, 0, 0, 0, 1, 30, 0, 0, 7, 0, 0, 0, 5, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) { fuzzAirhookSession(t, b[:min(len(b), maxInput)], slices.Clip(captures)) })
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
