package stream

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// transferAt moves total bytes from a to b, delivering frames in order
// and reading at b at once, advancing the clock by step per exchange of
// frames; b tunes its window with rtt. It returns b's window at the end.
func transferAt(t *testing.T, total int, step, rtt time.Duration) int {
	w, _ := transferSteps(t, total, step, rtt)
	return w
}

// transferSteps is transferAt that also returns how many exchanges of
// frames passed before b's window reached MaxRecvWindow (-1: never).
func transferSteps(t *testing.T, total int, step, rtt time.Duration) (window, steps int) {
	cfg := Config{MaxFrame: 1024, RecvWindow: 64 << 10, MaxRecvWindow: 1 << 20, SendBuffer: 16 << 20}
	a, b := New(cfg), New(cfg)
	buf := make([]byte, 1024)
	read := make([]byte, 1<<20)
	now := time.Unix(1_000_000, 0)
	src := make([]byte, total)
	require.Equal(t, total, a.Write(src))
	got, steps := 0, -1
	for i := range 100_000 {
		b.Tune(now, rtt)
		for n := a.NextFrame(buf); n > 0; n = a.NextFrame(buf) {
			require.NoError(t, b.HandleFrame(buf[:n]))
		}
		k, err := b.Read(read)
		require.NoError(t, err)
		got += k
		for n := b.NextFrame(buf); n > 0; n = b.NextFrame(buf) {
			require.NoError(t, a.HandleFrame(buf[:n]))
		}
		if steps < 0 && b.RecvWindow() == cfg.MaxRecvWindow {
			steps = i
		}
		if got == total {
			return b.RecvWindow(), steps
		}
		now = now.Add(step)
	}
	t.Fatalf("transfer stalled at %d of %d bytes", got, total)
	return 0, 0
}

// TestAutoTuneGrows: a reader that keeps up with a sender held back by
// the window (each window's worth delivered per round trip) doubles the
// window up to MaxRecvWindow.
func TestAutoTuneGrows(t *testing.T) {
	require.Equal(t, 1<<20, transferAt(t, 16<<20, 20*time.Millisecond, 20*time.Millisecond))
}

// TestAutoTuneAheadOfSlowStart: a sender held back by the window delivers
// a window per round trip; the window grows to eight round trips of that
// rate, up to twice that while the rate grows, at each round trip: from
// 64 KiB to 1 MiB in four exchanges (doubling while a window lasts under
// four round trips took five).
func TestAutoTuneAheadOfSlowStart(t *testing.T) {
	_, steps := transferSteps(t, 16<<20, 20*time.Millisecond, 20*time.Millisecond)
	require.Equal(t, 4, steps)
}

// TestAutoTuneSlowReader: when the window is consumed slowly (far more
// than four round trips per window), it stays at RecvWindow.
func TestAutoTuneSlowReader(t *testing.T) {
	require.Equal(t, 64<<10, transferAt(t, 4<<20, 20*time.Millisecond, time.Millisecond))
}

// TestAutoTuneNeedsRTT: without an RTT the window never grows.
func TestAutoTuneNeedsRTT(t *testing.T) {
	require.Equal(t, 64<<10, transferAt(t, 4<<20, 20*time.Millisecond, 0))
}

// TestWindowStepBounded: with a window of 8 MiB a WINDOW is due once the
// reader has consumed 1 MiB (maxWindowStep), not a quarter of the window.
func TestWindowStepBounded(t *testing.T) {
	cfg := Config{MaxFrame: 1024, RecvWindow: 8 << 20, SendBuffer: 4 << 20}
	a, b := New(cfg), New(cfg)
	buf := make([]byte, 1024)
	require.Equal(t, 3<<20, a.Write(make([]byte, 3<<20)))
	// b's HELLO opens a; a's HELLO and data reach b.
	for n := b.NextFrame(buf); n > 0; n = b.NextFrame(buf) {
		require.NoError(t, a.HandleFrame(buf[:n]))
	}
	for n := a.NextFrame(buf); n > 0; n = a.NextFrame(buf) {
		require.NoError(t, b.HandleFrame(buf[:n]))
	}
	read := make([]byte, 1<<20-1)
	k, err := b.Read(read)
	require.NoError(t, err)
	require.Equal(t, len(read), k)
	require.Zero(t, b.NextFrame(buf), "1 MiB - 1 consumed: no WINDOW yet")
	k, err = b.Read(read[:1])
	require.NoError(t, err)
	require.Equal(t, 1, k)
	n := b.NextFrame(buf)
	require.NotZero(t, n)
	require.Equal(t, byte(typeWindow), buf[0])
}

