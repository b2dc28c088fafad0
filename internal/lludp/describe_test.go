package lludp

import (
	"testing"

	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

// TestDescribeVectors checks that every reference packet describes
// without error, with the message ParsePacket finds.
func TestDescribeVectors(t *testing.T) {
	for _, h := range allVectorHex(loadVectors(t)) {
		b := unhex(t, h)
		d := Describe(b)
		require.NoError(t, d.Err, h)
		var p Packet
		require.NoError(t, ParsePacket(b, &p, make([]byte, 0, MaxDecoded)))
		require.Len(t, d.Frames, 1)
		require.Equal(t, p.Message, d.Frames[0].Fields[0].Value, h)
		require.Equal(t, len(p.Body), d.Frames[0].Fields[2].Value, h)
		require.Equal(t, messageKind(p.Message), d.Type)
	}
}

func TestDescribeExact(t *testing.T) {
	// P2: PacketAck of IDs 1..3 with two appended acks.
	require.Equal(t, trace.Datagram{
		Protocol: "lludp", Type: "ack",
		Fields: []trace.Field{
			{Name: "flags", Value: "appended_acks"},
			{Name: "seq", Value: uint32(1)},
			{Name: "acks", Value: []uint32{2, 1}},
		},
		Frames: []trace.Frame{{Type: "message", Fields: []trace.Field{
			{Name: "number", Value: uint32(0xFFFFFFFB)},
			{Name: "frequency", Value: "fixed"},
			{Name: "length", Value: 13},
			{Name: "data_prefix", Value: unhex(t, "03010000000200000003000000")},
			{Name: "ids", Value: []uint32{1, 2, 3}},
		}}},
	}, Describe(unhex(t, "100000000100fffffffb03010000000200000003000000000000020000000102")))

	// P8: StartPingCheck, PingID 7, OldestUnacked 42.
	require.Equal(t, trace.Datagram{
		Protocol: "lludp", Type: "start_ping_check",
		Fields: []trace.Field{
			{Name: "flags", Value: ""},
			{Name: "seq", Value: uint32(5)},
		},
		Frames: []trace.Frame{{Type: "message", Fields: []trace.Field{
			{Name: "number", Value: uint32(1)},
			{Name: "frequency", Value: "high"},
			{Name: "length", Value: 5},
			{Name: "data_prefix", Value: unhex(t, "072a000000")},
			{Name: "ping_id", Value: uint8(7)},
			{Name: "oldest_unacked", Value: uint32(42)},
		}}},
	}, Describe(unhex(t, "00000000050001072a000000")))

	// P15: an extra header on CompletePingCheck.
	require.Equal(t, trace.Datagram{
		Protocol: "lludp", Type: "complete_ping_check",
		Fields: []trace.Field{
			{Name: "flags", Value: ""},
			{Name: "seq", Value: uint32(7)},
			{Name: "extra", Value: unhex(t, "abcd")},
		},
		Frames: []trace.Frame{{Type: "message", Fields: []trace.Field{
			{Name: "number", Value: uint32(2)},
			{Name: "frequency", Value: "high"},
			{Name: "length", Value: 1},
			{Name: "data_prefix", Value: unhex(t, "07")},
			{Name: "ping_id", Value: uint8(7)},
		}}},
	}, Describe(unhex(t, "00000000070202abcd07")))

	// P10: UseCircuitCode.
	d := Describe(unhex(t, "400000000100ffff000340e20100550e8400e29b41d4a7164466554400001c8a7767e37b422eafb385093197cad1"))
	require.NoError(t, d.Err)
	require.Equal(t, "use_circuit_code", d.Type)
	require.Equal(t, []trace.Field{{Name: "flags", Value: "reliable"}, {Name: "seq", Value: uint32(1)}}, d.Fields)
	require.Equal(t, []trace.Field{
		{Name: "number", Value: uint32(0xFFFF0003)},
		{Name: "frequency", Value: "low"},
		{Name: "length", Value: 36},
		{Name: "data_prefix", Value: unhex(t, "40e20100550e8400e29b41d4a7164466")},
		{Name: "code", Value: uint32(123456)},
		{Name: "session_id", Value: unhex(t, "550e8400e29b41d4a716446655440000")},
		{Name: "agent_id", Value: unhex(t, "1c8a7767e37b422eafb385093197cad1")},
	}, d.Frames[0].Fields)
}

func TestDescribeMalformed(t *testing.T) {
	// The appended-ack count says 9.
	d := Describe(unhex(t, "100000000300010709"))
	require.ErrorIs(t, d.Err, errAckCount)
	require.Equal(t, []trace.Field{{Name: "flags", Value: "appended_acks"}, {Name: "seq", Value: uint32(3)}}, d.Fields)
	require.Empty(t, d.Frames)

	require.Equal(t, trace.Datagram{Protocol: "lludp", Err: errShort}, Describe([]byte{0, 0}))
}

// FuzzDescribe checks that Describe never panics and agrees with
// ParsePacket.
func FuzzDescribe(f *testing.F) {
	for _, h := range allVectorHex(loadVectors(f)) {
		f.Add(unhex(f, h))
	}
	scratch := make([]byte, 0, MaxDecoded)
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Describe(b)
		var p Packet
		err := ParsePacket(b, &p, scratch)
		require.Equal(t, err, d.Err)
		if err == nil {
			require.Len(t, d.Frames, 1)
		}
	})
}
