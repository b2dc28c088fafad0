package stream

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// link wires two Streams back to back. Frames in flight sit in a queue per
// direction and are delivered in random order; with probability dup a
// delivered frame stays queued, to be delivered again later.
type link struct {
	t    testing.TB
	rng  *rand.Rand
	a, b *Stream
	toA  [][]byte
	toB  [][]byte
	dup  float64
	buf  []byte
}

// newLink wires two Streams: a starts its offsets just below 2^64, so
// that they wrap during a transfer, and b sends a token that a echoes.
func newLink(t testing.TB, seed uint64, cfg Config, dup float64) *link {
	ca, cb := cfg, cfg
	ca.Start = 1<<64 - 4096
	cb.Start, cb.Token = seed*0x9e3779b97f4a7c15, seed|1
	l := &link{
		t:   t,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		a:   New(ca),
		b:   New(cb),
		dup: dup,
	}
	l.buf = make([]byte, l.a.maxFrame)
	return l
}

// pump moves every frame due from both Streams into the queues.
func (l *link) pump() {
	l.pumpOne(l.a, &l.toB)
	l.pumpOne(l.b, &l.toA)
}

// Each frame is built in a buffer of FrameSize bytes, which must hold it:
// a DATA frame carries as many bytes as a full buffer would let it, so
// only its header's slack (a 2- to 11-byte header) is left over.
func (l *link) pumpOne(s *Stream, q *[][]byte) {
	for {
		size := s.FrameSize(len(l.buf))
		n := s.NextFrame(l.buf[:size])
		if n == 0 {
			require.Zero(l.t, size)
			require.False(l.t, s.HasFrame())
			return
		}
		require.LessOrEqual(l.t, n, size)
		if l.buf[0] == typeData && size > MinMaxFrame {
			require.GreaterOrEqual(l.t, n, size-(maxValueLen-2), "a DATA frame fills its FrameSize")
		} else {
			require.Equal(l.t, MinMaxFrame, size)
		}
		require.LessOrEqual(l.t, n, s.maxFrame)
		*q = append(*q, bytes.Clone(l.buf[:n]))
	}
}

// deliver hands up to k frames picked at random from q to dst.
func (l *link) deliver(q *[][]byte, dst *Stream, k int) {
	for ; k > 0 && len(*q) > 0; k-- {
		i := l.rng.IntN(len(*q))
		f := (*q)[i]
		if l.rng.Float64() >= l.dup {
			last := len(*q) - 1
			(*q)[i] = (*q)[last]
			(*q)[last] = nil
			*q = (*q)[:last]
		}
		require.NoError(l.t, dst.HandleFrame(f))
	}
}

// stallSteps is how many steps in a row a test loop may take without
// progress (see progress) before it fails: the transfers here go at most
// 7 steps without any (a step writes, delivers a random number of the
// frames in flight, and reads a random number of times), so a stall is
// reported after a few thousand cheap steps, in milliseconds, rather
// than after millions.
const stallSteps = 1000

// progress fails a test loop that goes stallSteps steps without its
// measure of work done (bytes written and read, ends of stream seen)
// changing.
type progress struct {
	t    testing.TB
	last int
	idle int
}

// step takes the measure of work done so far after one step.
func (p *progress) step(done int) {
	p.t.Helper()
	if done != p.last {
		p.last, p.idle = done, 0
		return
	}
	p.idle++
	require.Less(p.t, p.idle, stallSteps, "no progress for %d steps (work done: %d)", p.idle, done)
}

// settle pumps and delivers until no frame is in flight or due: every
// frame in flight is delivered each round, so only a loop of frames
// answering frames lasts more than a few rounds.
func (l *link) settle() {
	for i := 0; ; i++ {
		require.Less(l.t, i, stallSteps, "frames still in flight after %d rounds", i)
		l.pump()
		if len(l.toA) == 0 && len(l.toB) == 0 {
			return
		}
		l.deliver(&l.toB, l.b, len(l.toB))
		l.deliver(&l.toA, l.a, len(l.toA))
	}
}

// checkBounds asserts the memory bounds and offset invariants of s.
func checkBounds(t testing.TB, s *Stream) {
	t.Helper()
	if msg := boundsViolation(s); msg != "" {
		t.Fatal(msg)
	}
}