// TestAutoTuneLossyPath: every frame reaches the reader two round trips
// after it is sent, one in flight and one held behind a lost datagram
// (as an ordered engine holds what follows a loss), and each WINDOW one
// round trip after; the reader reads at once. The sender can use only a
// third of the window per round trip, yet the window grows from 64 KiB
// to 4 MiB within eight round trips (four round trips of the rate took
// twelve; doubling while a window lasts under four round trips, as
// quic-go, never grew it).
func TestAutoTuneLossyPath(t *testing.T) {
	const rtt = 100 * time.Millisecond
	cfg := Config{MaxFrame: 1024, RecvWindow: 64 << 10, MaxRecvWindow: 4 << 20, SendBuffer: 64 << 20}
	a, b := New(cfg), New(cfg)
	require.Equal(t, 64<<20, a.Write(make([]byte, 64<<20)))
	type inFlight struct {
		at int
		f  []byte
	}
	var toB, toA []inFlight
	buf, read := make([]byte, 1024), make([]byte, 1<<20)
	now := time.Unix(1_000_000, 0)
	for step := range 40 {
		for n := a.NextFrame(buf); n > 0; n = a.NextFrame(buf) {
			toB = append(toB, inFlight{step + 2, bytes.Clone(buf[:n])})
		}
		for len(toB) > 0 && toB[0].at <= step {
			require.NoError(t, b.HandleFrame(toB[0].f))
			toB = toB[1:]
		}
		for {
			k, err := b.Read(read)
			require.NoError(t, err)
			if k == 0 {
				break
			}
		}
		b.Tune(now, rtt)
		for n := b.NextFrame(buf); n > 0; n = b.NextFrame(buf) {
			toA = append(toA, inFlight{step + 1, bytes.Clone(buf[:n])})
		}
		for len(toA) > 0 && toA[0].at <= step {
			require.NoError(t, a.HandleFrame(toA[0].f))
			toA = toA[1:]
		}
		if b.RecvWindow() == cfg.MaxRecvWindow {
			require.LessOrEqual(t, step, 8)
			return
		}
		now = now.Add(rtt)
	}
	t.Fatalf("window %d after 40 round trips", b.RecvWindow())
}

// TestRecvLimit: SetRecvLimit caps the window advertised, from the HELLO
// on; a lower cap never takes back a limit already advertised, and binds
// as the reader moves on; the ring regrows to the window advertised now,
// not to a larger one of the past; 0 lifts the cap.
func TestRecvLimit(t *testing.T) {
	// As if keepRings other streams held rings: a drained ring goes back.
	r0 := receiving.Swap(keepRings)
	defer receiving.Add(r0 - keepRings)
	l := newLink(t, 11, Config{MaxFrame: 1024, RecvWindow: 256 << 10, SendBuffer: 1 << 20}, 0)
	l.b.SetRecvLimit(16 << 10)
	src := randBytes(l.rng, 1<<20)
	require.Equal(t, len(src), l.a.Write(src))
	l.settle()
	require.Equal(t, uint64(16<<10), l.b.maxEnd-l.b.readOff, "the HELLO advertised the cap")
	checkBounds(t, l.b)

	got := make([]byte, 0, len(src))
	read := func(n int) {
		buf := make([]byte, n)
		for k := 0; k < n; {
			m, err := l.b.Read(buf[k:])
			require.NoError(t, err)
			k += m
		}
		got = append(got, buf...)
	}
	read(16 << 10)
	l.settle()
	require.Equal(t, uint64(16<<10), l.b.maxEnd-l.b.readOff, "a window of the cap again")

	l.b.SetRecvLimit(0)
	read(16 << 10)
	l.settle()
	require.Equal(t, uint64(256<<10), l.b.maxEnd-l.b.readOff, "the cap lifted")

	l.b.SetRecvLimit(8 << 10)
	read(128 << 10)
	l.settle()
	require.Equal(t, uint64(128<<10), l.b.maxEnd-l.b.readOff, "what was advertised stays")
	read(128 << 10)
	l.settle()
	require.Equal(t, uint64(8<<10), l.b.maxEnd-l.b.readOff, "the lower cap binds once the reader moved on")
	require.Equal(t, uint64(8<<10), l.b.rx.size(), "the ring regrows to the window now, not to its last size")
	require.Equal(t, src[:len(got)], got)
}

// TestWindowWaitsForPeer: a window that grew while the peer sent almost
// nothing (a higher SetRecvLimit) is not advertised until the peer has
// sent a quarter of the last window advertised; then it is.
func TestWindowWaitsForPeer(t *testing.T) {
	l := newLink(t, 12, Config{MaxFrame: 1024, RecvWindow: 256 << 10}, 0)
	l.b.SetRecvLimit(16 << 10)
	require.Equal(t, 2, l.a.Write([]byte("hi")))
	l.settle()
	buf := make([]byte, 2)
	n, err := l.b.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	l.b.SetRecvLimit(0)
	require.False(t, l.b.HasFrame(), "the peer has sent 2 bytes of a 16 KiB window")

	require.Equal(t, 4094, l.a.Write(make([]byte, 4094)))
	l.pumpOne(l.a, &l.toB)
	l.deliver(&l.toB, l.b, len(l.toB))
	require.True(t, l.b.HasFrame(), "the peer has sent a quarter of it")
	frame := make([]byte, 64)
	n = l.b.NextFrame(frame)
	require.NotZero(t, n)
	require.Equal(t, byte(typeWindow), frame[0])
}
