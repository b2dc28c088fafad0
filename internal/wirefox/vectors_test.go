package wirefox

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// testdata/wirefox.json holds datagrams captured between two instances of
// the reference (iridinite/wirefox at 0897fcf) with their decodes:
// annotated vectors W1..W10 and complete captures. testdata/wirefox-crypto.json
// holds two encrypted sessions with their plaintexts, whose handshakes
// include the AUTH_MSG messages.
//
// The file's vector W7b is titled DISCONNECT_ACK but repeats W5's bytes
// (an ack-only datagram) and decodes as such; the real DISCONNECT_ACK is
// in the captures (ordered #7, as in docs/protocols/wirefox.md §1.8) and
// is checked by TestDisconnectAckBytes.

type vecFile struct {
	Vectors  []vecDatagram `json:"vectors"`
	Captures []struct {
		Name      string        `json:"name"`
		Datagrams []vecDatagram `json:"datagrams"`
	} `json:"captures"`
}

type vecDatagram struct {
	ID      string  `json:"id"`
	Title   string  `json:"title"`
	Hex     string  `json:"hex"`
	Length  int     `json:"length"`
	Decoded vecDecl `json:"decoded"`
}

type vecDecl struct {
	Flags     string      `json:"flags"`
	ID        uint32      `json:"datagram_id"`
	DataLen   *uint16     `json:"data_length_field"`
	HeaderLen int         `json:"header_length"`
	Following int         `json:"data_bytes_following"`
	Acks      []uint32    `json:"acks"`
	Naks      []uint32    `json:"naks"`
	Packets   []vecPacket `json:"packets"`
}

type vecPacket struct {
	Flags     string  `json:"flags"`
	ID        uint32  `json:"packet_id"`
	Options   uint8   `json:"options"`
	Channel   uint8   `json:"channel"`
	Seq       *uint32 `json:"sequence"`
	Length    int     `json:"length"`
	Offset    uint32  `json:"offset"`
	Container *uint32 `json:"split_container"`
	Index     *uint32 `json:"split_index"`
	Command   *uint8  `json:"command"`
	Payload   *string `json:"payload"`
	Connect   *struct {
		Version uint8  `json:"protocol_version"`
		PeerID  string `json:"peer_id"`
		Opcode  uint8  `json:"opcode"`
		Crypto  string `json:"crypto_flag_byte"`
		State   *uint8 `json:"auth_state"`
		KX      string `json:"kx_public_key"`
	} `json:"connect_attempt"`
}

type cryptoFile struct {
	Keys      map[string]cryptoKeys `json:"keys"`
	Datagrams map[string][]struct {
		Index     int     `json:"index"`
		Direction string  `json:"direction"`
		Encrypted bool    `json:"encrypted"`
		Wire      string  `json:"wire"`
		Plaintext string  `json:"plaintext"`
		Decoded   vecDecl `json:"decoded"`
	} `json:"datagrams"`
}

type cryptoKeys struct {
	Client, Server struct {
		KXPublic  string `json:"kx_public"`
		KXSecret  string `json:"kx_secret"`
		SessionRx string `json:"session_rx"`
		SessionTx string `json:"session_tx"`
	}
	Identity *struct {
		Public string `json:"public"`
		Secret string `json:"secret"`
	} `json:"server_identity"`
}

// unhex decodes a vector's hexadecimal bytes.
var unhex = enginetest.Unhex

func loadVectors(t testing.TB) *vecFile {
	t.Helper()
	v := enginetest.LoadJSON[vecFile](t, "testdata/wirefox.json")
	require.Len(t, v.Vectors, 10)
	n := 0
	for _, c := range v.Captures {
		n += len(c.Datagrams)
	}
	require.Equal(t, 51, n)
	return v
}

