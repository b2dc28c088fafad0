package porous

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// The vector file is a copy of /work/shared/vectors/porous.json: two
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

func loadVectors(t testing.TB) *vecFile {
	t.Helper()
	b, err := os.ReadFile("testdata/porous.json")
	require.NoError(t, err)
	var v vecFile
	require.NoError(t, json.Unmarshal(b, &v))
	require.Len(t, v.Captures, 2)
	return &v
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

func hex32(t testing.TB, s string) uint32 {
	t.Helper()
	v, err := strconv.ParseUint(s, 16, 32)
	require.NoError(t, err)
	return uint32(v)
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

func TestDecodeStrict(t *testing.T) {
	good := allVectorFrames(t)
	for _, tc := range []struct {
		name string
		hex  string
	}{
		{"empty", ""},
		{"unknown frame type", "08"},
		{"connect short", "00000105f5e100d43080"},
		{"connect long", "00000105f5e100d430804d00"},
		{"connectack short", "01d43080"},
		{"disconnect long", "0200"},
		{"disconnectack long", "0300"},
		{"ping short", "0400"},
		{"pingack long", "05000000"},
		{"data header short", "0605f615e700"},
		{"data missing message", "0605f615e70001"},
		{"data truncated fragment header", "0605f615e700010000000000000000000000"},
		{"data truncated fragment data", "0605f615e70001000000000000000000000000085200000000000607"[:len("0605f615e70001000000000000000000000000085200000000000607")-2]},
		{"data trailing byte", "0605f615e70001020000000100"},
		{"data unknown message type", "0605f615e700010300000001"},
		{"data truncated sentinel", "0605f615e7000101000000010000"[:24]},
		{"data count too large", "0605f615e7ffff"},
		{"dataack short", "0700"},
		{"dataack count mismatch", "07000205f615e7"},
		{"dataack trailing", "07000105f615e700"},
	} {
		var f Frame
		err := Decode(unhex(t, tc.hex), &f)
		require.ErrorIs(t, err, engine.ErrMalformed, tc.name)
	}
	long := make([]byte, MaxFrameSize+1)
	long[0] = byte(FrameDisconnect)
	var f Frame
	require.ErrorIs(t, Decode(long, &f), engine.ErrMalformed)
	require.NotEmpty(t, good)

	// Legal edge cases: a sentinel frame, a DataAck with count 0, a
	// WindowAck and a Sentinel.
	for _, h := range []string{
		"0605f615e70000",
		"070000",
		"0605f615e7000202010007ff01000000ff0003",
	} {
		require.NoError(t, Decode(unhex(t, h), &f), h)
		require.Equal(t, h, hex.EncodeToString(f.AppendTo(nil)))
	}
	require.NoError(t, Decode(unhex(t, "0605f615e7000202010007ff01000000ff0003"), &f))
	require.Equal(t, []Message{
		{Type: MsgWindowAck, Channel: 1, PacketSeq: 0x0007ff},
		{Type: MsgSentinel, Channel: 0, PacketSeq: 0x0000ff, DependentLead: 3},
	}, f.Messages)
}
