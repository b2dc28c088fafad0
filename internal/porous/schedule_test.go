package porous

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// frameChannels lists, for each Data frame among fs, the channels and
// packet numbers of its fragments, as "ch:seq" joined by spaces.
func frameChannels(fs []Frame) []string {
	var out []string
	for _, f := range fs {
		if f.Type != FrameData {
			continue
		}
		var b bytes.Buffer
		for i, m := range f.Messages {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%d:%d", m.Channel, m.PacketSeq)
		}
		out = append(out, b.String())
	}
	return out
}

func sendN(t *testing.T, s *Session, ch uint8, n, size int, d engine.Delivery) {
	t.Helper()
	for range n {
		require.NoError(t, s.Send(make([]byte, size), engine.SendOptions{Channel: ch, Delivery: d}))
	}
}

// TestRoundRobinSmallAfterOneFrame: three small messages queued on
// channel 1 behind four full packets of channel 0 leave in the second
// frame, together, rather than after the bulk (deficit round robin,
// quantum one frame); with Arrival they wait for all of it, as with the
// reference.
func TestRoundRobinSmallAfterOneFrame(t *testing.T) {
	for _, tc := range []struct {
		order SendOrder
		want  []string
	}{
		{RoundRobin, []string{"0:0", "1:0 1:1 1:2", "0:1", "0:2", "0:3"}},
		{Arrival, []string{"0:0", "0:1", "0:2", "0:3", "1:0 1:1 1:2"}},
	} {
		p := newFakePeer(t, Config{Channels: 2, SendOrder: tc.order})
		sendN(t, p.s, 0, 4, FragmentSize, engine.Reliable)
		sendN(t, p.s, 1, 3, 10, engine.Reliable)
		require.Equal(t, tc.want, frameChannels(p.poll()), "order %d", tc.order)
	}
}

// TestRoundRobinWeights: with weights 2 and 1, two bulk channels share the
// frames two to one.
func TestRoundRobinWeights(t *testing.T) {
	p := newFakePeer(t, Config{Channels: 2, Weights: []int{2, 1}})
	sendN(t, p.s, 0, 6, FragmentSize, engine.Reliable)
	sendN(t, p.s, 1, 6, FragmentSize, engine.Reliable)
	got := frameChannels(p.poll())
	require.GreaterOrEqual(t, len(got), 9)
	require.Equal(t, []string{"0:0", "0:1", "1:0", "0:2", "0:3", "1:1", "0:4", "0:5", "1:2"}, got[:9])
}

// TestLowPriorityWaits: a Low channel sends only when no High channel
// has anything to send, whatever was queued first.
func TestLowPriorityWaits(t *testing.T) {
	p := newFakePeer(t, Config{Channels: 2, Priorities: []Priority{Low, High}})
	sendN(t, p.s, 0, 2, 10, engine.Reliable)
	sendN(t, p.s, 1, 2, FragmentSize, engine.Reliable)
	require.Equal(t, []string{"1:0", "1:1", "0:0 0:1"}, frameChannels(p.poll()))
}

// TestChannelQueueBound: a channel holding about a congestion window of
// unsent data refuses more (engine.ErrQueueFull) while another channel
// still takes messages; a channel with nothing unsent takes any packet.
func TestChannelQueueBound(t *testing.T) {
	s, _ := connected(t, Config{Channels: 2, MaxPacket: 1 << 20}, Config{Channels: 2, MaxPacket: 1 << 20})
	require.NoError(t, s.Send(make([]byte, 200_000), engine.SendOptions{Channel: 0}), "nothing unsent: taken")
	require.ErrorIs(t, s.Send([]byte("x"), engine.SendOptions{Channel: 0}), engine.ErrQueueFull)
	require.Zero(t, s.SendRoom(0))
	require.Equal(t, engine.MinSendRoom, s.SendRoom(1))
	require.NoError(t, s.Send([]byte("y"), engine.SendOptions{Channel: 1}))
	require.Equal(t, engine.MinSendRoom-1, s.SendRoom(1))
	require.NoError(t, s.Send(make([]byte, engine.MinSendRoom), engine.SendOptions{Channel: 1}), "room left: one packet may overshoot")
	require.Zero(t, s.SendRoom(1))
	require.ErrorIs(t, s.Send(make([]byte, 2), engine.SendOptions{Channel: 1}), engine.ErrQueueFull)
}

// TestUnreliableExpires: an Unreliable packet that waits longer than
// MaxUnreliableDelay (here behind its channel's reliable packets, with
// the congestion window full) is dropped unsent and counted; what was
// queued behind it still goes.
func TestUnreliableExpires(t *testing.T) {
	p := newFakePeer(t, Config{Channels: 1})
	sendN(t, p.s, 0, 12, FragmentSize, engine.Reliable)
	require.NoError(t, p.s.Send([]byte("late"), engine.SendOptions{Delivery: engine.Unreliable}))
	require.NoError(t, p.s.Send([]byte("after"), engine.SendOptions{}))
	first := p.poll()
	require.Len(t, frameChannels(first), 10, "the initial window: ten frames")
	var seqs []uint32
	for _, f := range first {
		if f.Type == FrameData {
			seqs = append(seqs, f.Seq)
		}
	}
	p.now = p.now.Add(150 * time.Millisecond)
	feedHex(t, p.s, p.now, dataAckHex(seqs...))
	got := frameChannels(p.poll())
	require.Equal(t, []string{"0:10", "0:11", "0:13"}, got, "packet 12 expired")
	require.Equal(t, uint64(1), p.s.Stats().Expired)
}

// TestQuietChannelPastQueueBound: once another channel's bulk has filled
// MaxQueuedBytes, a channel with nothing unsent still takes a packet of
// one fragment (a small message does not wait for the bulk's acks), but
// only one at a time, none larger than a fragment, and no more than one
// fragment per channel beyond the bound in all.
func TestQuietChannelPastQueueBound(t *testing.T) {
	cfg := Config{Channels: 3, MaxQueuedBytes: 3 * FragmentSize}
	s, _ := connected(t, cfg, cfg)
	require.NoError(t, s.Send(make([]byte, 3*FragmentSize), engine.SendOptions{Channel: 0}))
	require.ErrorIs(t, s.Send([]byte("x"), engine.SendOptions{Channel: 0}), engine.ErrQueueFull, "the bulk channel waits")
	require.ErrorIs(t, s.Send(make([]byte, FragmentSize+1), engine.SendOptions{Channel: 1}), engine.ErrQueueFull, "more than a fragment")
	require.NoError(t, s.Send(make([]byte, FragmentSize), engine.SendOptions{Channel: 1}), "a quiet channel")
	require.ErrorIs(t, s.Send([]byte("z"), engine.SendOptions{Channel: 1}), engine.ErrQueueFull, "channel 1 now has data unsent")
	require.NoError(t, s.Send(make([]byte, FragmentSize), engine.SendOptions{Channel: 2}))
	for i := 0; s.txch[0].unsent+s.txch[1].unsent+s.txch[2].unsent > 0; i++ {
		require.Less(t, i, 100, "the queued fragments leave")
		pollHex(t, s, at(10+i))
	}
	require.Equal(t, 5*FragmentSize, s.pendBytes, "in flight, unacknowledged")
	require.NoError(t, s.Send(make([]byte, FragmentSize), engine.SendOptions{Channel: 1}), "6 fragments: the bound's 3 and one per channel")
	require.ErrorIs(t, s.Send([]byte("w"), engine.SendOptions{Channel: 2}), engine.ErrQueueFull, "past one fragment per channel")
}
