package porous

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// hugeLast is a zero-length last fragment of a packet announcing
// last+1 fragments: 13 bytes on the wire that make the receiver allocate
// (last+1)·1452 bytes.
func hugeLast(ch uint8, seq uint32, last uint16) Message {
	return Message{Type: MsgFragment, Channel: ch, PacketSeq: seq, FragmentID: last, LastFragmentID: last}
}

// TestReassemblyBoundEmptyChannel: one Data frame full of fragments for
// an empty channel must not take the reassembly memory past its bound.
func TestReassemblyBoundEmptyChannel(t *testing.T) {
	p := newFakePeer(t, Config{})
	s := p.s
	last := uint16(s.cfg.MaxPacket/FragmentSize - 1)
	var msgs []Message
	for i := range (MaxFrameSize - DataHeaderSize) / FragmentHeaderSize {
		msgs = append(msgs, hugeLast(0, uint32(1+i), last))
	}
	f := Frame{Type: FrameData, Seq: p.seq, Messages: msgs}
	_ = s.HandleDatagram(p.now, f.AppendTo(nil))
	require.LessOrEqual(t, s.rxBytes, s.rxLimit())
	checkInvariants(t, s)
}

// TestReassemblyBoundBeforeFront: fragments for packets before the front
// of the queue, each becoming the new front, must not take the reassembly
// memory past its bound either.
func TestReassemblyBoundBeforeFront(t *testing.T) {
	p := newFakePeer(t, Config{})
	s := p.s
	last := uint16(s.cfg.MaxPacket/FragmentSize - 1)
	seq := uint32(ChannelWindow - 1)
	for range 2000 {
		var msgs []Message
		for range (MaxFrameSize - DataHeaderSize) / FragmentHeaderSize {
			msgs = append(msgs, hugeLast(0, seq, last))
			seq--
		}
		f := Frame{Type: FrameData, Seq: p.seq, Messages: msgs}
		p.seq++
		_ = s.HandleDatagram(p.now, f.AppendTo(nil))
		require.LessOrEqual(t, s.rxBytes, s.rxLimit())
	}
	checkInvariants(t, s)
}

// TestReceiveQueueBound: delivered packets that the caller does not take
// with Recv count against the receive memory, so a peer cannot grow the
// queue without bound; once taken, reception goes on.
func TestReceiveQueueBound(t *testing.T) {
	p := newFakePeer(t, Config{MaxPacket: 4 * FragmentSize})
	s := p.s
	data := make([]byte, FragmentSize)
	refused := 0
	for i := range 20_000 {
		f := Frame{Type: FrameData, Seq: p.seq, Messages: []Message{{Type: MsgFragment, PacketSeq: uint32(i), Data: data[:FragmentSize-1]}}}
		if s.HandleDatagram(p.now, f.AppendTo(nil)) != nil {
			refused++
			continue
		}
		p.seq++
	}
	require.NotZero(t, refused)
	require.LessOrEqual(t, s.rxBytes+s.recvBytes, s.rxLimit())
	require.LessOrEqual(t, s.rxBytes+s.recvBytes, s.rxBudget+s.rxReserve())
	n := len(recvAll(s))
	require.Zero(t, s.recvBytes)
	for _, c := range s.rxch {
		require.Zero(t, c.exempt)
	}
	f := Frame{Type: FrameData, Seq: p.seq, Messages: []Message{{Type: MsgFragment, PacketSeq: uint32(n), Data: data[:1]}}}
	require.NoError(t, s.HandleDatagram(p.now, f.AppendTo(nil)))
	require.Len(t, recvAll(s), 1)
}

// fillDescending fills channel 0's window of p's session with Sentinels
// in descending order, each new entry before all the others.
func fillDescending(t testing.TB, p *fakePeer) {
	seq := uint32(ChannelWindow - 1)
	for seq > 300 {
		var msgs []Message
		for range (MaxFrameSize - DataHeaderSize) / SentinelSize {
			msgs = append(msgs, sentinel(0, seq, 0))
			seq--
		}
		f := Frame{Type: FrameData, Seq: p.seq, Messages: msgs}
		p.seq++
		require.NoError(t, p.s.HandleDatagram(p.now, f.AppendTo(nil)))
	}
}

// TestReceiveQueueOutOfOrder: Sentinels arriving in descending order fill
// the queue; the one 63488 packets behind the newest is consumed.
func TestReceiveQueueOutOfOrder(t *testing.T) {
	p := newFakePeer(t, Config{})
	fillDescending(t, p)
	s := p.s
	require.Equal(t, uint32(WindowAckSpacing), s.rxch[0].base)
	require.Equal(t, ChannelWindow-WindowAckSpacing, s.rxch[0].n)
	checkInvariants(t, s)
}

// BenchmarkReceiveQueueOutOfOrder: the cost of a peer filling a channel's
// window in descending order, about 300 datagrams. With a sorted slice
// each insert moved megabytes (about 40 ms per datagram); indexed pages
// make it constant per message.
func BenchmarkReceiveQueueOutOfOrder(b *testing.B) {
	for b.Loop() {
		fillDescending(b, newFakePeer(b, Config{}))
	}
}

// TestTooLargeDropped: a packet above the receiver's MaxPacket, whether
// its fragment count already says so (2,000,000 bytes against the default
// 1 MiB) or only its last fragment does, is dropped undelivered, counted
// in Stats.TooLarge and logged at Debug; the packet after it is
// delivered.
func TestTooLargeDropped(t *testing.T) {
	for _, tc := range []struct {
		max, size int
		log       string
	}{
		{0, 2_000_000, "fragments=1378 min_size=1999405 max_packet=1048576"},
		{2*FragmentSize + 10, 2*FragmentSize + 11, "fragments=3 min_size=2915 max_packet=2914"},
	} {
		var logs bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		p := newPair(t, Config{MaxPacket: tc.size}, Config{MaxPacket: tc.max, Logger: logger}, 5*time.Millisecond, 0, 1)
		require.NoError(t, p.A.Send(make([]byte, tc.size), engine.SendOptions{}))
		runWithin(p, 2*time.Second, 100_000, func() bool { return p.A.Pending() == 0 })
		require.NoError(t, p.A.Send([]byte("after"), engine.SendOptions{}))
		var got []string
		// At most 92 ms of virtual time when healthy.
		runWithin(p, 2*time.Second, 100_000, func() bool {
			got = append(got, recvStrings(p.B)...)
			return len(got) > 0
		})
		require.Equal(t, []string{"after"}, got)
		require.Equal(t, uint64(1), p.B.Stats().TooLarge)
		require.Contains(t, logs.String(),
			`level=DEBUG msg="porous: incoming packet larger than MaxPacket dropped" channel=0 packet=0 `+tc.log)
		require.Equal(t, 1, strings.Count(logs.String(), "larger than MaxPacket"))
	}
}
