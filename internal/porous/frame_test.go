package porous

import (
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// FuzzPOROUSFrame checks that Decode never panics, that everything it
// refuses wraps engine.ErrMalformed, and that what it accepts re-encodes
// to the very same bytes (the format has a single encoding) and decodes to
// the same Frame again.
func FuzzPOROUSFrame(f *testing.F) {
	for _, b := range allVectorFrames(f) {
		f.Add(b)
	}
	f.Add([]byte{6, 0, 0, 0, 1, 0, 0})
	f.Add([]byte{7, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Frame
		if err := Decode(b, &p); err != nil {
			require.ErrorIs(t, err, engine.ErrMalformed)
			return
		}
		wire := p.AppendTo(nil)
		require.Equal(t, b, wire)
		require.Equal(t, len(b), p.Len())
		var q Frame
		require.NoError(t, Decode(wire, &q))
		require.Equal(t, p, q)
	})
}

func benchFrame() *Frame {
	f := &Frame{Type: FrameData, Seq: 0x05f615e7}
	data := make([]byte, 100)
	for i := range 12 {
		f.Messages = append(f.Messages, Message{
			Type: MsgFragment, Channel: uint8(i % 2), PacketSeq: uint32(i), DependentLead: 1,
			Data: data,
		})
	}
	return f
}

func BenchmarkFrameEncode(b *testing.B) {
	f := benchFrame()
	buf := make([]byte, 0, MaxFrameSize)
	b.SetBytes(int64(f.Len()))
	b.ReportAllocs()
	for b.Loop() {
		buf = f.AppendTo(buf[:0])
	}
}

func BenchmarkFrameDecode(b *testing.B) {
	wire := benchFrame().AppendTo(nil)
	var f Frame
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Decode(wire, &f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDataAckDecode(b *testing.B) {
	f := Frame{Type: FrameDataAck}
	for i := range MaxAcks {
		f.Acks = append(f.Acks, uint32(i))
	}
	wire := f.AppendTo(nil)
	require.Len(b, wire, MaxFrameSize-1)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Decode(wire, &f); err != nil {
			b.Fatal(err)
		}
	}
}