func loadCrypto(t testing.TB) *cryptoFile {
	t.Helper()
	b, err := os.ReadFile("testdata/wirefox-crypto.json")
	require.NoError(t, err)
	var v cryptoFile
	require.NoError(t, json.Unmarshal(b, &v))
	require.Len(t, v.Datagrams["no_challenge"], 32)
	require.Len(t, v.Datagrams["challenge"], 34)
	return &v
}

// allDatagrams returns every plaintext datagram of both files with a
// name and its decode.
func allDatagrams(t testing.TB) (names []string, wires [][]byte, decls []vecDecl) {
	v := loadVectors(t)
	for _, d := range v.Vectors {
		require.Len(t, unhex(t, d.Hex), d.Length, d.ID)
		names, wires, decls = append(names, d.ID), append(wires, unhex(t, d.Hex)), append(decls, d.Decoded)
	}
	for _, c := range v.Captures {
		for i, d := range c.Datagrams {
			names = append(names, c.Name+"#"+strconv.Itoa(i))
			wires, decls = append(wires, unhex(t, d.Hex)), append(decls, d.Decoded)
		}
	}
	cv := loadCrypto(t)
	for _, s := range []string{"no_challenge", "challenge"} {
		for _, d := range cv.Datagrams[s] {
			names = append(names, s+"#"+strconv.Itoa(d.Index))
			wires, decls = append(wires, unhex(t, d.Plaintext)), append(decls, d.Decoded)
		}
	}
	return names, wires, decls
}

func hexByte(t testing.TB, s string) byte {
	t.Helper()
	n, err := strconv.ParseUint(s, 0, 8)
	require.NoError(t, err)
	return byte(n)
}

// TestVectors decodes every datagram to its annotated fields and
// re-encodes it byte for byte.
func TestVectors(t *testing.T) {
	names, wires, decls := allDatagrams(t)
	require.Len(t, wires, 51+10+66)
	for i, wire := range wires {
		want := decls[i]
		t.Run(names[i], func(t *testing.T) {
			var d Datagram
			require.NoError(t, ParseDatagram(wire, &d))
			require.Equal(t, hexByte(t, want.Flags), d.Flags)
			require.Equal(t, want.ID, d.ID)
			require.Equal(t, want.Acks, nilIfEmpty(d.Acks))
			require.Equal(t, want.Naks, nilIfEmpty(d.Naks))
			if want.DataLen != nil {
				require.Equal(t, *want.DataLen, d.DataLen)
				require.Equal(t, want.HeaderLen, d.HeaderLen())
				require.Len(t, d.Data, want.Following)
			}
			out := AppendDatagram(nil, &Datagram{Flags: d.Flags, ID: d.ID, Acks: d.Acks, Naks: d.Naks, DataLen: d.DataLen})
			rest := d.Data
			for j, wp := range want.Packets {
				var p Packet
				n, err := ParsePacket(rest, &p)
				require.NoError(t, err, "packet %d", j)
				require.Equal(t, hexByte(t, wp.Flags), p.Flags)
				require.Equal(t, wp.ID, p.ID)
				require.Equal(t, wp.Options, p.Options)
				require.Equal(t, wp.Channel, p.Channel)
				if wp.Seq != nil {
					require.Equal(t, *wp.Seq, p.Seq)
				}
				require.Len(t, p.Body, wp.Length)
				require.Equal(t, wp.Offset, p.Offset)
				require.Equal(t, wp.Container != nil, p.Split())
				if wp.Container != nil {
					require.Equal(t, *wp.Container, p.Container)
					require.Equal(t, *wp.Index, p.Index)
				}
				if wp.Command != nil {
					require.Equal(t, *wp.Command, p.Body[0])
				}
				if wp.Payload != nil {
					require.Equal(t, *wp.Payload, hex.EncodeToString(p.Body[1:]))
				}
				if c := wp.Connect; c != nil {
					checkHandshake(t, p.Body, wp)
				}
				require.Equal(t, n, p.PacketLen())
				out = AppendPacket(out, &p)
				rest = rest[n:]
			}
			require.Empty(t, rest)
			require.Equal(t, hex.EncodeToString(wire), hex.EncodeToString(out))
		})
	}
}

