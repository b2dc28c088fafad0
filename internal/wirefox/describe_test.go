package wirefox

import (
	"testing"

	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

// TestDescribeVectors checks that every captured plaintext datagram
// describes without error, with the packets the codec finds, and that
// the encrypted ones are described as sealed.
func TestDescribeVectors(t *testing.T) {
	v := loadVectors(t)
	all := append([]vecDatagram{}, v.Vectors...)
	for _, c := range v.Captures {
		all = append(all, c.Datagrams...)
	}
	for _, vd := range all {
		b := unhex(t, vd.Hex)
		d := Describe(b)
		require.NoError(t, d.Err, vd.Hex)
		require.NotEqual(t, "sealed", d.Type, vd.Hex)
		require.Len(t, d.Frames, len(vd.Decoded.Packets), vd.Hex)
		for i, p := range vd.Decoded.Packets {
			require.Equal(t, p.ID, d.Frames[i].Fields[0].Value, vd.Hex)
		}
	}
	sealed := 0
	for _, ds := range loadCrypto(t).Datagrams {
		for _, cd := range ds {
			d := Describe(unhex(t, cd.Wire))
			require.NoError(t, d.Err, cd.Wire)
			if cd.Encrypted {
				sealed++
				require.Equal(t, "sealed", d.Type, cd.Wire)
				require.Equal(t, []trace.Field{{Name: "length", Value: len(cd.Wire) / 2}}, d.Fields)
			} else {
				require.Len(t, d.Frames, len(cd.Decoded.Packets), cd.Wire)
			}
		}
	}
	require.NotZero(t, sealed)
}

func TestDescribeExact(t *testing.T) {
	// W1: INITIAL_CLIENT.
	require.Equal(t, trace.Datagram{
		Protocol: "wirefox", Type: "out_of_band",
		Fields: []trace.Field{
			{Name: "flags", Value: "DAT"},
			{Name: "datagram_id", Value: uint32(0)},
			{Name: "data_length", Value: uint16(30)},
		},
		Frames: []trace.Frame{{Type: "connect_attempt", Fields: []trace.Field{
			{Name: "packet_id", Value: uint32(0)},
			{Name: "flags", Value: ""},
			{Name: "options", Value: ""},
			{Name: "channel", Value: uint8(0)},
			{Name: "offset", Value: uint32(0)},
			{Name: "command", Value: uint8(2)},
			{Name: "length", Value: 19},
			{Name: "data_prefix", Value: unhex(t, "0257495245464f58003efe7d4f2231ac")},
			{Name: "protocol_version", Value: uint8(0)},
			{Name: "peer_id", Value: uint64(0x3efe7d4f2231ac25)},
			{Name: "opcode", Value: "initial_client"},
		}}},
	}, Describe(unhex(t, "8000000000001e00000000000000001300000257495245464f58003efe7d4f2231ac250100")))

	// W6: acks 8, 9, 10 and nak 7.
	require.Equal(t, trace.Datagram{
		Protocol: "wirefox", Type: "ack",
		Fields: []trace.Field{
			{Name: "flags", Value: "LNK|ACK|NAK"},
			{Name: "datagram_id", Value: uint32(9)},
			{Name: "acks", Value: []uint32{8, 9, 10}},
			{Name: "naks", Value: []uint32{7}},
		},
	}, Describe(unhex(t, "70000000090200000008000000090000000a0000000007")))

	// W7a: DISCONNECT_REQUEST, reliable, channel 0.
	require.Equal(t, trace.Datagram{
		Protocol: "wirefox", Type: "data",
		Fields: []trace.Field{
			{Name: "flags", Value: "DAT|LNK"},
			{Name: "datagram_id", Value: uint32(1)},
			{Name: "data_length", Value: uint16(12)},
		},
		Frames: []trace.Frame{{Type: "disconnect_request", Fields: []trace.Field{
			{Name: "packet_id", Value: uint32(3)},
			{Name: "flags", Value: ""},
			{Name: "options", Value: "reliable"},
			{Name: "channel", Value: uint8(0)},
			{Name: "offset", Value: uint32(0)},
			{Name: "command", Value: uint8(3)},
			{Name: "length", Value: 1},
			{Name: "data_prefix", Value: []byte{3}},
		}}},
	}, Describe(unhex(t, "c000000001000c000000000301000001000003")))

	// Two packets on channel 1, the second a later segment.
	b := AppendDatagram(nil, &Datagram{Flags: FlagDAT | FlagLNK, ID: 4})
	b = AppendPacket(b, &Packet{ID: 5, Options: OptReliable, Channel: 1, Seq: 6, Body: []byte{16, 1, 2}})
	b = AppendPacket(b, &Packet{ID: 6, Channel: 1, Seq: 7, Offset: 3, Container: 8, Index: 1, Body: []byte{4}})
	require.Equal(t, []trace.Frame{
		{Type: "user", Fields: []trace.Field{
			{Name: "packet_id", Value: uint32(5)},
			{Name: "flags", Value: ""},
			{Name: "options", Value: "reliable"},
			{Name: "channel", Value: uint8(1)},
			{Name: "sequence", Value: uint32(6)},
			{Name: "offset", Value: uint32(0)},
			{Name: "command", Value: uint8(16)},
			{Name: "length", Value: 3},
			{Name: "data_prefix", Value: []byte{16, 1, 2}},
		}},
		{Type: "segment", Fields: []trace.Field{
			{Name: "packet_id", Value: uint32(6)},
			{Name: "flags", Value: ""},
			{Name: "options", Value: ""},
			{Name: "channel", Value: uint8(1)},
			{Name: "sequence", Value: uint32(7)},
			{Name: "offset", Value: uint32(3)},
			{Name: "split_container", Value: uint32(8)},
			{Name: "split_index", Value: uint32(1)},
			{Name: "length", Value: 1},
			{Name: "data_prefix", Value: []byte{4}},
		}},
	}, Describe(b).Frames)
}

func TestDescribeMalformed(t *testing.T) {
	// LNK|DAT with a packet cut short: the first packet is kept.
	b := AppendDatagram(nil, &Datagram{Flags: FlagDAT | FlagLNK, ID: 4})
	b = AppendPacket(b, &Packet{ID: 5, Body: []byte{16}})
	b = append(b, 0, 0, 0, 0, 6, 0, 0, 0, 9)
	d := Describe(b)
	require.ErrorIs(t, d.Err, errShortPacket)
	require.Equal(t, "data", d.Type)
	require.Len(t, d.Frames, 1)

	require.Equal(t, trace.Datagram{Protocol: "wirefox", Err: errViolation}, Describe([]byte{0x40, 0, 0, 0, 1}))
	require.Equal(t, trace.Datagram{Protocol: "wirefox", Err: errShortHeader}, Describe(nil))

	// Too long for a plaintext failure: sealed.
	long := make([]byte, minSealed)
	require.Equal(t, trace.Datagram{Protocol: "wirefox", Type: "sealed", Fields: []trace.Field{{Name: "length", Value: minSealed}}}, Describe(long))
}

// FuzzDescribe checks that Describe never panics and agrees with
// ParseDatagram.
func FuzzDescribe(f *testing.F) {
	v := loadVectors(f)
	for _, vd := range v.Vectors {
		f.Add(unhex(f, vd.Hex))
	}
	for _, c := range v.Captures {
		for _, vd := range c.Datagrams {
			f.Add(unhex(f, vd.Hex))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Describe(b)
		var dg Datagram
		if err := ParseDatagram(b, &dg); err != nil && d.Type != "sealed" {
			require.Equal(t, err, d.Err)
		}
		if d.Type == "sealed" {
			require.NoError(t, d.Err)
			require.GreaterOrEqual(t, len(b), minSealed)
		}
	})
}
