package stream

import (
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// pairThrough moves size bytes of src from a new Stream to another through
// frames of maxFrame bytes, reversing every batch of reverse frames (1: in
// order). It returns the bytes read.
func pairThrough(tb testing.TB, src []byte, maxFrame, reverse int, frames [][]byte, dst []byte) int {
	cfg := Config{MaxFrame: maxFrame}
	a, c := New(cfg), New(cfg)
	buf := make([]byte, maxFrame)
	if err := c.HandleFrame(buf[:a.NextFrame(buf)]); err != nil {
		tb.Fatal(err)
	}
	if err := a.HandleFrame(buf[:c.NextFrame(buf)]); err != nil {
		tb.Fatal(err)
	}
	w, r := 0, 0
	for idle, last := 0, -1; r < len(src); {
		// A stall fails after stallSteps steps (see progress, not used
		// here so that the benchmarks do not allocate).
		if w+r != last {
			idle, last = 0, w+r
		} else if idle++; idle >= stallSteps {
			tb.Fatalf("no progress for %d steps: %d bytes written, %d read", idle, w, r)
		}
		if w < len(src) {
			w += a.Write(src[w:min(len(src), w+64<<10)])
			if w == len(src) {
				a.CloseWrite()
			}
		}
		for {
			k := 0
			for ; k < reverse; k++ {
				n := a.NextFrame(frames[k])
				if n == 0 {
					break
				}
				frames[k] = frames[k][:n]
			}
			for i := k - 1; i >= 0; i-- {
				if err := c.HandleFrame(frames[i]); err != nil {
					tb.Fatal(err)
				}
				frames[i] = frames[i][:maxFrame]
			}
			if k < reverse {
				break
			}
		}
		for {
			n, err := c.Read(dst)
			if err == io.EOF {
				break
			}
			if err != nil {
				tb.Fatal(err)
			}
			if n == 0 {
				break
			}
			r += n
		}
		for n := c.NextFrame(buf); n > 0; n = c.NextFrame(buf) {
			if err := a.HandleFrame(buf[:n]); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return r
}

func benchmarkPair(b *testing.B, reverse int) {
	const size = 1 << 20
	src := randBytes(rand.New(rand.NewPCG(1, 1)), size)
	dst := make([]byte, 64<<10)
	frames := make([][]byte, reverse)
	for i := range frames {
		frames[i] = make([]byte, 250)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if pairThrough(b, src, 250, reverse, frames, dst) != size {
			b.Fatal("short transfer")
		}
	}
}

// BenchmarkStreamPair moves 1 MiB from one Stream to another in 250-byte
// frames delivered in order, with default buffers.
func BenchmarkStreamPair(b *testing.B) { benchmarkPair(b, 1) }

// BenchmarkStreamPairReordered is BenchmarkStreamPair with frames delivered
// in reverse order in batches of 16.
func BenchmarkStreamPairReordered(b *testing.B) { benchmarkPair(b, 16) }

// BenchmarkWriteFrame writes 1 MiB in 64 KiB chunks and cuts it into
// 250-byte frames.
func BenchmarkWriteFrame(b *testing.B) {
	const size = 1 << 20
	src := make([]byte, size)
	buf := make([]byte, 250)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		s := New(Config{MaxFrame: 250})
		s.NextFrame(buf)
		if err := s.HandleFrame(helloFrame(1 << 40)); err != nil {
			b.Fatal(err)
		}
		for w := 0; w < size; {
			w += s.Write(src[w:min(size, w+64<<10)])
			for s.NextFrame(buf) > 0 {
			}
		}
	}
}

func TestPairThroughReordered(t *testing.T) {
	src := randBytes(rand.New(rand.NewPCG(2, 2)), 300<<10)
	frames := make([][]byte, 16)
	for i := range frames {
		frames[i] = make([]byte, 250)
	}
	require.Equal(t, len(src), pairThrough(t, src, 250, 16, frames, make([]byte, 1000)))
}
