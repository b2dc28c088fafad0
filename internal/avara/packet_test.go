package avara

import (
	"encoding/hex"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestMessageForms: the encoder picks the narrowest form of p3 and of the
// data length and omits zero fields, as the reference does
// (docs/protocols/avara.md §1.4).
func TestMessageForms(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Message
		hex  string
	}{
		{"bare", Message{Serial: 2, Command: 5}, "0200000005"},
		{"p3 1", Message{Serial: 2, Command: 5, P3: 1}, "020000200501 00"},
		{"p3 65535", Message{Serial: 2, Command: 5, P3: 65535}, "0200002005ffff"},
		{"p3 65536", Message{Serial: 2, Command: 5, P3: 65536}, "020000040500000100"},
		{"p3 -1", Message{Serial: 2, Command: 5, P3: -1}, "0200000405ffffffff"},
		{"data 255", Message{Serial: 2, Command: 5, Data: make([]byte, 255)}, "0200001005ff" + hex.EncodeToString(make([]byte, 255))},
		{"data 256", Message{Serial: 2, Command: 5, Data: make([]byte, 256)}, "02000008050001" + hex.EncodeToString(make([]byte, 256))},
		{"p1 p2 sender", Message{Serial: 0x1234, SendCount: 3, Command: -8, P1: -1, P2: 0x102, Sender: 7, HasSender: true}, "34120383f80201ff07"},
		{"distribution 0", Message{Serial: 2, Command: 5, HasDistribution: true}, "020000400500 00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := unhex(t, stripSpaces(tc.hex))
			require.Equal(t, hex.EncodeToString(want), hex.EncodeToString(AppendMessage(nil, &tc.m)))
			require.Equal(t, len(want), MessageLen(&tc.m))
			d := Datagram{Ack: NothingReceived, Messages: []Message{tc.m}}
			var got Datagram
			require.NoError(t, ParseDatagram(AppendDatagram(nil, &d, 7), &got, 7))
			require.Len(t, got.Messages, 1)
			m := got.Messages[0]
			require.Equal(t, tc.m.Serial, m.Serial)
			require.Equal(t, tc.m.P3, m.P3)
			require.Equal(t, tc.m.P2, m.P2)
			require.Equal(t, tc.m.P1, m.P1)
			require.Equal(t, len(tc.m.Data), len(m.Data))
			require.Equal(t, tc.m.HasSender, m.HasSender)
		})
	}
}

func stripSpaces(s string) string {
	out := make([]byte, 0, len(s))
	for i := range len(s) {
		if s[i] != ' ' {
			out = append(out, s[i])
		}
	}
	return string(out)
}

// sealed returns hex h as a datagram with its checksum for version 18.
func sealed(t testing.TB, h string) []byte {
	b := unhex(t, h)
	seal(b, DefaultVersion)
	return b
}

// TestParseErrors: what ParseDatagram refuses, each with its error.
func TestParseErrors(t *testing.T) {
	var d Datagram
	v1 := unhex(t, loadVectors(t).Vectors[0].Hex)
	for _, tc := range []struct {
		name string
		b    []byte
		err  error
	}{
		{"empty", nil, errShort},
		{"3 bytes", []byte{1, 2, 3}, errShort},
		{"too long", make([]byte, MaxReceived+1), errLong},
		{"checksum", append([]byte{v1[0] ^ 1}, v1[1:]...), errChecksum},
		{"AckMap cut", sealed(t, "0000010000"), errAckMap},
		{"message cut", sealed(t, "0000feff00000000"), errTrunc},
		{"p3 cut", sealed(t, "0000feff0000002005ff"), errTrunc},
		{"data cut", sealed(t, "0000feff0000001005020a"), errTrunc},
		{"data 985", sealed(t, "0000feff00000008"+"05d903"), errDataLen},
		{"data negative", sealed(t, "0000feff00000008"+"05ffff"), errDataLen},
	} {
		err := ParseDatagram(tc.b, &d, DefaultVersion)
		require.ErrorIs(t, err, tc.err, tc.name)
		require.ErrorIs(t, err, engine.ErrMalformed, tc.name)
	}
	require.ErrorIs(t, ParseDatagram(v1, &d, DefaultVersion+1), errChecksum, "another version reads as corrupted")
	require.ErrorIs(t, ParseDatagram(unhex(t, "04c0a8000a4a6f"), &d, DefaultVersion), ErrPunch)
	require.NotErrorIs(t, ErrPunch, engine.ErrMalformed)
	require.NoError(t, ParseDatagram(sealed(t, "0000feff"), &d, DefaultVersion), "a pure ack")
	require.NoError(t, ParseDatagram(sealed(t, "0000ff00"+"00000000"), &d, DefaultVersion), "a pure ack with an empty AckMap")
	require.NoError(t, ParseDatagram(sealed(t, "0000feff00000008"+"05d803"+hex.EncodeToString(make([]byte, MaxData))), &d, DefaultVersion), "984 data bytes")
	require.Len(t, d.Messages[0].Data, MaxData)
}
