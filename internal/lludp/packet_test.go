package lludp

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

func TestNumberEncoding(t *testing.T) {
	for _, c := range []struct {
		n    uint32
		wire string
	}{
		{1, "01"}, {0xFE, "fe"}, {0xFF01, "ff01"}, {0xFFFE, "fffe"},
		{TestMessage, "ffff0001"}, {UseCircuitCode, "ffff0003"}, {StreamMessage, "fffffde8"},
		{PacketAck, "fffffffb"}, {0xFFFFFFFF, "ffffffff"},
	} {
		var b [4]byte
		l := PutNumber(b[:], c.n)
		require.Equal(t, c.wire, hexs(b[:l]), "%#x", c.n)
		n, l2 := ParseNumber(b[:l])
		require.Equal(t, c.n, n)
		require.Equal(t, l, l2)
		require.Equal(t, l, NumberLen(c.n))
	}
	for _, n := range []uint32{0xFF, 0x100, 0xFEFF, 0xFFFF, 0x10000, 0xFFFEFFFF} {
		require.Zero(t, NumberLen(n), "%#x has no encoding", n)
	}
	require.Equal(t, "Low", frequency(StreamMessage))
	require.Equal(t, uint32(65000), StreamMessage&0xFFFF)
	_, l := ParseNumber([]byte{0xFF, 0xFF, 0x00})
	require.Zero(t, l)
}

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// randomPacket returns a packet with fields drawn from rng, bodies rich in
// zero runs.
func randomPacket(rng *rand.Rand) Packet {
	numbers := []uint32{1, 2, 5, 0xFE, 0xFF01, 0xFF06, 0xFFFE, TestMessage, 0xFFFF0100, StreamMessage, PacketAck, 0xFFFFFFFF}
	p := Packet{
		Flags:   byte(rng.IntN(8)) << 5,
		Seq:     rng.Uint32(),
		Message: numbers[rng.IntN(len(numbers))],
	}
	if rng.IntN(4) == 0 {
		p.Extra = enginetest.RandomBytes(rng, rng.IntN(8))
	}
	p.Body = enginetest.RandomBytes(rng, rng.IntN(1200))
	for range rng.IntN(4) * rng.IntN(70) {
		p.Acks = append(p.Acks, rng.Uint32())
	}
	return p
}

// TestPacketRoundTrip: decode(encode(x)) == x for random packets, and the
// zerocoding decision is the viewer's.
func TestPacketRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q Packet
	scratch := make([]byte, 0, MaxDecoded)
	for i := range 20_000 {
		p := randomPacket(rng)
		wire := AppendPacket(nil, &p)
		require.NoError(t, ParsePacket(wire, &q, scratch), i)
		require.Equal(t, p.Seq, q.Seq)
		require.Equal(t, p.Message, q.Message)
		require.Equal(t, len(p.Extra), len(q.Extra))
		require.True(t, bytes.Equal(p.Extra, q.Extra))
		require.True(t, bytes.Equal(p.Body, q.Body))
		require.Equal(t, len(p.Acks), len(q.Acks))
		if len(p.Acks) > 0 {
			require.Equal(t, p.Acks, q.Acks)
		}
		require.Equal(t, p.Flags&(FlagReliable|FlagResent), q.Flags&(FlagReliable|FlagResent))
		require.Equal(t, len(p.Acks) > 0, q.Flags&FlagAppendedAcks != 0)

		plain := NumberLen(p.Message) + len(p.Extra) + len(p.Body)
		region := wire[HeaderLen : len(wire)-trailerLen(len(p.Acks))]
		var num [4]byte
		enc := ZeroEncode(nil, append(append(num[:PutNumber(num[:], p.Message)], p.Extra...), p.Body...))
		if p.Flags&FlagZerocoded != 0 && len(enc) < plain {
			require.Equal(t, byte(FlagZerocoded), q.Flags&FlagZerocoded)
			require.Equal(t, enc, region)
			requireNoDoubleZero(t, region)
		} else {
			require.Zero(t, q.Flags&FlagZerocoded)
			require.Len(t, region, plain)
		}
	}
}