// checkHandshake checks a CONNECT_ATTEMPT blob against its decode and
// re-encodes it.
func checkHandshake(t *testing.T, blob []byte, wp vecPacket) {
	c := wp.Connect
	var h Handshake
	require.NoError(t, ParseHandshake(blob, &h))
	require.Equal(t, c.Version, h.Version)
	require.Equal(t, c.PeerID, hex.EncodeToString(binary.BigEndian.AppendUint64(nil, h.PeerID)))
	require.Equal(t, c.Opcode, h.Op)
	switch h.Op {
	case OpInitialClient, OpInitialServer:
		require.Equal(t, []byte{hexByte(t, c.Crypto)}, h.Data)
	case OpUnencryptedAck:
		require.Empty(t, h.Data)
	case OpAuthMsg:
		if c.State != nil {
			require.Equal(t, *c.State, h.Data[0])
		} else {
			require.Empty(t, h.Data) // the server's answer to DONE
		}
		if c.KX != "" {
			require.Equal(t, c.KX, hex.EncodeToString(h.Data[1:33]))
		}
	}
	require.Equal(t, blob, AppendHandshake(nil, &h))
}

func nilIfEmpty(ids []uint32) []uint32 {
	if len(ids) == 0 {
		return nil
	}
	return ids
}

// TestDisconnectAckBytes checks the out-of-band DISCONNECT_ACK of
// docs/protocols/wirefox.md §1.8 against the capture and AppendOOB.
func TestDisconnectAckBytes(t *testing.T) {
	v := loadVectors(t)
	want := "80000000010" + "00c000000000000000001000004"
	require.Equal(t, want, v.Captures[0].Datagrams[7].Hex)
	require.Equal(t, want, hex.EncodeToString(AppendOOB(nil, 1, []byte{CmdDisconnectAck})))
	require.Equal(t, v.Vectors[4].Hex, v.Vectors[7].Hex, "W7b repeats W5")
}

// TestHandshakeBytes builds the three handshake messages of W1..W3 with
// AppendOOB and AppendHandshake.
func TestHandshakeBytes(t *testing.T) {
	v := loadVectors(t)
	cid, sid := uint64(0x3efe7d4f2231ac25), uint64(0x777db20b2616d322)
	for i, c := range []struct {
		id uint32
		h  Handshake
	}{
		{0, Handshake{PeerID: cid, Op: OpInitialClient, Data: []byte{0}}},
		{0, Handshake{PeerID: sid, Op: OpInitialServer, Data: []byte{0}}},
		{1, Handshake{PeerID: cid, Op: OpUnencryptedAck}},
	} {
		got := AppendOOB(nil, c.id, AppendHandshake(nil, &c.h))
		require.Equal(t, v.Vectors[i].Hex, hex.EncodeToString(got))
		require.True(t, IsOpening(got) == (i == 0))
	}
}

// TestParseErrors checks the protocol violations and truncations that
// ParseDatagram and ParsePacket refuse.
func TestParseErrors(t *testing.T) {
	for _, h := range []string{
		"", "80000000", // short
		"4000000000",                         // LNK alone
		"2000000000000000000000",             // ACK without LNK
		"6000000000", "60000000000100000000", // ACK list truncated
		"8000000000", "80000000000a", // DAT without length
	} {
		var d Datagram
		require.Error(t, ParseDatagram(unhex(t, h), &d), h)
	}
	for _, h := range []string{
		"00000000000100", "00000000000000000100", // truncated, body longer than the rest
		"000000000000010000000000",       // channel 1 without room for the length
		"8000000000000000010000",         // SEG without split fields
		"400000000000000100000100000000", // BIG: length 16 MiB + 1
	} {
		var p Packet
		_, err := ParsePacket(unhex(t, h), &p)
		require.Error(t, err, h)
	}
}
