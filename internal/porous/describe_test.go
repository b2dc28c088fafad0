package porous

import (
	"testing"

	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

// TestDescribeVectors checks that every captured frame describes without
// error, with the type and the messages Decode finds.
func TestDescribeVectors(t *testing.T) {
	for _, b := range allVectorFrames(t) {
		d := Describe(b)
		require.NoError(t, d.Err, "%x", b)
		var f Frame
		require.NoError(t, Decode(b, &f))
		require.Equal(t, snake(f.Type.String()), d.Type)
		require.Equal(t, describeMessages(f.Messages), d.Frames)
		require.Len(t, d.Frames, len(f.Messages))
	}
}

func TestDescribeExact(t *testing.T) {
	require.Equal(t, trace.Datagram{
		Protocol: "porous", Type: "connect",
		Fields: []trace.Field{
			{Name: "version", Value: uint8(0)},
			{Name: "num_channels", Value: 2},
			{Name: "max_rx_bandwidth", Value: uint32(100000000)},
			{Name: "nonce", Value: uint32(0xd430804d)},
		},
	}, Describe(unhex(t, "00000105f5e100d430804d")))

	require.Equal(t, trace.Datagram{
		Protocol: "porous", Type: "data_ack",
		Fields: []trace.Field{
			{Name: "count", Value: 2},
			{Name: "frame_seqs", Value: []uint32{0xaed5527e, 0xaed5527f}},
		},
	}, Describe(unhex(t, "070002aed5527eaed5527f")))

	require.Equal(t, trace.Datagram{Protocol: "porous", Type: "ping", Fields: []trace.Field{{Name: "ping_id", Value: uint16(0)}}},
		Describe(unhex(t, "040000")))

	frag := func(ch uint8, seq uint32, lead uint16, data string) trace.Frame {
		return trace.Frame{Type: "fragment", Fields: []trace.Field{
			{Name: "channel", Value: ch},
			{Name: "packet_seq", Value: seq},
			{Name: "dependent_lead", Value: lead},
			{Name: "fragment_id", Value: uint16(0)},
			{Name: "last_fragment_id", Value: uint16(0)},
			{Name: "length", Value: 8},
			{Name: "data_prefix", Value: unhex(t, data)},
		}}
	}
	require.Equal(t, trace.Datagram{
		Protocol: "porous", Type: "data",
		Fields: []trace.Field{
			{Name: "frame_seq", Value: uint32(0x05f615e7)},
			{Name: "msg_count", Value: 3},
		},
		Frames: []trace.Frame{
			frag(0, 0, 0, "5200000000000607"),
			frag(0, 1, 1, "5000000000020809"),
			frag(1, 0, 0, "5501000000010708"),
		},
	}, Describe(unhex(t, "0605f615e70003000000000000000000000000085200000000000607000000000100010000000000085000000000020809000100000000000000000000085501000000010708")))

	// A sentinel and a window ack.
	require.Equal(t, trace.Datagram{
		Protocol: "porous", Type: "data",
		Fields: []trace.Field{
			{Name: "frame_seq", Value: uint32(9)},
			{Name: "msg_count", Value: 2},
		},
		Frames: []trace.Frame{
			{Type: "sentinel", Fields: []trace.Field{
				{Name: "channel", Value: uint8(1)}, {Name: "packet_seq", Value: uint32(0x030405)}, {Name: "dependent_lead", Value: uint16(2)},
			}},
			{Type: "window_ack", Fields: []trace.Field{
				{Name: "channel", Value: uint8(0)}, {Name: "packet_seq", Value: uint32(7)},
			}},
		},
	}, Describe(unhex(t, "06000000090002"+"01010304050002"+"0200000007")))
}

func TestDescribeMalformed(t *testing.T) {
	// The second message's type is unknown: the first one is kept.
	d := Describe(unhex(t, "06000000090002"+"0200000007"+"0900000000"))
	require.ErrorIs(t, d.Err, errMessageType)
	require.Equal(t, "data", d.Type)
	require.Equal(t, []trace.Field{{Name: "frame_seq", Value: uint32(9)}}, d.Fields)
	require.Equal(t, []trace.Frame{{Type: "window_ack", Fields: []trace.Field{
		{Name: "channel", Value: uint8(0)}, {Name: "packet_seq", Value: uint32(7)},
	}}}, d.Frames)

	d = Describe(unhex(t, "0400"))
	require.ErrorIs(t, d.Err, errFrameSize)
	require.Equal(t, trace.Datagram{Protocol: "porous", Type: "ping", Err: errFrameSize}, d)

	require.Equal(t, trace.Datagram{Protocol: "porous", Err: errFrameType}, Describe([]byte{8}))
	require.Equal(t, trace.Datagram{Protocol: "porous", Err: errEmpty}, Describe(nil))
}

// FuzzDescribe checks that Describe never panics and agrees with the
// decoder.
func FuzzDescribe(f *testing.F) {
	for _, b := range allVectorFrames(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Describe(b)
		var fr Frame
		err := decode(b, &fr, LargeFrameSize)
		require.Equal(t, err, d.Err)
		if err == nil {
			require.Len(t, d.Frames, len(fr.Messages))
		}
	})
}
