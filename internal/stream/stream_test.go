package stream

import (
	"errors"
	"io"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestPairShuffled4MiB(t *testing.T) {
	cfg := Config{MaxFrame: 256, RecvWindow: 64 << 10}
	transfer(t, 1, cfg, 0.05, 4<<20, 64<<10, 32<<10)
}

func TestPairSmallOddSizes(t *testing.T) {
	// A window that is not a multiple of 64, tiny frames and buffers, and
	// heavy duplication exercise ring wrap-around and the out-of-order bits.
	for seed := uint64(10); seed < 20; seed++ {
		cfg := Config{MaxFrame: 32 + int(seed), RecvWindow: 1000 + int(seed)*37, SendBuffer: 300 + int(seed)}
		transfer(t, seed, cfg, 0.2, 32<<10, 700, 500)
	}
}

func TestPairTinyWindow(t *testing.T) {
	cfg := Config{MaxFrame: 64, RecvWindow: 1, SendBuffer: 1}
	transfer(t, 3, cfg, 0.1, 1000, 5, 3)
}

func TestPairDefaults(t *testing.T) {
	transfer(t, 4, Config{}, 0.01, 1<<20, 100<<10, 100<<10)
}

func TestStalledReaderBoundsWriter(t *testing.T) {
	const w, sb = 64 << 10, 32 << 10
	cfg := Config{MaxFrame: 256, RecvWindow: w, SendBuffer: sb}
	l := newLink(t, 5, cfg, 0.05)
	src := randBytes(l.rng, 1<<20)
	written := 0
	for range 300 {
		written += l.a.Write(src[written:min(len(src), written+1+l.rng.IntN(8<<10))])
		l.pump()
		l.deliver(&l.toB, l.b, l.rng.IntN(len(l.toB)+1))
		l.deliver(&l.toA, l.a, l.rng.IntN(len(l.toA)+1))
		checkBounds(t, l.a)
		checkBounds(t, l.b)
	}
	l.settle()
	require.Equal(t, 0, l.a.Writable())
	require.Equal(t, sb, l.a.Unsent())
	require.Equal(t, w+sb, written)
	require.Equal(t, uint64(w), l.b.recvNext-l.b.readOff, "receiver holds exactly the window")
	require.LessOrEqual(t, l.b.rx.size(), roundUp64(w))
	require.False(t, l.a.HasFrame())

	// It stays so however long the reader stalls.
	for range 100 {
		require.Zero(t, l.a.Write(src[written:]))
		l.settle()
		require.Equal(t, 0, l.a.Writable())
		require.Equal(t, uint64(w), l.b.recvNext-l.b.readOff)
	}

	// Reading a quarter of the window earns the writer that much credit.
	got := make([]byte, 0, len(src))
	rbuf := make([]byte, w/4)
	n, err := l.b.Read(rbuf)
	require.NoError(t, err)
	require.Equal(t, w/4, n)
	got = append(got, rbuf[:n]...)
	l.settle()
	require.Equal(t, w/4, l.a.Writable())

	// Resuming reads drains everything.
	rbuf = make([]byte, 3000)
	stall := progress{t: t}
	for {
		stall.step(written + len(got))
		if written < len(src) {
			written += l.a.Write(src[written:])
			if written == len(src) {
				l.a.CloseWrite()
			}
		}
		l.pump()
		l.deliver(&l.toB, l.b, l.rng.IntN(len(l.toB)+1))
		l.deliver(&l.toA, l.a, l.rng.IntN(len(l.toA)+1))
		n, err := l.b.Read(rbuf)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, rbuf[:n]...)
	}
	requireSameBytes(t, src, got)
}

func TestEOFWithoutData(t *testing.T) {
	l := newLink(t, 6, Config{MaxFrame: 64}, 0)
	l.a.CloseWrite()
	l.settle()
	n, err := l.b.Read(make([]byte, 10))
	require.Zero(t, n)
	require.Same(t, io.EOF, err)
	require.True(t, l.b.RecvDone())
	require.True(t, l.a.SendDone())
	require.False(t, l.b.SendDone())
	require.False(t, l.a.RecvDone())
	// The other direction still works after the half-close.
	require.Equal(t, 3, l.b.Write([]byte("abc")))
	l.settle()
	p := make([]byte, 10)
	n, err = l.a.Read(p)
	require.NoError(t, err)
	require.Equal(t, "abc", string(p[:n]))
}