func trailerLen(acks int) int {
	if acks == 0 {
		return 0
	}
	return 4*acks + 1
}

// requireNoDoubleZero checks that zerocoded data never holds 00 00: every
// zero marker is followed by a nonzero count.
func requireNoDoubleZero(t testing.TB, enc []byte) {
	t.Helper()
	for i := 0; i < len(enc); i++ {
		if enc[i] == 0 {
			require.Less(t, i+1, len(enc), "marker without count")
			require.NotZero(t, enc[i+1], "00 00 at %d", i)
			i++
		}
	}
}

func TestParseErrors(t *testing.T) {
	var p Packet
	for name, in := range map[string]string{
		"short":      "000000000100",
		"acks":       "10000000010005" + "00000001" + "02",
		"number":     "0000000001" + "00ff",
		"low":        "0000000001" + "00ffff01",
		"extra":      "0000000001" + "0105",
		"zeronumber": "8000000001" + "00ff",
	} {
		err := ParsePacket(unhex(t, in), &p, nil)
		require.ErrorIs(t, err, engine.ErrMalformed, name)
	}
	// The ack trailer is stripped before zero-decoding: 4k + 7 ≤ length − 1.
	require.NoError(t, ParsePacket(unhex(t, "1000000001"+"0005"+"00000007"+"01"), &p, nil))
	require.Equal(t, []uint32{7}, p.Acks)
	require.Empty(t, p.Body)
	// The low nibble is ignored.
	require.NoError(t, ParsePacket(unhex(t, "4f0000000100"+"05"), &p, nil))
	require.Equal(t, byte(FlagReliable), p.Flags)
	// Expansion up to MaxDecoded is accepted, one more byte is not.
	big := append(unhex(t, "8000000001"+"0005"), bytes.Repeat([]byte{0, 0xFF}, (MaxDecoded-1)/0xFF)...)
	big = append(big, 0, byte((MaxDecoded-1)%0xFF))
	require.NoError(t, ParsePacket(big, &p, nil))
	require.Len(t, p.Body, MaxDecoded-1)
	big[len(big)-1]++
	require.ErrorIs(t, ParsePacket(big, &p, nil), engine.ErrMalformed)
}

func TestZeroDecodeAppends(t *testing.T) {
	dst := []byte("ab")
	out, err := ZeroDecode(dst, []byte{1, 0, 3})
	require.NoError(t, err)
	require.Equal(t, []byte{'a', 'b', 1, 0, 0, 0}, out)
	require.Equal(t, []byte{'x', 0, 1, 1}, ZeroEncode([]byte{'x'}, []byte{0, 1}))
	_, err = ZeroDecode(nil, bytes.Repeat([]byte{0}, 40))
	require.ErrorIs(t, err, engine.ErrMalformed, "40 × 00 = 39·256+1 zeros")
}

// TestZerocodedOnlyWhenShorter: the zerocoded form is kept only when
// strictly shorter than the plain one (docs/protocols/lludp.md §1.3); the plain form then
// goes out whole, whatever the encoder wrote before it gave up, and
// AppendPacket writes nothing beyond the plain form's length.
func TestZerocodedOnlyWhenShorter(t *testing.T) {
	for _, c := range []struct {
		body, want string
	}{
		{"0000", "000000000700" + "04" + "0000"},         // 04 00 02: as long
		{"000000", "800000000700" + "04" + "0003"},       // 04 00 03: shorter
		{"00010000", "000000000700" + "04" + "00010000"}, // 04 00 01 01 00 02: longer
		{"0101010100", "000000000700" + "04" + "0101010100"},
		{"01000000000000", "800000000700" + "04" + "01" + "0006"},
	} {
		p := Packet{Flags: FlagZerocoded, Seq: 7, Message: 4, Body: unhex(t, c.body)}
		buf := make([]byte, 0, HeaderLen+1+len(p.Body))
		wire := AppendPacket(buf, &p)
		require.Equal(t, c.want, hexs(wire), c.body)
		require.Equal(t, &buf[:1][0], &wire[0], "no allocation: the plain form fits")
	}
}
