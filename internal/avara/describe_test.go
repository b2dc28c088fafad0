package avara

import (
	"testing"

	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

// TestDescribeVectors checks that every reference datagram describes
// without error, with the messages ParseDatagram finds.
func TestDescribeVectors(t *testing.T) {
	for _, h := range allVectorHex(loadVectors(t)) {
		b := unhex(t, h)
		d := Describe(b)
		require.NoError(t, d.Err, h)
		var dg Datagram
		require.NoError(t, ParseDatagram(b, &dg, DefaultVersion))
		require.Len(t, d.Frames, len(dg.Messages), h)
		for i, m := range dg.Messages {
			require.Equal(t, m.Serial, d.Frames[i].Fields[0].Value, h)
		}
	}
}

func TestDescribeExact(t *testing.T) {
	v1 := trace.Datagram{
		Protocol: "avara", Type: "data",
		Fields: []trace.Field{
			{Name: "crc", Value: uint16(0xe7a7)},
			{Name: "ack", Value: uint16(0xfffe)},
		},
		Frames: []trace.Frame{{Type: "message", Fields: []trace.Field{
			{Name: "serial", Value: uint16(0)},
			{Name: "send_count", Value: uint8(0)},
			{Name: "command", Value: int8(-8)},
			{Name: "sender", Value: int8(-1)},
			{Name: "p1", Value: int8(0)},
			{Name: "p2", Value: int16(0)},
			{Name: "p3", Value: int32(74565)},
			{Name: "length", Value: 1},
			{Name: "data_prefix", Value: []byte{0}},
		}}},
	}
	require.Equal(t, v1, Describe(unhex(t, "a7e7feff00000094f84523010001ff00")))

	require.Equal(t, trace.Datagram{
		Protocol: "avara", Type: "ack",
		Fields: []trace.Field{
			{Name: "crc", Value: uint16(0xa19c)},
			{Name: "ack", Value: uint16(10)},
			{Name: "ackmap", Value: uint32(0xa)},
		},
	}, Describe(unhex(t, "9ca10b000a000000")))

	// V1 with a wrong checksum: described, with the error.
	v1.Fields[0].Value = uint16(0)
	v1.Err = errChecksum
	require.Equal(t, v1, Describe(unhex(t, "0000feff00000094f84523010001ff00")))
}

func TestDescribeMalformed(t *testing.T) {
	require.Equal(t, trace.Datagram{Protocol: "avara", Type: "punch", Err: ErrPunch}, Describe(make([]byte, PunchLen)))
	require.Equal(t, trace.Datagram{Protocol: "avara", Err: errShort}, Describe([]byte{1, 2}))

	// A message cut short, checksum right.
	b := AppendDatagram(nil, &Datagram{Ack: 4}, DefaultVersion)
	b = append(b, 2, 0, 0, 0) // 8 bytes: not a punch
	b[0], b[1] = 0, 0
	c := Checksum(b, DefaultVersion)
	b[0], b[1] = byte(c), byte(c>>8)
	require.Equal(t, trace.Datagram{Protocol: "avara", Err: errTrunc, Fields: []trace.Field{
		{Name: "crc", Value: c}, {Name: "ack", Value: uint16(4)},
	}}, Describe(b))
}

// FuzzDescribe checks that Describe never panics and agrees with
// ParseDatagram.
func FuzzDescribe(f *testing.F) {
	for _, h := range allVectorHex(loadVectors(f)) {
		f.Add(unhex(f, h))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Describe(b)
		var dg Datagram
		err := ParseDatagram(b, &dg, DefaultVersion)
		if err != errChecksum {
			require.Equal(t, err, d.Err)
		} else {
			require.Error(t, d.Err)
		}
		if err == nil {
			require.Len(t, d.Frames, len(dg.Messages))
		}
	})
}
