package airhook

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

func TestVectorPacketsRoundTrip(t *testing.T) {
	v := loadVectors(t)
	for _, vp := range v.Packets {
		b := unhex(t, vp.Hex)
		require.Len(t, b, vp.Length, vp.ID)
		var p Packet
		require.NoError(t, Decode(b, &p), vp.ID)
		requireFields(t, vp.Fields, &p, vp.ID)
		require.Len(t, p.Messages, len(vp.Messages), vp.ID)
		for i, m := range vp.Messages {
			require.Equal(t, unhex(t, m.Hex), p.Messages[i], vp.ID)
			require.Equal(t, m.Text, string(p.Messages[i]), vp.ID)
			require.Equal(t, uint8(m.ID), p.Next+uint8(i), vp.ID)
		}
		require.Equal(t, b, p.AppendTo(nil), vp.ID)
		require.Equal(t, len(b), p.Len(), vp.ID)
	}
	for i, tp := range v.UDPTrace.Packets {
		b := unhex(t, tp.Hex)
		var p Packet
		require.NoError(t, Decode(b, &p), "trace %d", i)
		requireFields(t, tp.Fields, &p, tp.Summary)
		require.Len(t, p.Messages, tp.MessageCount, tp.Summary)
		require.Equal(t, b, p.AppendTo(nil), tp.Summary)
	}
}

func TestVectorReceiverCasesRoundTrip(t *testing.T) {
	v := loadVectors(t)
	for _, st := range v.ReceiverCases.Steps {
		for _, h := range []string{st.Input, st.Response} {
			if h == "" {
				continue
			}
			b := unhex(t, h)
			var p Packet
			err := Decode(b, &p)
			if b[0]&flagOutOfBand != 0 {
				require.ErrorIs(t, err, ErrOutOfBand, h)
				continue
			}
			require.NoError(t, err, h)
			require.Equal(t, b, p.AppendTo(nil), h)
		}
	}
}

func TestDecodeFields(t *testing.T) {
	// Every optional field, in the order O, S, I, E, M (docs/protocols/airhook.md §1.1).
	b := []byte{0x1f, 0x07, 0x01, 0x02, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 7, 8, 2, 'a', 'b', 'c'}
	var p Packet
	require.NoError(t, Decode(b, &p))
	require.Equal(t, Packet{
		ObservedSeq:     7,
		Seq:             0x0102,
		ObservedSession: 0x01020304,
		Session:         0x05060708,
		Interval:        9,
		Next:            10,
		Missed:          []uint8{7, 8},
		Messages:        [][]byte{[]byte("abc")},
	}, p)
	require.Equal(t, b, p.AppendTo(nil))
}

func TestDecodeCanonicalisesAbsentValues(t *testing.T) {
	// E present with value 0, bits 5 and 6 set: accepted; the encoder
	// writes the reference's canonical form (docs/protocols/airhook.md §1.2, §1.3).
	var p Packet
	require.NoError(t, Decode([]byte{0x62, 0x01, 0x00, 0x05, 0x00}, &p))
	require.Equal(t, Packet{ObservedSeq: 1, Seq: 5}, p)
	require.Equal(t, []byte{0x00, 0x01, 0x00, 0x05}, p.AppendTo(nil))
}

func TestDecodeLimits(t *testing.T) {
	full := func(n int) []byte { // n messages of one byte
		b := []byte{0, 0, 0, 1}
		for range n {
			b = append(b, 0, 'x')
		}
		return b
	}
	long := append([]byte{0, 0, 0, 1, 0xff}, bytes.Repeat([]byte{'y'}, 256)...)
	missed := append([]byte{0x04, 0, 0, 1, 0xff}, bytes.Repeat([]byte{3}, 256)...)

	var p Packet
	require.NoError(t, Decode(full(256), &p))
	require.Len(t, p.Messages, 256)
	require.NoError(t, Decode(long, &p))
	require.Len(t, p.Messages[0], 256)
	require.NoError(t, Decode(missed, &p))
	require.Len(t, p.Missed, 256)
	require.Empty(t, p.Messages)

	for name, b := range map[string][]byte{
		"empty":              {},
		"short header":       {0, 0, 1},
		"O truncated":        {0x10, 0, 0, 1, 1, 2, 3},
		"S truncated":        {0x18, 0, 0, 1, 1, 2, 3, 4, 5},
		"I truncated":        {0x01, 0, 0, 1},
		"E truncated":        {0x03, 0, 0, 1, 9},
		"M count missing":    {0x04, 0, 0, 1},
		"M entries short":    {0x04, 0, 0, 1, 2, 1, 2},
		"message overrun":    {0x00, 0, 0, 1, 4, 'a', 'b'},
		"257 messages":       full(257),
		"message one short":  long[:len(long)-1],
		"bit 7":              {0x80, 0, 0, 1},
		"bit 7 with payload": {0x82, 5, 1, 0x30, 3},
	} {
		err := Decode(b, &p)
		require.Error(t, err, name)
		require.ErrorIs(t, err, engine.ErrMalformed, name)
		require.Equal(t, len(b) >= 4 && b[0]&flagOutOfBand != 0, errors.Is(err, ErrOutOfBand), name)
	}
}

func TestDecodeMessagesAliasInputWithoutOverlap(t *testing.T) {
	b := []byte{0, 0, 0, 1, 1, 'a', 'b', 0, 'c'}
	var p Packet
	require.NoError(t, Decode(b, &p))
	require.Equal(t, [][]byte{[]byte("ab"), []byte("c")}, p.Messages)
	_ = append(p.Messages[0], 'Z') // must not overwrite the next length octet
	require.Equal(t, byte(0), b[7])
}

func TestDecodeReusesMessageSlice(t *testing.T) {
	b := unhex(t, "0204000506016d32016d33016d34")
	var p Packet
	require.NoError(t, Decode(b, &p))
	allocs := testing.AllocsPerRun(100, func() {
		if err := Decode(b, &p); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
}

func benchPacket() *Packet {
	p := &Packet{ObservedSeq: 4, Seq: 5, Next: 6}
	for range 5 {
		p.Messages = append(p.Messages, bytes.Repeat([]byte{'m'}, 256))
	}
	return p
}

func BenchmarkEncode(b *testing.B) {
	p := benchPacket()
	buf := make([]byte, 0, DefaultMaxDatagram)
	b.SetBytes(int64(p.Len()))
	b.ReportAllocs()
	for b.Loop() {
		buf = p.AppendTo(buf[:0])
	}
}

func BenchmarkDecode(b *testing.B) {
	wire := benchPacket().AppendTo(nil)
	var p Packet
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Decode(wire, &p); err != nil {
			b.Fatal(err)
		}
	}
}
