package lludp

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWindowMatchesModel checks the duplicate window against a plain set
// of the numbers received within windowBits of the newest, across the
// 24-bit wrap, with jumps of every size.
func TestWindowMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var w window
	seen := map[uint32]bool{}
	hi, have := uint32(0), false
	for i := range 200_000 {
		var seq uint32
		switch r := rng.IntN(10); {
		case !have || r == 0:
			seq = rng.Uint32()
		case r < 4:
			seq = hi + uint32(rng.IntN(3*64)) // near the newest
		case r < 6:
			seq = hi + uint32(rng.IntN(windowBits+200)) // jumps up to past the window
		default:
			seq = hi - uint32(rng.IntN(windowBits)) // behind, inside the window
		}
		s := seq & seqMask
		var want bool
		if !have {
			have, hi = true, s
		} else if ahead := (s - hi) & seqMask; ahead != 0 && ahead < halfSpace {
			hi = s
		}
		age := (hi - s) & seqMask
		if age >= windowBits {
			continue // judged by the floor, none here
		}
		want = seen[s]
		seen[s] = true
		for k := range seen {
			if (hi-k)&seqMask >= windowBits {
				delete(seen, k)
			}
		}
		require.Equal(t, want, w.seen(seq), "step %d seq %#x", i, seq)
	}
}

// BenchmarkWindowJump: a peer moving its numbers ahead by almost a window
// with every datagram; clearing the skipped part costs word operations,
// not one per number skipped (about 100 ns per datagram, against 62 µs
// bit by bit).
func BenchmarkWindowJump(b *testing.B) {
	var w window
	seq := uint32(0)
	b.ReportAllocs()
	for b.Loop() {
		seq += windowBits - 1
		w.seen(seq)
	}
}