// boundsViolation describes how s breaks its memory bounds or offset
// invariants, or returns "". It avoids reflection: the fuzzer calls it for
// every frame.
func boundsViolation(s *Stream) string {
	switch {
	case s.tx.n > s.sendBuffer || len(s.tx.buf()) > pooledSize(s.sendBuffer):
		return fmt.Sprintf("send side holds %d in %d bytes, limit %d", s.tx.n, len(s.tx.buf()), s.sendBuffer)
	case s.rx.size() > uint64(pooledSize(int(roundUp64(s.recvWindow)))) || s.rx.blk != nil && len(s.rx.blk.bits)*64 != len(s.rx.blk.data):
		return fmt.Sprintf("receive ring of %d bytes, window %d", s.rx.size(), s.recvWindow)
	case !(s.readOff <= s.recvNext && s.recvNext <= s.maxEnd && s.maxEnd <= s.advertised):
		return fmt.Sprintf("offsets out of order: read %d, in order %d, max %d, advertised %d",
			s.readOff, s.recvNext, s.maxEnd, s.advertised)
	case s.maxEnd-s.readOff > s.recvWindow:
		return fmt.Sprintf("receive side spans %d bytes, window %d", s.maxEnd-s.readOff, s.recvWindow)
	case s.finReceived && s.maxEnd > s.final:
		return fmt.Sprintf("data up to %d past final offset %d", s.maxEnd, s.final)
	}
	return ""
}

func randBytes(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := rng.Uint64()
		for j := i; j < min(i+8, n); j++ {
			p[j] = byte(v)
			v >>= 8
		}
	}
	return p
}

// requireSameBytes compares two large byte slices without dumping them.
func requireSameBytes(t testing.TB, want, got []byte) {
	t.Helper()
	require.Equal(t, len(want), len(got), "length")
	if i := firstDiff(want, got); i >= 0 {
		require.FailNow(t, fmt.Sprintf("bytes differ at offset %d: want %#x, got %#x", i, want[i], got[i]))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// transfer sends size random bytes each way through a shuffling link with
// random write and read sizes, closes both write sides and checks that each
// end reads exactly the other's bytes then io.EOF.
func transfer(t testing.TB, seed uint64, cfg Config, dup float64, size, maxWrite, maxRead int) {
	l := newLink(t, seed, cfg, dup)
	rng := l.rng
	ends := [2]*Stream{l.a, l.b}
	src := [2][]byte{randBytes(rng, size), randBytes(rng, size)}
	var written [2]int
	got := [2][]byte{make([]byte, 0, size), make([]byte, 0, size)}
	var eof [2]bool
	rbuf := make([]byte, maxRead)
	stall := progress{t: t}
	for !eof[0] || !eof[1] {
		for i, s := range ends {
			if written[i] < size {
				n := 1 + rng.IntN(min(size-written[i], maxWrite))
				w := s.Write(src[i][written[i] : written[i]+n])
				require.LessOrEqual(t, w, n)
				written[i] += w
				if written[i] == size {
					s.CloseWrite()
					s.CloseWrite()
					require.Zero(t, s.Write(src[i][:1]))
				}
			}
		}
		l.pump()
		l.deliver(&l.toB, l.b, rng.IntN(len(l.toB)+1))
		l.deliver(&l.toA, l.a, rng.IntN(len(l.toA)+1))
		for i, s := range ends {
			checkBounds(t, s)
			for k := rng.IntN(4); k > 0; k-- {
				n, err := s.Read(rbuf[:1+rng.IntN(len(rbuf))])
				if err == io.EOF {
					require.Zero(t, n)
					eof[i] = true
					break
				}
				require.NoError(t, err)
				if n == 0 {
					require.False(t, s.Readable())
					break
				}
				got[i] = append(got[i], rbuf[:n]...)
			}
		}
		stall.step(written[0] + written[1] + len(got[0]) + len(got[1]) + btoi(eof[0]) + btoi(eof[1]))
	}
	requireSameBytes(t, src[1], got[0])
	requireSameBytes(t, src[0], got[1])
	l.settle()
	for _, s := range ends {
		require.NoError(t, s.Err())
		require.True(t, s.Opened())
		require.True(t, s.Validated(), "b's token echoed")
		require.Zero(t, s.Ignored(), "nothing implausible between honest ends")
		require.True(t, s.SendDone())
		require.True(t, s.RecvDone())
		require.False(t, s.HasFrame())
		require.Zero(t, s.Unsent())
		require.Nil(t, s.tx.buf(), "send ring released")
		require.Nil(t, s.rx.blk, "receive ring released")
		n, err := s.Read(rbuf)
		require.Zero(t, n)
		require.Same(t, io.EOF, err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