func TestPeerResetDiscards(t *testing.T) {
	l := newLink(t, 7, Config{MaxFrame: 64}, 0)
	l.settle()
	require.Equal(t, 5, l.a.Write([]byte("hello")))
	l.settle()
	l.a.Abort(42)
	require.Zero(t, l.a.Write([]byte("x")))
	require.Zero(t, l.a.Writable())
	n, err := l.a.Read(make([]byte, 8))
	require.Zero(t, n)
	require.Same(t, ErrAborted, err)
	require.Same(t, ErrAborted, l.a.Err())
	l.settle()
	require.True(t, l.a.SendDone())

	require.Same(t, ErrReset, l.b.Err())
	code, ok := l.b.ResetCode()
	require.True(t, ok)
	require.Equal(t, uint8(42), code)
	require.True(t, l.b.Readable())
	n, err = l.b.Read(make([]byte, 8))
	require.Zero(t, n, "unread data is discarded on reset")
	require.Same(t, ErrReset, err)
	require.Zero(t, l.b.Write([]byte("x")))
	require.Zero(t, l.b.Writable())
	require.Zero(t, l.b.Unsent())
	require.True(t, l.b.SendDone())
	require.False(t, l.b.HasFrame())
	// Later frames are ignored.
	require.NoError(t, l.b.HandleFrame([]byte{typeData, 5, 'x'}))
	require.NoError(t, l.b.HandleFrame([]byte{0xff}))
	require.Same(t, ErrReset, l.b.Err())
}

func TestPeerResetAfterFINStillReads(t *testing.T) {
	// The FIN and the RST overtake the last DATA frame, which still counts.
	a := New(Config{MaxFrame: 64})
	b := New(Config{MaxFrame: 64})
	buf := make([]byte, 64)
	require.NoError(t, a.HandleFrame(buf[:b.NextFrame(buf)]))
	hello := append([]byte(nil), buf[:a.NextFrame(buf)]...)
	require.Equal(t, 100, a.Write(make([]byte, 100)))
	a.CloseWrite()
	var frames [][]byte
	for n := a.NextFrame(buf); n > 0; n = a.NextFrame(buf) {
		frames = append(frames, append([]byte(nil), buf[:n]...))
	}
	a.Abort(9)
	frames = append(frames, append([]byte(nil), buf[:a.NextFrame(buf)]...))
	require.Len(t, frames, 4) // DATA, DATA, FIN, RST
	require.Equal(t, []byte{typeRst, 9, 100}, frames[3])
	require.Zero(t, a.NextFrame(buf))

	for _, i := range []int{2, 3, 1} {
		require.NoError(t, b.HandleFrame(frames[i]))
	}
	require.NoError(t, b.Err(), "kept until the peer's HELLO gives its start")
	require.False(t, b.Readable(), "nothing before the peer's HELLO")
	require.NoError(t, b.HandleFrame(hello))
	require.True(t, b.Opened())
	require.Same(t, ErrReset, b.Err())
	require.False(t, b.RecvDone())
	require.False(t, b.Readable())
	require.NoError(t, b.HandleFrame(frames[0]))
	require.NoError(t, b.HandleFrame(frames[0]))
	require.True(t, b.RecvDone())
	p := make([]byte, 200)
	n, err := b.Read(p)
	require.NoError(t, err)
	require.Equal(t, 100, n)
	n, err = b.Read(p)
	require.Zero(t, n)
	require.Same(t, io.EOF, err)
	require.Same(t, ErrReset, b.Err())
	require.False(t, b.HasFrame())
}

func TestAbortFrames(t *testing.T) {
	buf := make([]byte, 64)
	// Before the HELLO is framed: HELLO then RST, nothing else.
	s := New(Config{MaxFrame: 64})
	s.Write([]byte("data"))
	s.CloseWrite()
	s.Abort(7)
	require.Zero(t, s.Unsent())
	require.Equal(t, helloLen+3, s.NextFrame(buf))
	require.Equal(t, typeHello, buf[0])
	require.Equal(t, []byte{0x05, 0x07, 0x00}, buf[:s.NextFrame(buf)])
	require.Zero(t, s.NextFrame(buf))
	require.True(t, s.SendDone())
	s.Abort(8) // no second RST
	require.Zero(t, s.NextFrame(buf))

	// Abort overrides pending window updates and data.
	s = opened(t, Config{MaxFrame: 64, RecvWindow: 64}, 1000)
	require.NoError(t, s.HandleFrame(append([]byte{typeData, 0}, make([]byte, 40)...)))
	n, _ := s.Read(make([]byte, 40))
	require.Equal(t, 40, n)
	s.Write([]byte("xyz"))
	require.True(t, s.HasFrame())
	s.Abort(200)
	require.Equal(t, []byte{0x05, 200, 0x00}, buf[:s.NextFrame(buf)])
	require.Zero(t, s.NextFrame(buf))
	require.NoError(t, s.HandleFrame([]byte{typeWindow, 0x7f}))
	require.Zero(t, s.NextFrame(buf))
}

func TestErrorsAreDistinct(t *testing.T) {
	require.False(t, errors.Is(ErrReset, ErrProtocol))
	require.False(t, errors.Is(ErrAborted, ErrReset))
}

