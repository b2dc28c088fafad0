package lludp

import (
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// testdata/lludp.json holds the bytes the reference produced: zerocode
// cases and datagrams with their full decodes, each attributed to the
// viewer, Hippolyzer, LibreMetaverse or OpenSim.

type vecFile struct {
	Zerocode []vecZerocode `json:"zerocode"`
	Packets  []vecPacket   `json:"packets"`
}

type vecZerocode struct {
	Name       string `json:"name"`
	Kind       string `json:"kind"`
	Decoded    string `json:"decoded"`
	Encoded    string `json:"encoded"`
	DecodedLen int    `json:"decoded_len"`
	EncodedLen int    `json:"encoded_len"`
	Keeps      *bool  `json:"sender_keeps_zerocoded_form"`
}

type vecPacket struct {
	Name   string `json:"name"`
	Hex    string `json:"hex"`
	Length int    `json:"length"`
	Decode struct {
		Flags        string   `json:"flags"`
		Reliable     bool     `json:"reliable"`
		Resent       bool     `json:"resent"`
		Zerocoded    bool     `json:"zerocoded"`
		AppendedAcks bool     `json:"appended_acks"`
		Seq          uint32   `json:"seq"`
		Extra        string   `json:"extra"`
		Frequency    string   `json:"frequency"`
		NumberHex    string   `json:"number_hex"`
		Acks         []uint32 `json:"acks_wire_order"`
		PayloadLen   int      `json:"decoded_payload_len"`
		Blocks       struct {
			Packets []struct {
				ID uint32 `json:"ID"`
			} `json:"Packets"`
			PingID []struct {
				PingID        uint8  `json:"PingID"`
				OldestUnacked uint32 `json:"OldestUnacked"`
			} `json:"PingID"`
			CircuitCode []struct {
				Code      uint32 `json:"Code"`
				SessionID string `json:"SessionID"`
				ID        string `json:"ID"`
			} `json:"CircuitCode"`
		} `json:"blocks"`
	} `json:"decode"`
}

// unhex decodes a vector's hexadecimal bytes.
var unhex = enginetest.Unhex

func loadVectors(t testing.TB) *vecFile {
	t.Helper()
	v := enginetest.LoadJSON[vecFile](t, "testdata/lludp.json")
	require.Len(t, v.Zerocode, 12)
	require.Len(t, v.Packets, 15)
	return v
}

func TestZerocodeVectors(t *testing.T) {
	for _, c := range loadVectors(t).Zerocode {
		dec, enc := unhex(t, c.Decoded), unhex(t, c.Encoded)
		require.Len(t, dec, c.DecodedLen, c.Name)
		require.Len(t, enc, c.EncodedLen, c.Name)
		got, err := ZeroDecode(nil, enc)
		require.NoError(t, err, c.Name)
		require.Equal(t, dec, got, c.Name)
		switch c.Kind {
		case "encode+decode":
			require.NotNil(t, c.Keeps, c.Name)
			require.Equal(t, enc, ZeroEncode(nil, dec), c.Name)
			// The keep/clear decision, through AppendPacket: the
			// region is the decoded bytes when they start with a
			// complete message number.
			require.Equal(t, *c.Keeps, len(enc) < len(dec), c.Name)
			if n, l := ParseNumber(dec); l > 0 {
				p := Packet{Flags: FlagZerocoded, Seq: 1, Message: n, Body: dec[l:]}
				wire := AppendPacket(nil, &p)
				require.Equal(t, *c.Keeps, wire[0]&FlagZerocoded != 0, c.Name)
				if *c.Keeps {
					require.Equal(t, enc, wire[HeaderLen:], c.Name)
				} else {
					require.Equal(t, dec, wire[HeaderLen:], c.Name)
				}
			}
		case "decode-only":
			require.Nil(t, c.Keeps, c.Name)
			// Re-encoding gives the canonical form, which never
			// contains 00 00.
			re := ZeroEncode(nil, dec)
			require.NotContains(t, hex.EncodeToString(re), "0000", c.Name)
			back, err := ZeroDecode(nil, re)
			require.NoError(t, err, c.Name)
			require.Equal(t, dec, back, c.Name)
		default:
			t.Fatalf("%s: unknown kind %q", c.Name, c.Kind)
		}
	}
}

func TestPacketVectors(t *testing.T) {
	var p Packet
	scratch := make([]byte, 0, MaxDecoded)
	for _, v := range loadVectors(t).Packets {
		wire := unhex(t, v.Hex)
		require.Len(t, wire, v.Length, v.Name)
		require.NoError(t, ParsePacket(wire, &p, scratch), v.Name)
		d := v.Decode
		flags, err := strconv.ParseUint(d.Flags, 0, 8)
		require.NoError(t, err)
		require.Equal(t, byte(flags), p.Flags, v.Name)
		require.Equal(t, d.Reliable, p.Flags&FlagReliable != 0, v.Name)
		require.Equal(t, d.Resent, p.Flags&FlagResent != 0, v.Name)
		require.Equal(t, d.Zerocoded, p.Flags&FlagZerocoded != 0, v.Name)
		require.Equal(t, d.AppendedAcks, p.Flags&FlagAppendedAcks != 0, v.Name)
		require.Equal(t, d.Seq, p.Seq, v.Name)
		require.Equal(t, d.Extra, hex.EncodeToString(p.Extra), v.Name)
		num, err := strconv.ParseUint(d.NumberHex, 0, 32)
		require.NoError(t, err)
		require.Equal(t, uint32(num), p.Message, v.Name)
		require.Equal(t, d.Frequency, frequency(p.Message), v.Name)
		if len(d.Acks) == 0 {
			require.Empty(t, p.Acks, v.Name)
		} else {
			require.Equal(t, d.Acks, p.Acks, v.Name)
		}
		require.Equal(t, d.PayloadLen, NumberLen(p.Message)+len(p.Extra)+len(p.Body), v.Name)

		switch p.Message {
		case PacketAck:
			require.Equal(t, byte(len(d.Blocks.Packets)), p.Body[0], v.Name)
			for i, b := range d.Blocks.Packets {
				require.Equal(t, b.ID, uint32(p.Body[1+4*i])|uint32(p.Body[2+4*i])<<8|uint32(p.Body[3+4*i])<<16|uint32(p.Body[4+4*i])<<24, v.Name)
			}
		case StartPingCheck:
			require.Equal(t, []byte{d.Blocks.PingID[0].PingID, byte(d.Blocks.PingID[0].OldestUnacked), 0, 0, 0}, p.Body, v.Name)
		case CompletePingCheck:
			require.Equal(t, []byte{d.Blocks.PingID[0].PingID}, p.Body, v.Name)
		case UseCircuitCode:
			c, ok := parseCircuit(p.Body)
			require.True(t, ok)
			want := d.Blocks.CircuitCode[0]
			require.Equal(t, want.Code, c.Code, v.Name)
			require.Equal(t, want.SessionID, hex.EncodeToString(c.SessionID[:]), v.Name)
			require.Equal(t, want.ID, hex.EncodeToString(c.AgentID[:]), v.Name)
			require.Equal(t, p.Body, appendCircuit(nil, c), v.Name)
		case CloseCircuit:
			require.Empty(t, p.Body, v.Name)
		}

		// Re-encoding gives the same bytes.
		require.Equal(t, v.Hex, hex.EncodeToString(AppendPacket(nil, &p)), v.Name)
	}
}

// TestPacketVectorsThroughSession feeds every vector to a server whose
// circuit is open and checks what is delivered: unknown and ordinary
// messages reach Recv with their number, transport messages never do.
func TestPacketVectorsThroughSession(t *testing.T) {
	for _, v := range loadVectors(t).Packets {
		s := openServer(t)
		var p Packet
		wire := unhex(t, v.Hex)
		require.NoError(t, ParsePacket(wire, &p, nil))
		if p.Message == CloseCircuit {
			require.NoError(t, s.HandleDatagram(t0, wire))
			require.Equal(t, uint64(1), s.Stats().Challenges, "%s: challenged before it is taken", v.Name)
			continue
		}
		require.NoError(t, s.HandleDatagram(t0, wire), v.Name)
		m, ok := s.Recv()
		if transport(p.Message) {
			require.False(t, ok, v.Name)
			continue
		}
		require.True(t, ok, v.Name)
		require.Equal(t, engine.Message{Data: p.Body, Reliable: p.Flags&FlagReliable != 0, MessageNumber: p.Message}, m, v.Name)
	}
}

// frequency names the frequency of message number n.
func frequency(n uint32) string {
	switch NumberLen(n) {
	case 1:
		return "High"
	case 2:
		return "Medium"
	case 4:
		if n >= 0xFFFFFFFA {
			return "Fixed"
		}
		return "Low"
	}
	return "none"
}
