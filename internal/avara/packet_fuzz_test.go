package avara

import (
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// FuzzAvaraDatagram checks that ParseDatagram never panics, refuses only
// with ErrPunch or an error wrapping engine.ErrMalformed, and that what it
// accepts re-encodes to a datagram that parses to the same fields and
// encodes to the same bytes again.
func FuzzAvaraDatagram(f *testing.F) {
	for _, h := range allVectorHex(loadVectors(f)) {
		f.Add(unhex(f, h))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 2 {
			seal(b, DefaultVersion) // most inputs would fail the checksum
		}
		var d Datagram
		if err := ParseDatagram(b, &d, DefaultVersion); err != nil {
			if err != ErrPunch {
				require.ErrorIs(t, err, engine.ErrMalformed)
			}
			return
		}
		wire := AppendDatagram(nil, &d, DefaultVersion)
		require.LessOrEqual(t, len(wire), len(b), "the narrowest forms are never longer")
		var e Datagram
		require.NoError(t, ParseDatagram(wire, &e, DefaultVersion))
		require.Equal(t, d.Ack, e.Ack)
		require.Equal(t, d.HasAckMap, e.HasAckMap)
		require.Equal(t, d.AckMap, e.AckMap)
		require.Len(t, e.Messages, len(d.Messages))
		for i := range d.Messages {
			m, n := d.Messages[i], e.Messages[i]
			require.Equal(t, len(m.Data), len(n.Data))
			if len(m.Data) > 0 {
				require.Equal(t, m.Data, n.Data)
			}
			m.Data, n.Data = nil, nil
			require.Equal(t, m, n)
		}
		require.Equal(t, wire, AppendDatagram(nil, &e, DefaultVersion))
	})
}
