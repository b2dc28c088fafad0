package wirefox

import (
	"bytes"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// FuzzWirefoxDatagram checks that ParseDatagram, ParsePacket and
// ParseHandshake never panic, that what they refuse wraps
// engine.ErrMalformed, and that a canonical datagram (reserved bits 0,
// the data-length field exact, packets to the end) re-encodes to the same
// bytes.
func FuzzWirefoxDatagram(f *testing.F) {
	_, wires, _ := allDatagrams(f)
	for _, w := range wires {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		IsOpening(b)
		var d Datagram
		if err := ParseDatagram(b, &d); err != nil {
			require.ErrorIs(t, err, engine.ErrMalformed)
			return
		}
		canonical := b[0]&0x0F == 0 && d.HeaderLen()+len(d.Data) == len(b) && (d.Flags&FlagDAT == 0 || int(d.DataLen) == len(d.Data))
		out := AppendDatagram(nil, &Datagram{Flags: d.Flags, ID: d.ID, Acks: d.Acks, Naks: d.Naks, DataLen: d.DataLen})
		for rest := d.Data; len(rest) > 0; {
			var p Packet
			n, err := ParsePacket(rest, &p)
			if err != nil {
				require.ErrorIs(t, err, engine.ErrMalformed)
				return
			}
			require.Positive(t, n)
			canonical = canonical && rest[0]&0x3F == 0 &&
				(p.Flags&PacketBIG != 0 || len(p.Body) <= 0xFFFF && p.Offset <= 0xFFFF)
			var h Handshake
			if ParseHandshake(p.Body, &h) == nil {
				require.Equal(t, p.Body, AppendHandshake(nil, &h))
			}
			out = AppendPacket(out, &p)
			rest = rest[n:]
		}
		if canonical {
			require.True(t, bytes.Equal(b, out))
		}
	})
}