func TestConfigLimits(t *testing.T) {
	s := New(Config{})
	require.Equal(t, DefaultMaxFrame, s.maxFrame)
	require.Equal(t, uint64(DefaultRecvWindow), s.recvWindow)
	require.Equal(t, DefaultSendBuffer, s.Writable())
	require.Panics(t, func() { New(Config{MaxFrame: 31}) })
	require.Panics(t, func() { New(Config{RecvWindow: -1}) })
	require.Panics(t, func() { New(Config{SendBuffer: MaxBuffer + 1}) })
	// A buffer shorter than MinMaxFrame gets nothing; a short one caps DATA.
	require.Zero(t, s.NextFrame(make([]byte, MinMaxFrame-1)))
	s = opened(t, Config{MaxFrame: 1024}, 1<<20)
	require.Equal(t, 100, s.Write(make([]byte, 100)))
	require.Equal(t, 40, s.NextFrame(make([]byte, 40)))
	require.Equal(t, 40, s.NextFrame(make([]byte, 40)))
	require.Equal(t, 2+24, s.NextFrame(make([]byte, 1024)))
}

func TestSendRingWrap(t *testing.T) {
	var r sendRing
	out := make([]byte, 0, 100000)
	var in []byte
	b := byte(0)
	dst := make([]byte, 5000)
	for i := range 200 {
		n := (i*7919)%6000 + 1
		n = min(n, 10000-r.n)
		p := make([]byte, n)
		for j := range p {
			p[j] = b
			b++
		}
		in = append(in, p...)
		r.push(p, 10000)
		require.LessOrEqual(t, len(r.buf()), pooledSize(10000))
		k := r.pop(dst[:(i*104729)%5000])
		out = append(out, dst[:k]...)
	}
	for r.n > 0 {
		k := r.pop(dst)
		out = append(out, dst[:k]...)
	}
	requireSameBytes(t, in, out)
}

// TestStreamSize: every idle stream keeps one Stream, which fits the
// allocator's 320-byte size class (the next is 352).
func TestStreamSize(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Stream{}), uintptr(320))
}

// TestRingsPooledWhenDrained: while more than keepRings streams of the
// process hold rings, a stream still open whose written bytes are all
// framed, and whose received bytes are all read, holds no buffer, and the
// next bytes take one again; with fewer, it keeps its rings until Trim.
func TestRingsPooledWhenDrained(t *testing.T) {
	for _, many := range []bool{false, true} {
		// The counts are the process's: set them as if no other stream
		// held a ring (or keepRings did), and put back the others' after.
		base := int64(0)
		if many {
			base = keepRings
		}
		s0, r0 := sending.Swap(base), receiving.Swap(base)
		l := newLink(t, 7, Config{MaxFrame: 512}, 0)
		src := randBytes(l.rng, 20000)
		for round := range 3 {
			require.Equal(t, len(src), l.a.Write(src))
			require.NotNil(t, l.a.tx.blk, "round %d: written bytes held", round)
			l.settle()
			require.Equal(t, many, l.a.tx.blk == nil, "round %d: every byte framed", round)
			require.NotNil(t, l.b.rx.blk, "round %d: received bytes held", round)
			got := make([]byte, len(src))
			for k := 0; k < len(got); {
				n, err := l.b.Read(got[k:])
				require.NoError(t, err)
				require.NotZero(t, n)
				k += n
			}
			require.Equal(t, src, got)
			require.Equal(t, many, l.b.rx.blk == nil, "round %d: every byte read", round)
		}
		l.a.Trim()
		l.b.Trim()
		require.Nil(t, l.a.tx.blk, "trimmed")
		require.Nil(t, l.b.rx.blk, "trimmed")
		sending.Add(s0 - base)
		receiving.Add(r0 - base)
	}
}

// TestSendLimit: Write holds at most the lower of Config.SendBuffer and
// the limit SetSendLimit sets, and accepts nothing while the bytes
// already held exceed a limit lowered under them.
func TestSendLimit(t *testing.T) {
	s := New(Config{SendBuffer: 64 << 10})
	p := make([]byte, 100<<10)
	s.SetSendLimit(10000)
	require.Equal(t, 10000, s.Write(p))
	require.Zero(t, s.Writable())
	s.SetSendLimit(1 << 20) // above SendBuffer: SendBuffer
	require.Equal(t, 64<<10-10000, s.Writable())
	require.Equal(t, 64<<10-10000, s.Write(p))
	s.SetSendLimit(4096) // below what is held
	require.Zero(t, s.Writable())
	require.Zero(t, s.Write(p))
	s.SetSendLimit(0)
	require.Zero(t, s.Writable())
	require.Equal(t, 64<<10, s.Unsent())
}
