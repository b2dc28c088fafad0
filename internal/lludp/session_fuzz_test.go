package lludp

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
		d := unhex(f, h)
		captures = append(captures, d)
		if len(d) <= maxInput-18 {
			// Open the circuit, inject the capture into B, then a message
			// each way.
			f.Add(append(append([]byte{1, 50, 0, 0, 4 | 8, byte(len(d))}, d...), 2, 10, 0, 0, 2|8, 200, 0, 0, 1, 100, 0, 0))
		}
	}
	f.Add([]byte{2, 255, 0, 0, 0, 0, 0, 0, 3, 1, 5, 0x80, 3 | 8, 2, 7, 1, 3 | 16, 3, 9, 0, 6, 2, 0, 0, 1, 200, 0, 0, 7, 0, 0, 0, 1, 30, 0, 0, 7, 0, 0, 0, 5, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) { fuzzLLUDPSession(t, b[:min(len(b), maxInput)], slices.Clip(captures)) })
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
