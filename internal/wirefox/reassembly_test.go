package wirefox

import (
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestMissingSegment: a message cut into three segments (§3.6: 1200
// bytes each, split container the message's reserved packet ID, index i
// at offset i × 1200, SEG on all but the last) whose middle segment is
// missing is not delivered, nor is the complete message after it on its
// ORDERED channel; once the segment arrives both are delivered, in order,
// exactly once, and copies of the segments change nothing
// (docs/protocols/wirefox.md §3.6: the message completes when the last,
// non-SEG, segment and last index + 1 segments are in).
func TestMissingSegment(t *testing.T) {
	s := established(t, Config{})
	blob := make([]byte, 2*SegmentSize+100)
	blob[0] = CmdUser
	for i := 1; i < len(blob); i++ {
		blob[i] = byte(i % 251)
	}
	seg := func(i uint32) Packet {
		p := Packet{ID: 11 + i, Options: OptReliable, Channel: 1, Seq: 0, Offset: i * SegmentSize,
			Container: 10, Index: i, Body: blob[i*SegmentSize : min(int(i+1)*SegmentSize, len(blob))]}
		if i < 2 {
			p.Flags = PacketSEG
		}
		return p
	}
	next := []byte{CmdUser, 'n'}
	require.NoError(t, s.HandleDatagram(t0, dataDgram(0, seg(0))))
	require.NoError(t, s.HandleDatagram(t0, dataDgram(1, seg(2))))
	require.NoError(t, s.HandleDatagram(t0, dataDgram(2, Packet{ID: 14, Options: OptReliable, Channel: 1, Seq: 1, Body: next})))
	require.NoError(t, s.HandleDatagram(t0, dataDgram(3, seg(2)))) // a copy of the last segment
	_, ok := s.Recv()
	require.False(t, ok, "nothing delivered without segment 1")
	require.Zero(t, s.Stats().MessagesRecv)
	require.Equal(t, uint64(1), s.Stats().Duplicates)
	require.Equal(t, "60"+"00000000"+"03"+"00000000"+"00000001"+"00000002"+"00000003", poll(t, s, t0.Add(ackDelay)),
		"every datagram taken and acknowledged")

	require.NoError(t, s.HandleDatagram(t0.Add(ackDelay), dataDgram(4, seg(1))))
	m, ok := s.Recv()
	require.True(t, ok)
	require.Equal(t, engine.Message{Data: blob, Channel: 1, Reliable: true}, m, "the message, whole")
	m, ok = s.Recv()
	require.True(t, ok)
	require.Equal(t, engine.Message{Data: next, Channel: 1, Reliable: true}, m, "then the one after it")
	_, ok = s.Recv()
	require.False(t, ok)

	for i := range uint32(3) {
		require.NoError(t, s.HandleDatagram(t0.Add(ackDelay), dataDgram(5+i, seg(i))))
	}
	_, ok = s.Recv()
	require.False(t, ok, "delivered once")
	require.Equal(t, uint64(2), s.Stats().MessagesRecv)
	require.Equal(t, uint64(4), s.Stats().Duplicates)
	require.Zero(t, s.buffered, "nothing held")
}
