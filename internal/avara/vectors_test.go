package avara

import (
	"encoding/hex"
	"testing"

	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// testdata/avara.json holds four datagrams laid out as the reference
// writes them, with full decodes, and CRC-16/KERMIT check values.

type vecFile struct {
	CRC struct {
		Checks []struct {
			Input string `json:"input"`
			Hex   string `json:"input_hex"`
			CRC   string `json:"crc16"`
		} `json:"check_values"`
	} `json:"crc"`
	Vectors []vecDatagram `json:"vectors"`
}

type vecDatagram struct {
	ID      string `json:"id"`
	Hex     string `json:"hex"`
	Length  int    `json:"length"`
	Decoded struct {
		AckField   uint16   `json:"ack_field"`
		LRS        uint16   `json:"last_received_serial"`
		HasAckMap  bool     `json:"ackmap_present"`
		AckMap     string   `json:"ackmap"`
		MapSerials []uint16 `json:"ackmap_serials"`
		Messages   []struct {
			Serial       uint16 `json:"serial"`
			SendCount    uint8  `json:"send_count"`
			Flags        string `json:"flags"`
			Command      int8   `json:"command"`
			Distribution *int16 `json:"distribution"`
			P3           int32  `json:"p3"`
			P2           int16  `json:"p2"`
			DataLen      int    `json:"data_len"`
			P1           int8   `json:"p1"`
			Sender       *int8  `json:"sender"`
			Data         string `json:"data"`
		} `json:"messages"`
	} `json:"decoded"`
}

// unhex decodes a vector's hexadecimal bytes.
var unhex = enginetest.Unhex

func loadVectors(t testing.TB) *vecFile {
	t.Helper()
	v := enginetest.LoadJSON[vecFile](t, "testdata/avara.json")
	require.Len(t, v.Vectors, 4)
	require.Len(t, v.CRC.Checks, 9)
	return v
}

// allVectorHex returns every datagram of the vector file.
func allVectorHex(v *vecFile) []string {
	var out []string
	for _, d := range v.Vectors {
		out = append(out, d.Hex)
	}
	return out
}

// TestCRCCheckValues: the checksum is CRC-16/KERMIT (check value 0x2189),
// and over each vector with the version in bytes 0–1 it is what the
// vector carries.
func TestCRCCheckValues(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.CRC.Checks {
		in := unhex(t, c.Hex)
		want := uint16(enginetest.ParseUint(t, c.CRC, 0, 32))
		if len(in) >= 2 && in[0] == 0x12 && in[1] == 0x00 {
			require.Equal(t, want, Checksum(in, DefaultVersion), c.Input)
		}
		require.Equal(t, want, kermit(in), c.Input)
	}
	require.Equal(t, uint16(0x2189), kermit([]byte("123456789")))
}

// kermit is the plain CRC-16/KERMIT of b through Checksum: with an
// initial value of 0, leading zero bytes leave the CRC at 0, so the CRC
// of b is that of two zero bytes (the version 0) followed by b.
func kermit(b []byte) uint16 { return Checksum(append([]byte{0, 0}, b...), 0) }

// TestVectors: every vector decodes to the fields its decode lists and
// re-encodes byte for byte.
func TestVectors(t *testing.T) {
	for _, vec := range loadVectors(t).Vectors {
		t.Run(vec.ID, func(t *testing.T) {
			wire := unhex(t, vec.Hex)
			require.Len(t, wire, vec.Length)
			var d Datagram
			require.NoError(t, ParseDatagram(wire, &d, DefaultVersion))
			dec := vec.Decoded
			require.Equal(t, dec.LRS, d.Ack)
			require.Equal(t, dec.HasAckMap, d.HasAckMap)
			if dec.HasAckMap {
				require.Equal(t, uint32(enginetest.ParseUint(t, dec.AckMap, 0, 32)), d.AckMap)
				var serials []uint16
				for k := range 32 {
					if d.AckMap&(1<<k) != 0 {
						serials = append(serials, d.Ack+2*uint16(k+1))
					}
				}
				require.Equal(t, dec.MapSerials, serials)
			}
			require.Len(t, d.Messages, len(dec.Messages))
			for i, w := range dec.Messages {
				m := d.Messages[i]
				require.Equal(t, w.Serial, m.Serial)
				require.Equal(t, w.SendCount, m.SendCount)
				require.Equal(t, uint64(wire[HeaderLen+4*boolInt(d.HasAckMap)+offset(d.Messages[:i])+3]), enginetest.ParseUint(t, w.Flags, 0, 32))
				require.Equal(t, w.Command, m.Command)
				require.Equal(t, w.Distribution != nil, m.HasDistribution)
				if w.Distribution != nil {
					require.Equal(t, *w.Distribution, m.Distribution)
				}
				require.Equal(t, w.P3, m.P3)
				require.Equal(t, w.P2, m.P2)
				require.Equal(t, w.P1, m.P1)
				require.Equal(t, w.DataLen, len(m.Data))
				require.Equal(t, w.Data, hex.EncodeToString(m.Data))
				require.Equal(t, w.Sender != nil, m.HasSender)
				if w.Sender != nil {
					require.Equal(t, *w.Sender, m.Sender)
				}
			}
			require.Equal(t, vec.Hex, hex.EncodeToString(AppendDatagram(nil, &d, DefaultVersion)))
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// offset is the encoded length of ms.
func offset(ms []Message) int {
	n := 0
	for i := range ms {
		n += MessageLen(&ms[i])
	}
	return n
}
