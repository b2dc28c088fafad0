package porous

import (
	"bytes"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// largePair is a connected pair that takes large frames both ways, A
// allowed to send them, polled into buffers that hold them.
func largePair(t *testing.T, loss float64) *pair {
	return largePairOf(t, Config{LargeFrames: true, MaxPacket: 1 << 20}, loss)
}

// largePairOf is largePair with both ends of config cfg.
func largePairOf(t *testing.T, cfg Config, loss float64) *pair {
	p := newPair(t, cfg, cfg, 5*time.Millisecond, loss, 3)
	p.Buf = make([]byte, LargeFrameSize)
	p.RunUntil(1000, func() bool {
		return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished
	})
	p.A.SetMaxFrame(LargeFrameSize)
	return p
}

// sendAndCollect sends msgs from A, as fast as A takes them, and runs p
// until B has received them all and A has nothing pending; it returns
// what B received.
func sendAndCollect(t *testing.T, p *pair, msgs [][]byte) [][]byte {
	var got [][]byte
	next := 0
	// At most 0.16 s of virtual time in these tests.
	runWithin(p, 2*time.Second, 100_000, func() bool {
		for next < len(msgs) && p.A.Send(msgs[next], engine.SendOptions{}) == nil {
			next++
		}
		for _, m := range recvAll(p.B) {
			got = append(got, m.Data)
		}
		return next == len(msgs) && len(got) == len(msgs) && p.A.Pending() == 0
	})
	return got
}

// requireGivenUp checks that the Data frames in log begin with large ones
// and that every one after them is at most limit bytes.
func requireGivenUp(t *testing.T, log [][]byte, limit int) {
	t.Helper()
	sizes := dataSizes(log)
	large := 0
	for large < len(sizes) && sizes[large] > MaxFrameSize {
		large++
	}
	require.NotZero(t, large, "large frames sent first")
	for _, n := range sizes[large:] {
		require.LessOrEqual(t, n, limit, "after the loss")
	}
}

// dataSizes returns the sizes of the Data frames in log.
func dataSizes(log [][]byte) []int {
	var out []int
	for _, b := range log {
		if FrameType(b[0]) == FrameData {
			out = append(out, len(b))
		}
	}
	return out
}

// TestDecodeLargeFrame: a Data frame above MaxFrameSize decodes only with
// the large bound, up to LargeFrameSize; other frames keep MaxFrameSize.
func TestDecodeLargeFrame(t *testing.T) {
	big := make([]byte, 64*1024)
	frame := func(n int) []byte {
		p := &outPacket{seq: 1, last: uint16((n - 1) / FragmentSize), data: big[:n]}
		b := []byte{byte(FrameData), 0, 0, 0, 9, 0, byte(p.last) + 1}
		for i := range int(p.last) + 1 {
			b = appendFragment(b, 0, p.seq, 0, uint16(i), p.last, p.fragment(i))
		}
		return b
	}
	full := frame(44 * FragmentSize)
	require.Len(t, full, LargeFrameSize)
	var f Frame
	require.NoError(t, decode(full, &f, LargeFrameSize))
	require.Len(t, f.Messages, 44)
	require.ErrorIs(t, Decode(full, &f), errTooLong)
	require.ErrorIs(t, Decode(frame(2*FragmentSize), &f), errTooLong)
	require.ErrorIs(t, decode(append(full, 0), &f, LargeFrameSize), errTooLong)
	ack := append([]byte{byte(FrameDataAck), 1, 0}, make([]byte, 4*256)...) // 256 IDs: 1027 bytes, within MaxFrameSize
	require.NoError(t, decode(ack, &f, LargeFrameSize))
	ack = append([]byte{byte(FrameDataAck), 2, 0}, make([]byte, 4*512)...)
	require.ErrorIs(t, decode(ack, &f, LargeFrameSize), errTooLong, "only Data frames may be large")
}

// TestLargeFrames: with SetMaxFrame, a packet of 45 fragments leaves in
// two Data frames, the first of exactly LargeFrameSize bytes (44
// fragments), and arrives whole; B, never allowed to send large frames,
// sends none.
func TestLargeFrames(t *testing.T) {
	p := largePair(t, 0)
	msg := bytes.Repeat([]byte("large frames "), (44*FragmentSize+100)/13)
	got := sendAndCollect(t, p, [][]byte{msg})
	require.Equal(t, [][]byte{msg}, got)
	require.Equal(t, []int{LargeFrameSize, DataHeaderSize + FragmentHeaderSize + len(msg) - 44*FragmentSize}, dataSizes(p.AB.Log))
	require.Equal(t, LargeFrameSize, p.A.MaxFrame())
	require.True(t, p.A.largeOK)
	for _, b := range p.BA.Log {
		require.LessOrEqual(t, len(b), MaxFrameSize)
	}
}

// TestLargeFramesBlackHole: a path that drops every datagram above
// MaxFrameSize. The first large frame is declared lost before any was
// acknowledged, so A gives large frames up: the lost frames go again split
// into frames of at most MaxFrameSize, every message arrives exactly
// once, and SetMaxFrame no longer changes anything.
func TestLargeFramesBlackHole(t *testing.T) {
	p := largePair(t, 0)
	p.AB.Drop = func(b []byte) bool { return len(b) > MaxFrameSize }
	var msgs [][]byte
	for i := range 40 {
		msgs = append(msgs, testPacket(0, i, 20_000))
	}
	got := sendAndCollect(t, p, msgs)
	require.Equal(t, msgs, got)
	require.Equal(t, MaxFrameSize, p.A.MaxFrame())
	require.True(t, p.A.largeLost)
	requireGivenUp(t, p.AB.Log, MaxFrameSize)
	p.A.SetMaxFrame(LargeFrameSize)
	require.Equal(t, MaxFrameSize, p.A.MaxFrame())
	checkInvariants(t, p.A)
}

// TestLargeFramesBlackHoleOverhead: as TestLargeFramesBlackHole, with a
// layer below that adds 4 bytes to each datagram and packets of one
// fragment at most FragmentSize − 4 bytes, as a stream's (its seal), and
// a path that drops every datagram above MaxFrameSize: after the loss,
// the split frames and the new ones are at most MaxFrameSize − 4 bytes,
// so every message arrives. Split into frames of MaxFrameSize, as
// before, some would have been dropped at every resend, and the stream
// stalled behind them until its idle timeout.
func TestLargeFramesBlackHoleOverhead(t *testing.T) {
	const overhead = 4
	p := largePairOf(t, Config{LargeFrames: true, MaxPacket: FragmentSize - overhead, Overhead: overhead}, 0)
	p.AB.Drop = func(b []byte) bool { return len(b)+overhead > MaxFrameSize }
	var msgs [][]byte
	for i := range 400 {
		msgs = append(msgs, testPacket(0, i, FragmentSize-overhead))
	}
	got := sendAndCollect(t, p, msgs)
	require.Equal(t, msgs, got)
	require.Equal(t, MaxFrameSize-overhead, p.A.MaxFrame())
	requireGivenUp(t, p.AB.Log, MaxFrameSize-overhead)
	_, err := New(epoch, Config{Overhead: maxOverhead + 1})
	require.ErrorContains(t, err, "Overhead")
	checkInvariants(t, p.A)
}

// TestLargeFramesConfirmed: once a large frame has been acknowledged, a
// lost large frame is an ordinary loss, not a reason to give large frames
// up: new frames stay large, and what the lost one carried goes again in
// frames of the usual size (a busy receiver's socket buffer finds room
// for those far more often than for 64 KB).
func TestLargeFramesConfirmed(t *testing.T) {
	p := largePair(t, 0)
	msg := bytes.Repeat([]byte{7}, 44*FragmentSize)
	require.Equal(t, [][]byte{msg}, sendAndCollect(t, p, [][]byte{msg}))
	require.True(t, p.A.largeOK)
	var dropped []byte
	p.AB.Drop = func(b []byte) bool {
		if dropped == nil && len(b) > MaxFrameSize {
			dropped = bytes.Clone(b)
			return true
		}
		return false
	}
	before := len(p.AB.Log)
	require.Equal(t, [][]byte{msg, msg}, sendAndCollect(t, p, [][]byte{msg, msg}))
	require.NotNil(t, dropped)
	sent, small, large := 0, 0, 0
	for _, b := range p.AB.Log[before:] {
		if bytes.Equal(b, dropped) {
			sent++
		}
	}
	for _, n := range dataSizes(p.AB.Log[before:]) {
		if n > MaxFrameSize {
			large++
		} else {
			small++
		}
	}
	require.Equal(t, 1, sent, "never resent whole")
	require.GreaterOrEqual(t, small, 2, "resent split")
	require.GreaterOrEqual(t, large, 2, "new frames still large")
	require.Equal(t, LargeFrameSize, p.A.MaxFrame())
	require.False(t, p.A.largeLost)
	require.NotZero(t, p.A.Stats().Retransmits)
	checkInvariants(t, p.A)
}

// TestLargeFramesLossy: large frames on a path that loses 10 % of the
// datagrams both ways deliver every packet exactly once, in order.
func TestLargeFramesLossy(t *testing.T) {
	p := largePair(t, 0.1)
	var msgs [][]byte
	for i := range 300 {
		msgs = append(msgs, testPacket(0, i, 100_000))
	}
	require.Equal(t, msgs, sendAndCollect(t, p, msgs))
	checkInvariants(t, p.A)
	checkInvariants(t, p.B)
}

// TestLargeProbeLossNoCongestion: large frames lost before any was
// acknowledged are probes of the path, and their loss says the path does
// not carry them, not that it is congested: the congestion controller
// forgets them (as QUIC treats a lost probe of the path MTU, RFC 9000
// §14.4). On a path that drops every large datagram and nothing else, A
// resends, yet its controller counts no byte lost, no datagram lost and
// no congestion event.
func TestLargeProbeLossNoCongestion(t *testing.T) {
	p := largePair(t, 0)
	p.AB.Drop = func(b []byte) bool { return len(b) > MaxFrameSize }
	var msgs [][]byte
	for i := range 10 {
		msgs = append(msgs, testPacket(0, i, 20_000))
	}
	require.Equal(t, msgs, sendAndCollect(t, p, msgs))
	require.True(t, p.A.largeLost)
	st := p.A.Stats()
	require.NotZero(t, st.Retransmits, "the lost probes were resent, split")
	require.Zero(t, st.Congestion.Lost, "bytes lost")
	require.Zero(t, st.Congestion.Losses, "datagrams lost")
	require.Zero(t, st.Congestion.Events, "congestion events")
	require.Zero(t, st.Congestion.InFlight)
}

// TestLargeDue: a session allowed large frames wants a large Poll buffer
// only while more than a frame of the usual size is unsent; given a buffer
// of the usual size it writes frames of at most that size, so that a
// caller can poll its acknowledgements, and a little data, into one.
func TestLargeDue(t *testing.T) {
	p := largePair(t, 0)
	require.False(t, p.A.LargeDue(), "nothing unsent")
	require.NoError(t, p.A.Send(make([]byte, 100), engine.SendOptions{}))
	require.False(t, p.A.LargeDue(), "one small message unsent")
	require.NoError(t, p.A.Send(make([]byte, 3*FragmentSize), engine.SendOptions{}))
	require.True(t, p.A.LargeDue(), "more than a usual frame unsent")

	buf := make([]byte, MaxFrameSize)
	var sizes []int
	for n := p.A.Poll(p.Now, buf); n > 0; n = p.A.Poll(p.Now, buf) {
		if FrameType(buf[0]) == FrameData {
			sizes = append(sizes, n)
		}
	}
	require.NotEmpty(t, sizes)
	for _, n := range sizes {
		require.LessOrEqual(t, n, MaxFrameSize)
	}
	require.Greater(t, len(sizes), 1, "more than a frame's worth sent")

	q := largePair(t, 0)
	q.A.SetMaxFrame(MaxFrameSize) // large frames not allowed
	require.NoError(t, q.A.Send(make([]byte, 3*FragmentSize), engine.SendOptions{}))
	require.False(t, q.A.LargeDue(), "large frames not allowed")
}
