package porous

import (
	"encoding/hex"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// testdata/porous.json holds the bytes the reference produced: two
// captures between instances of the reference, lowquark/uflow @ dde0da6.

type vecFile struct {
	Captures []vecCapture `json:"captures"`
}

type vecCapture struct {
	Name   string     `json:"name"`
	Frames []vecFrame `json:"frames"`
}

type vecFrame struct {
	Time      float64    `json:"time"`
	Direction string     `json:"direction"`
	Length    int        `json:"length"`
	Hex       string     `json:"hex"`
	Decoded   vecDecoded `json:"decoded"`
}

type vecDecoded struct {
	Type           string       `json:"type"`
	Version        int          `json:"version"`
	ChannelsMinus1 int          `json:"num_channels_minus_1"`
	Channels       int          `json:"num_channels"`
	MaxRxBandwidth uint32       `json:"max_rx_bandwidth"`
	Nonce          string       `json:"nonce"`
	PingID         int          `json:"ping_id"`
	FrameSeq       string       `json:"frame_seq"`
	MsgCount       int          `json:"msg_count"`
	Messages       []vecMessage `json:"messages"`
	Count          int          `json:"count"`
	FrameSeqs      []string     `json:"frame_seqs"`
}

type vecMessage struct {
	Msg            string `json:"msg"`
	Channel        int    `json:"channel"`
	PacketSeq      int    `json:"packet_seq"`
	DependentLead  int    `json:"dependent_lead"`
	FragmentID     int    `json:"fragment_id"`
	LastFragmentID int    `json:"last_fragment_id"`
	Len            int    `json:"len"`
	DataOffset     int    `json:"data_offset"`
	Data           string `json:"data"`
	DataHead       string `json:"data_head"`
}

// unhex decodes a vector's hexadecimal bytes.
var unhex = enginetest.Unhex

func loadVectors(t testing.TB) *vecFile {
	t.Helper()
	v := enginetest.LoadJSON[vecFile](t, "testdata/porous.json")
	require.Len(t, v.Captures, 2)
	return v
}

func hex32(t testing.TB, s string) uint32 {
	t.Helper()
	return uint32(enginetest.ParseUint(t, s, 16, 32))
}

// allVectorFrames returns the bytes of every captured frame.
func allVectorFrames(t testing.TB) [][]byte {
	var out [][]byte
	for _, c := range loadVectors(t).Captures {
		for _, f := range c.Frames {
			out = append(out, unhex(t, f.Hex))
		}
	}
	return out
}

func TestVectorsDecode(t *testing.T) {
	v := loadVectors(t)
	total := 0
	for _, c := range v.Captures {
		for i, vf := range c.Frames {
			wire := unhex(t, vf.Hex)
			require.Len(t, wire, vf.Length, "%s #%d", c.Name, i)
			var f Frame
			require.NoError(t, Decode(wire, &f), "%s #%d", c.Name, i)
			d := vf.Decoded
			require.Equal(t, d.Type, f.Type.String(), "%s #%d", c.Name, i)
			switch f.Type {
			case FrameConnect:
				require.Equal(t, d.Version, int(f.Version))
				require.Equal(t, d.Channels, f.Channels)
				require.Equal(t, d.ChannelsMinus1+1, f.Channels)
				require.Equal(t, d.MaxRxBandwidth, f.MaxRxBandwidth)
				require.Equal(t, hex32(t, d.Nonce), f.Nonce)
			case FrameConnectAck:
				require.Equal(t, hex32(t, d.Nonce), f.Nonce)
			case FramePing, FramePingAck:
				require.Equal(t, d.PingID, int(f.PingID))
			case FrameData:
				require.Equal(t, hex32(t, d.FrameSeq), f.Seq)
				require.Len(t, f.Messages, d.MsgCount)
				for j, vm := range d.Messages {
					m := f.Messages[j]
					require.Equal(t, vm.Msg, m.Type.String(), "%s #%d msg %d", c.Name, i, j)
					require.Equal(t, vm.Channel, int(m.Channel))
					require.Equal(t, vm.PacketSeq, int(m.PacketSeq))
					require.Equal(t, vm.DependentLead, int(m.DependentLead))
					require.Equal(t, vm.FragmentID, int(m.FragmentID))
					require.Equal(t, vm.LastFragmentID, int(m.LastFragmentID))
					require.Len(t, m.Data, vm.Len)
					require.Equal(t, wire[vm.DataOffset:vm.DataOffset+vm.Len], m.Data)
					if vm.Data != "" {
						require.Equal(t, vm.Data, hex.EncodeToString(m.Data))
					}
					if vm.DataHead != "" {
						require.Equal(t, vm.DataHead, hex.EncodeToString(m.Data[:len(vm.DataHead)/2]))
					}
				}
			case FrameDataAck:
				require.Equal(t, d.Count, len(f.Acks))
				for j, s := range d.FrameSeqs {
					require.Equal(t, hex32(t, s), f.Acks[j])
				}
			}
			require.Equal(t, len(wire), f.Len())
			require.Equal(t, wire, f.AppendTo(nil), "%s #%d re-encodes byte for byte", c.Name, i)
			total++
		}
	}
	require.Equal(t, 46, total)
}

// TestDecodeStrict: frames decode to exactly their fields and re-encode
// byte for byte; each malformed frame, most a one-byte change of a good
// one, is refused with the error that names its fault, wrapping
// engine.ErrMalformed (docs/protocols/porous.md §1: fixed-size frames have exactly their
// size, a Data frame exactly msg_count well-formed messages, a DataAck
// exactly 3 + 4·count bytes).
func TestDecodeStrict(t *testing.T) {
	const fragment = "0605f615e70001" + "00" + "00" + "000000" + "0000" + "0000" + "0000" + "0008" + "5200000000000607"
	for _, tc := range []struct {
		hex  string
		want Frame
	}{
		{"00000105f5e100d430804d", Frame{Type: FrameConnect, Version: 0, Channels: 2, MaxRxBandwidth: 100_000_000, Nonce: 0xd430804d}},
		{"01d430804d", Frame{Type: FrameConnectAck, Nonce: 0xd430804d}},
		{"02", Frame{Type: FrameDisconnect}},
		{"03", Frame{Type: FrameDisconnectAck}},
		{"040007", Frame{Type: FramePing, PingID: 7}},
		{"05fffe", Frame{Type: FramePingAck, PingID: 0xfffe}},
		{fragment, Frame{Type: FrameData, Seq: 0x05f615e7, Messages: []Message{
			{Type: MsgFragment, Data: []byte{0x52, 0, 0, 0, 0, 0, 6, 7}},
		}}},
		{"0605f615e70000", Frame{Type: FrameData, Seq: 0x05f615e7}}, // a sentinel frame
		{"0605f615e7000202010007ff01000000ff0003", Frame{Type: FrameData, Seq: 0x05f615e7, Messages: []Message{
			{Type: MsgWindowAck, Channel: 1, PacketSeq: 0x0007ff},
			{Type: MsgSentinel, Channel: 0, PacketSeq: 0x0000ff, DependentLead: 3},
		}}},
		{"070000", Frame{Type: FrameDataAck}},
		{"07000205f615e7ffffffff", Frame{Type: FrameDataAck, Acks: []uint32{0x05f615e7, 0xffffffff}}},
	} {
		var f Frame
		require.NoError(t, Decode(unhex(t, tc.hex), &f), tc.hex)
		require.Equal(t, tc.want, f, tc.hex)
		require.Equal(t, tc.hex, hex.EncodeToString(f.AppendTo(nil)))
	}

	long := make([]byte, MaxFrameSize+1)
	long[0] = byte(FrameDisconnect)
	for _, tc := range []struct {
		name string
		hex  string
		want error
	}{
		{"empty", "", errEmpty},
		{"too long", hex.EncodeToString(long), errTooLong},
		{"unknown frame type", "08", errFrameType},
		{"connect short", "00000105f5e100d43080", errFrameSize},
		{"connect long", "00000105f5e100d430804d00", errFrameSize},
		{"connectack short", "01d43080", errFrameSize},
		{"disconnect long", "0200", errFrameSize},
		{"disconnectack long", "0300", errFrameSize},
		{"ping short", "0400", errFrameSize},
		{"pingack long", "05000000", errFrameSize},
		{"data header short", "0605f615e700", errDataHeader},
		{"data count beyond the datagram", "0605f615e70001", errTooManyMessage},
		{"data count too large", "0605f615e7ffff", errTooManyMessage},
		{"data message cut before its channel", "0605f615e70002" + "00000000000000000000000000" + "00", errMessageHeader},
		{"data truncated fragment header", "0605f615e70001" + "0000000000000000000000", errFragmentHeader},
		{"data truncated fragment data", fragment[:len(fragment)-2], errFragmentData},
		{"data truncated sentinel", "0605f615e70001" + "0100000001" + "00", errSentinelSize},
		{"data truncated windowack", "0605f615e70002" + "01000000010000" + "020000", errWindowAckSize},
		{"data unknown message type", "0605f615e70001" + "0300000001", errMessageType},
		{"data trailing byte", "0605f615e70001" + "0200000001" + "00", errTrailing},
		{"dataack short", "0700", errDataAckHeader},
		{"dataack count mismatch", "07000205f615e7", errDataAckSize},
		{"dataack trailing", "07000105f615e700", errDataAckSize},
	} {
		var f Frame
		err := Decode(unhex(t, tc.hex), &f)
		require.Equal(t, tc.want, err, tc.name)
		require.ErrorIs(t, err, engine.ErrMalformed, tc.name)
	}
}
