package wirefox

import (
	"strings"

	"github.com/rudpkit/rudp/trace"
)

// minSealed is the shortest encrypted datagram Describe reports as
// sealed: the encryption overhead and the shortest plaintext datagram (a
// 7-byte DAT header).
const minSealed = Overhead + 7

// Describe decodes datagram b with ParseDatagram, ParsePacket, ParseOOB
// and ParseHandshake for tracing and capture dumps
// (docs/protocols/wirefox.md §1).
//
// The datagram's Type is "out_of_band" without FlagLNK (a handshake,
// DISCONNECT_ACK, PING, ADVERTISEMENT), "data" with FlagLNK and FlagDAT,
// "ack" with FlagLNK alone (ACK and NAK lists only). Its fields are
// "flags" (the set flags' names joined by "|": "DAT", "LNK", "ACK",
// "NAK"), "datagram_id", "acks" and "naks" ([]uint32, with their flags)
// and "data_length" (the data-length field, with FlagDAT). Each packet is
// a frame named by its command ("ping", "pong", "connect_attempt",
// "disconnect_request", "disconnect_ack", "advertisement", "rpc_signal",
// "user", or "command" for the others), or "segment" for a segment after
// the first, with "packet_id", "flags" ("SEG|BIG"), "options"
// ("reliable|receipt"), "channel", "sequence" (channel ≠ 0), "offset",
// "split_container" and "split_index" (split packets), "command" (first
// segment), "length" and "data_prefix" (the body's first 16 bytes at
// most). A CONNECT_ATTEMPT also has "protocol_version", "peer_id" and
// "opcode" ("initial_client", "initial_server", "auth_msg",
// "unencrypted_ack", "error" or its number). As the session does, a DAT
// datagram is read packet after packet while 7 bytes or more remain; an
// out-of-band datagram has its one packet (trailing bytes ignored).
//
// Encrypted datagrams (docs/protocols/wirefox.md §1.7) cannot be told
// from plaintext without the session keys: a datagram that does not
// decode and is at least Overhead + 7 bytes long is described as Type
// "sealed" with one field, "length", and no error; so is one that
// decodes but not as the reference writes them (low nibble of the flags
// set, bytes after the lists of a datagram without FlagDAT, bytes after
// the packet of an out-of-band one). A malformed plaintext datagram that
// long is thus shown as sealed, and a ciphertext that happens to look
// like a plaintext datagram is shown decoded.
//
// On any other malformed datagram Err is the codec's error (wrapping
// engine.ErrMalformed) and the fields and packets decoded before the
// fault are kept. Describe never panics and does not keep b.
func Describe(b []byte) trace.Datagram {
	d, whole := describePlain(b)
	if (d.Err != nil || !whole) && len(b) >= minSealed {
		return trace.Datagram{Protocol: "wirefox", Type: "sealed", Fields: []trace.Field{{Name: "length", Value: len(b)}}}
	}
	return d
}

// describePlain describes b as a plaintext datagram. whole reports
// whether the low nibble of the flags is clear and the header and packets
// span b exactly, as in every datagram the reference and this package
// send.
func describePlain(b []byte) (d trace.Datagram, whole bool) {
	d, whole = trace.Datagram{Protocol: "wirefox"}, true
	var dg Datagram
	err := ParseDatagram(b, &dg)
	if err != nil {
		d.Err = err
		return d, false
	}
	if b[0]&0x0F != 0 {
		whole = false
	}
	d.Fields = []trace.Field{
		{Name: "flags", Value: names(dg.Flags, datagramFlags)},
		{Name: "datagram_id", Value: dg.ID},
	}
	if dg.Flags&FlagACK != 0 {
		d.Fields = append(d.Fields, trace.Field{Name: "acks", Value: append([]uint32{}, dg.Acks...)})
	}
	if dg.Flags&FlagNAK != 0 {
		d.Fields = append(d.Fields, trace.Field{Name: "naks", Value: append([]uint32{}, dg.Naks...)})
	}
	if dg.Flags&FlagDAT != 0 {
		d.Fields = append(d.Fields, trace.Field{Name: "data_length", Value: dg.DataLen})
	}
	switch {
	case dg.Flags&FlagLNK == 0:
		d.Type = "out_of_band"
		if _, err := ParseOOB(&dg); err != nil {
			d.Err = err
			return d, false
		}
		var p Packet
		n, err := ParsePacket(dg.Data, &p)
		if err != nil {
			d.Err = err // ParseOOB has read it already: not reached
			return d, false
		}
		fr := describePacket(&p)
		var h Handshake
		if p.Body[0] == CmdConnectAttempt {
			if err := ParseHandshake(p.Body, &h); err != nil {
				d.Err = err
			} else {
				fr.Fields = append(fr.Fields,
					trace.Field{Name: "protocol_version", Value: h.Version},
					trace.Field{Name: "peer_id", Value: h.PeerID},
					trace.Field{Name: "opcode", Value: opcodeName(h.Op)},
				)
			}
		}
		d.Frames = []trace.Frame{fr}
		return d, whole && n == len(dg.Data)
	case dg.Flags&FlagDAT != 0:
		d.Type = "data"
	default:
		d.Type = "ack"
	}
	if dg.Flags&FlagDAT == 0 {
		return d, whole && dg.HeaderLen() == len(b)
	}
	rest := dg.Data
	for len(rest) >= minPacket {
		var p Packet
		n, err := ParsePacket(rest, &p)
		if err != nil {
			d.Err = err
			return d, false
		}
		d.Frames = append(d.Frames, describePacket(&p))
		rest = rest[n:]
	}
	return d, whole
}

