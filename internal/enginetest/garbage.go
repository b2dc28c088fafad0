package enginetest

import (
	"encoding/hex"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// maxSeen bounds the datagrams of real traffic a Garbage keeps.
const maxSeen = 512

// Garbage makes the datagrams of a robustness test: random bytes, or a
// copy of real traffic seen on the links with one to three bits flipped.
type Garbage struct {
	Rng *rand.Rand
	// MaxLen bounds random datagrams to MaxLen − 1 bytes.
	MaxLen int
	// Shape, when set, adjusts each random datagram.
	Shape func(b []byte)
	// Keep, when set, chooses the datagrams of real traffic kept.
	Keep func(b []byte) bool
	// Fixed leading bytes of a copy are never flipped.
	Fixed int

	seen [][]byte
}

// observe keeps the next datagram queued on each link, while fewer than
// 512 are kept.
func (g *Garbage) observe(links ...*Link) {
	for _, l := range links {
		if len(l.Queue) > 0 && len(g.seen) < maxSeen && (g.Keep == nil || g.Keep(l.Queue[0].Data)) {
			g.seen = append(g.seen, l.Queue[0].Data)
		}
	}
}

// Next returns a new datagram: random one time in four, and always while
// no traffic was seen.
func (g *Garbage) Next() []byte {
	rng := g.Rng
	if len(g.seen) == 0 || rng.IntN(4) == 0 {
		b := make([]byte, rng.IntN(g.MaxLen))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if g.Shape != nil {
			g.Shape(b)
		}
		return b
	}
	b := append([]byte(nil), g.seen[rng.IntN(len(g.seen))]...)
	for range 1 + rng.IntN(3) {
		if len(b) > g.Fixed {
			b[g.Fixed+rng.IntN(len(b)-g.Fixed)] ^= byte(1 << rng.IntN(8))
		}
	}
	return b
}

// Garble runs rounds of a robustness test: each round calls before (to
// queue messages), lets g see the traffic on the links, moves the clock
// 1 ms, hands each session a datagram from g, steps the pair (or moves
// the clock 1 s when nothing is scheduled) and calls after (to drain and
// check the sessions). Errors from the garbage are ignored.
func (p *Pair[S]) Garble(g *Garbage, rounds int, before, after func()) {
	for range rounds {
		before()
		g.observe(&p.AB, &p.BA)
		p.Now = p.Now.Add(time.Millisecond)
		_ = p.A.HandleDatagram(p.Now, g.Next())
		_ = p.B.HandleDatagram(p.Now, g.Next())
		if !p.Step() {
			p.Now = p.Now.Add(time.Second)
		}
		after()
	}
}

// SplitDatagrams cuts b into datagrams, each prefixed by its length byte:
// the input of an engine's session fuzz test.
func SplitDatagrams(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := min(int(b[0]), len(b)-1)
		out = append(out, b[1:1+n])
		b = b[1+n:]
	}
	return out
}

// Seeds returns fuzz seeds for SplitDatagrams: the first datagram, the
// first two, and so on, of those shorter than 256 bytes.
func Seeds(datagrams [][]byte) [][]byte {
	var seed []byte
	var out [][]byte
	for _, b := range datagrams {
		if len(b) < 256 {
			seed = append(append(seed, byte(len(b))), b...)
			out = append(out, seed)
		}
	}
	return out
}

// PollChecked polls s at now until nothing is due, failing after 100,000
// datagrams, and checks each one with check; then the deadline must lie
// in the future (or be zero). It checks with plain comparisons, not
// require, since fuzzers run it for every datagram of every input; check
// should do the same.
func PollChecked(t testing.TB, s engine.Engine, now time.Time, buf []byte, check func(b []byte)) {
	t.Helper()
	for range 100_000 {
		n := s.Poll(now, buf)
		if n == 0 {
			if d := s.Deadline(); !d.IsZero() && !d.After(now) {
				t.Fatalf("Poll returns 0 with the deadline %v at %v", d, now)
			}
			return
		}
		check(buf[:n])
	}
	t.Fatal("Poll keeps returning datagrams")
}

// Hexes returns bs in hex.
func Hexes(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = hex.EncodeToString(b)
	}
	return out
}
