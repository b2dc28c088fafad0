package airhook

import (
	"testing"

	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

// TestDescribeVectors checks that every datagram the reference sent
// describes without error, with one frame per message Decode finds.
func TestDescribeVectors(t *testing.T) {
	v := loadVectors(t)
	var hexes []string
	for _, p := range v.Packets {
		hexes = append(hexes, p.Hex)
	}
	for _, p := range v.UDPTrace.Packets {
		hexes = append(hexes, p.Hex)
	}
	require.NotEmpty(t, hexes)
	for _, h := range hexes {
		b := unhex(t, h)
		d := Describe(b)
		require.NoError(t, d.Err, h)
		require.Equal(t, "airhook", d.Protocol)
		var p Packet
		require.NoError(t, Decode(b, &p))
		require.Len(t, d.Frames, len(p.Messages), h)
		for i, m := range p.Messages {
			require.Equal(t, len(m), d.Frames[i].Fields[1].Value, h)
			require.Equal(t, trace.DataPrefix(m), d.Frames[i].Fields[2], h)
		}
	}
}

func TestDescribeExact(t *testing.T) {
	require.Equal(t, trace.Datagram{
		Protocol: "airhook", Type: "ack",
		Fields: []trace.Field{
			{Name: "flags", Value: "O|S"},
			{Name: "observed_seq", Value: uint8(1)},
			{Name: "seq", Value: uint16(2)},
			{Name: "observed_session", Value: uint32(0x0a0a0a0a)},
			{Name: "session", Value: uint32(0x0b0b0b0b)},
		},
	}, Describe(unhex(t, "180100020a0a0a0a0b0b0b0b")))

	require.Equal(t, trace.Datagram{
		Protocol: "airhook", Type: "data",
		Fields: []trace.Field{
			{Name: "flags", Value: "O|S"},
			{Name: "observed_seq", Value: uint8(2)},
			{Name: "seq", Value: uint16(2)},
			{Name: "observed_session", Value: uint32(0x0b0b0b0b)},
			{Name: "session", Value: uint32(0x0a0a0a0a)},
		},
		Frames: []trace.Frame{
			{Type: "message", Fields: []trace.Field{
				{Name: "id", Value: uint8(0)}, {Name: "length", Value: 5}, {Name: "data_prefix", Value: []byte("hello")},
			}},
			{Type: "message", Fields: []trace.Field{
				{Name: "id", Value: uint8(1)}, {Name: "length", Value: 5}, {Name: "data_prefix", Value: []byte("world")},
			}},
		},
	}, Describe(unhex(t, "180200020b0b0b0b0a0a0a0a0468656c6c6f04776f726c64")))

	// E and M: next message 7, missed 3 and 5, one 20-byte message whose
	// prefix is cut at 16 bytes.
	msg := []byte("0123456789abcdefghij")
	b := append(unhex(t, "060102030701030513"), msg...)
	require.Equal(t, trace.Datagram{
		Protocol: "airhook", Type: "data",
		Fields: []trace.Field{
			{Name: "flags", Value: "E|M"},
			{Name: "observed_seq", Value: uint8(1)},
			{Name: "seq", Value: uint16(0x0203)},
			{Name: "next_msg", Value: uint8(7)},
			{Name: "missed", Value: []uint32{3, 5}},
		},
		Frames: []trace.Frame{{Type: "message", Fields: []trace.Field{
			{Name: "id", Value: uint8(7)}, {Name: "length", Value: 20}, {Name: "data_prefix", Value: []byte("0123456789abcdef")},
		}}},
	}, Describe(b))
}

func TestDescribeMalformed(t *testing.T) {
	d := Describe(unhex(t, "080000010a0a0a")) // S set, session cut short
	require.ErrorIs(t, d.Err, errTruncated)
	require.Equal(t, []trace.Field{
		{Name: "flags", Value: "S"}, {Name: "observed_seq", Value: uint8(0)}, {Name: "seq", Value: uint16(1)},
	}, d.Fields)
	require.Empty(t, d.Frames)

	d = Describe([]byte{0x80, 0, 0, 1})
	require.ErrorIs(t, d.Err, ErrOutOfBand)
	require.Empty(t, d.Fields)

	d = Describe(nil)
	require.ErrorIs(t, d.Err, errTruncated)
}

// FuzzDescribe checks that Describe never panics and agrees with Decode.
func FuzzDescribe(f *testing.F) {
	for _, h := range allVectorHex(loadVectors(f)) {
		f.Add(unhex(f, h))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Describe(b)
		var p Packet
		err := Decode(b, &p)
		require.Equal(t, err, d.Err)
		if err == nil {
			require.Len(t, d.Frames, len(p.Messages))
		}
	})
}
