package porous

import (
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestSmallAheadOfPacedBulk: with the pacer holding channel 0's next
// frame back (its burst just sent), a small message queued on channel 1
// leaves at once, alone in its frame, and the bulk's next frame waits
// that frame's bytes longer at the pacing rate: the pacer's credit pays
// for it, so the long-run rate is unchanged.
func TestSmallAheadOfPacedBulk(t *testing.T) {
	const rate = 1_000_000 // bytes/s: one byte of credit a microsecond; the burst is two frames
	a := rateCapped(t, 2, rate)
	sendN(t, a, 0, 20, FragmentSize, engine.Reliable)
	now := at(12)
	require.Equal(t, []string{"0:1", "0:2"}, channelsOf(t, pollHex(t, a, now)), "the burst")
	bulkAt := a.Deadline()
	require.Equal(t, now.Add(time.Microsecond+time.Nanosecond), bulkAt, "the next frame waits for one byte of credit")

	require.NoError(t, a.Send(make([]byte, 100), engine.SendOptions{Channel: 1}))
	require.Equal(t, now, a.Deadline(), "the small message is due at once")
	small := pollHex(t, a, now)
	require.Equal(t, []string{"1:0"}, channelsOf(t, small), "ahead of the pacer, alone")
	n := len(small[0]) / 2
	require.Equal(t, DataHeaderSize+FragmentHeaderSize+100, n)
	require.Equal(t, bulkAt.Add(time.Duration(n)*time.Microsecond), a.Deadline(), "the bulk repays the frame's bytes")
	require.Empty(t, pollHex(t, a, bulkAt), "not before")
	require.Equal(t, []string{"0:3"}, channelsOf(t, pollHex(t, a, a.Deadline())))
}

// TestAheadBounded: frames sent ahead of the pacer are in flight beyond
// the window by at most MaxFrameSize bytes in all; a small message queued
// once that is reached waits for the pacer like the bulk, and goes before
// it.
func TestAheadBounded(t *testing.T) {
	a := rateCapped(t, 14, 1_000_000)
	sendN(t, a, 0, 20, FragmentSize, engine.Reliable)
	now := at(12)
	require.Equal(t, []string{"0:1", "0:2"}, channelsOf(t, pollHex(t, a, now)))
	var got []string
	for ch := range uint8(13) {
		require.NoError(t, a.Send(make([]byte, 100), engine.SendOptions{Channel: 1 + ch}))
		got = append(got, channelsOf(t, pollHex(t, a, now))...)
	}
	// 12 frames of 117 bytes fit in MaxFrameSize, the 13th waits.
	require.Equal(t, []string{"1:0", "2:0", "3:0", "4:0", "5:0", "6:0", "7:0", "8:0", "9:0", "10:0", "11:0", "12:0"}, got)
	require.Equal(t, []string{"13:0"}, channelsOf(t, pollHex(t, a, a.Deadline())), "the next paced frame")
}

// TestFreshChannelFirst: a channel that becomes active goes before the
// rest of a busy channel's turn (here a turn of three frames, weight 3),
// for one quantum; found empty, it goes to the back of the line and then
// takes its turns there, so that a channel refilled before every frame
// does not starve the busy one (RFC 8290 §4.2).
func TestFreshChannelFirst(t *testing.T) {
	p := newFakePeer(t, Config{Channels: 2, Weights: []int{3, 1}})
	sendN(t, p.s, 0, 12, FragmentSize, engine.Reliable)
	buf := make([]byte, MaxFrameSize)
	one := func() string {
		n := p.s.Poll(p.now, buf)
		require.NotZero(t, n)
		var f Frame
		require.NoError(t, Decode(buf[:n], &f))
		return frameChannels([]Frame{f})[0]
	}
	for i := range 4 { // channel 0's first quantum, then the first frame of its next turn
		require.Equal(t, fmt.Sprintf("0:%d", i), one())
	}
	var got []string
	for range 7 {
		require.NoError(t, p.s.Send(make([]byte, 600), engine.SendOptions{Channel: 1}))
		got = append(got, one())
	}
	require.Equal(t, []string{"1:0", "0:4", "0:5", "1:1", "0:6", "0:7", "0:8"}, got)
}

// rateCapped returns a session of ch channels connected to a peer, with
// its pacing rate capped at rate bytes/s (Config.MaxTxBandwidth): one
// message of channel 0 was sent at 10 ms and acknowledged at 12 ms, which
// applies the cap.
func rateCapped(t *testing.T, ch int, rate uint32) *Session {
	t.Helper()
	a, b := connected(t, Config{Channels: ch, MaxTxBandwidth: rate}, Config{Channels: ch})
	sendN(t, a, 0, 1, 10, engine.Reliable)
	buf := make([]byte, MaxFrameSize)
	deliverFrames(t, at(10), buf, a, b)
	deliverFrames(t, at(12), buf, b, a)
	require.Equal(t, uint64(rate), a.Stats().Congestion.Pacing)
	require.Zero(t, a.cc.InFlight())
	return a
}

// channelsOf is frameChannels of hex frames.
func channelsOf(t *testing.T, frames []string) []string {
	t.Helper()
	var fs []Frame
	for _, h := range frames {
		var f Frame
		require.NoError(t, Decode(unhex(t, h), &f))
		fs = append(fs, f)
	}
	return frameChannels(fs)
}

// TestBulkRefillNotAhead: a channel that becomes active with more than a
// fragment unsent waits for the pacer like any bulk, though it goes first.
func TestBulkRefillNotAhead(t *testing.T) {
	a := rateCapped(t, 2, 1_000_000)
	sendN(t, a, 0, 20, FragmentSize, engine.Reliable)
	now := at(12)
	require.Equal(t, []string{"0:1", "0:2"}, channelsOf(t, pollHex(t, a, now)))
	bulkAt := a.Deadline()
	require.NoError(t, a.Send(make([]byte, FragmentSize+1), engine.SendOptions{Channel: 1}))
	require.Empty(t, pollHex(t, a, now))
	require.Equal(t, bulkAt, a.Deadline())
	require.Equal(t, []string{"1:0"}, channelsOf(t, pollHex(t, a, bulkAt)), "first, at the pacer's time")
}