// describePacket returns the frame of packet p.
func describePacket(p *Packet) trace.Frame {
	fr := trace.Frame{Type: "segment", Fields: []trace.Field{
		{Name: "packet_id", Value: p.ID},
		{Name: "flags", Value: names(p.Flags, packetFlags)},
		{Name: "options", Value: names(p.Options, packetOptions)},
		{Name: "channel", Value: p.Channel},
	}}
	if p.Channel != 0 {
		fr.Fields = append(fr.Fields, trace.Field{Name: "sequence", Value: p.Seq})
	}
	fr.Fields = append(fr.Fields, trace.Field{Name: "offset", Value: p.Offset})
	if p.Split() {
		fr.Fields = append(fr.Fields,
			trace.Field{Name: "split_container", Value: p.Container},
			trace.Field{Name: "split_index", Value: p.Index},
		)
	}
	if p.Offset == 0 && len(p.Body) > 0 {
		fr.Type = commandName(p.Body[0])
		fr.Fields = append(fr.Fields, trace.Field{Name: "command", Value: p.Body[0]})
	}
	fr.Fields = append(fr.Fields,
		trace.Field{Name: "length", Value: len(p.Body)},
		trace.DataPrefix(p.Body),
	)
	return fr
}

type flagName struct {
	bit  byte
	name string
}

var (
	datagramFlags = []flagName{{FlagDAT, "DAT"}, {FlagLNK, "LNK"}, {FlagACK, "ACK"}, {FlagNAK, "NAK"}}
	packetFlags   = []flagName{{PacketSEG, "SEG"}, {PacketBIG, "BIG"}}
	packetOptions = []flagName{{OptReliable, "reliable"}, {OptReceipt, "receipt"}}
)

// names spells the bits of f listed in fs, joined by "|".
func names(f byte, fs []flagName) string {
	out := make([]string, 0, len(fs))
	for _, fl := range fs {
		if f&fl.bit != 0 {
			out = append(out, fl.name)
		}
	}
	return strings.Join(out, "|")
}

// commandName names command c (docs/protocols/wirefox.md §1.4).
func commandName(c byte) string {
	switch c {
	case CmdPing:
		return "ping"
	case CmdPong:
		return "pong"
	case CmdConnectAttempt:
		return "connect_attempt"
	case CmdDisconnectRequest:
		return "disconnect_request"
	case CmdDisconnectAck:
		return "disconnect_ack"
	case CmdAdvertisement:
		return "advertisement"
	case CmdRPCSignal:
		return "rpc_signal"
	}
	if c >= CmdUser {
		return "user"
	}
	return "command"
}

// opcodeName names a CONNECT_ATTEMPT opcode (docs/protocols/wirefox.md
// §1.5); an unknown one is its number.
func opcodeName(op uint8) any {
	switch op {
	case OpInitialClient:
		return "initial_client"
	case OpInitialServer:
		return "initial_server"
	case OpAuthMsg:
		return "auth_msg"
	case OpUnencryptedAck:
		return "unencrypted_ack"
	case OpError:
		return "error"
	}
	return op
}
