package lludp

import (
	"encoding/binary"
	"strings"

	"github.com/rudpkit/rudp/trace"
)

// Describe decodes datagram b with ParsePacket for tracing and capture
// dumps (docs/protocols/lludp.md §1).
//
// The datagram's Type is "ack" for a PacketAck, the snake-case name of
// the other messages this package knows ("start_ping_check",
// "complete_ping_check", "use_circuit_code", "open_circuit",
// "close_circuit", "test_message", "stream_message"), else "message".
// Its fields are "flags" (the set flags' names joined by "|":
// "zerocoded", "reliable", "resent", "appended_acks"), "seq", "extra"
// ([]byte, only when the extra header is not empty) and "acks" (the
// appended acks as a []uint32, only with the flag). Its one frame,
// "message", has "number" (the template's full form, see NumberLen),
// "frequency" ("high", "medium", "low" or "fixed"), "length" (the body
// after zero-decoding), "data_prefix" (its first 16 bytes at most) and
// the transport message's body as the session reads it: "ids"
// ([]uint32, PacketAck), "ping_id" and "oldest_unacked"
// (StartPingCheck), "ping_id" (CompletePingCheck), "code", "session_id"
// and "agent_id" (UseCircuitCode). A body field the body is too short for
// is left out.
//
// On a malformed datagram Err is ParsePacket's error (wrapping
// engine.ErrMalformed) with "flags" and "seq" when the header is whole.
// Describe never panics and does not keep b.
func Describe(b []byte) trace.Datagram {
	d := trace.Datagram{Protocol: "lludp"}
	var p Packet
	scratch := make([]byte, 0, MaxDecoded)
	if err := ParsePacket(b, &p, scratch); err != nil {
		d.Err = err
		if len(b) >= MinDatagram && len(b) <= MaxDecoded {
			// ParsePacket reads the header before anything can fail.
			d.Fields = []trace.Field{
				{Name: "flags", Value: flagNames(p.Flags)},
				{Name: "seq", Value: p.Seq},
			}
		}
		return d
	}
	d.Fields = []trace.Field{
		{Name: "flags", Value: flagNames(p.Flags)},
		{Name: "seq", Value: p.Seq},
	}
	if len(p.Extra) > 0 {
		d.Fields = append(d.Fields, trace.Field{Name: "extra", Value: append([]byte(nil), p.Extra...)})
	}
	if p.Flags&FlagAppendedAcks != 0 {
		d.Fields = append(d.Fields, trace.Field{Name: "acks", Value: append([]uint32{}, p.Acks...)})
	}
	d.Type = messageKind(p.Message)
	fr := trace.Frame{Type: "message", Fields: []trace.Field{
		{Name: "number", Value: p.Message},
		{Name: "frequency", Value: frequencyName(p.Message)},
		{Name: "length", Value: len(p.Body)},
		trace.DataPrefix(p.Body),
	}}
	body := p.Body
	switch p.Message {
	case PacketAck:
		// As the session reads it (recv.go): a count, then that many
		// little-endian IDs, as many as the body holds.
		var ids []uint32
		if len(body) > 0 {
			k := min(int(body[0]), (len(body)-1)/4)
			ids = make([]uint32, k)
			for i := range k {
				ids[i] = binary.LittleEndian.Uint32(body[1+4*i:])
			}
		}
		fr.Fields = append(fr.Fields, trace.Field{Name: "ids", Value: ids})
	case StartPingCheck, CompletePingCheck:
		if len(body) > 0 {
			fr.Fields = append(fr.Fields, trace.Field{Name: "ping_id", Value: body[0]})
		}
		if p.Message == StartPingCheck && len(body) >= 5 {
			fr.Fields = append(fr.Fields, trace.Field{Name: "oldest_unacked", Value: binary.LittleEndian.Uint32(body[1:5])})
		}
	case UseCircuitCode:
		if c, ok := parseCircuit(body); ok {
			fr.Fields = append(fr.Fields,
				trace.Field{Name: "code", Value: c.Code},
				trace.Field{Name: "session_id", Value: c.SessionID[:]},
				trace.Field{Name: "agent_id", Value: c.AgentID[:]},
			)
		}
	}
	d.Frames = []trace.Frame{fr}
	return d
}

// messageKind names the message number n for Describe.
func messageKind(n uint32) string {
	switch n {
	case PacketAck:
		return "ack"
	case StartPingCheck:
		return "start_ping_check"
	case CompletePingCheck:
		return "complete_ping_check"
	case UseCircuitCode:
		return "use_circuit_code"
	case OpenCircuit:
		return "open_circuit"
	case CloseCircuit:
		return "close_circuit"
	case TestMessage:
		return "test_message"
	case StreamMessage:
		return "stream_message"
	}
	return "message"
}

// frequencyName names the frequency of message number n in its full form
// (docs/protocols/lludp.md §1.2).
func frequencyName(n uint32) string {
	switch {
	case n < 0xFF:
		return "high"
	case n < 0xFFFF:
		return "medium"
	case n >= 0xFFFFFFFA:
		return "fixed"
	}
	return "low"
}

// flagNames spells the flag bits of f, most significant first, joined by
// "|"; "" when none is set.
func flagNames(f byte) string {
	names := make([]string, 0, 4)
	for _, fl := range [...]struct {
		bit  byte
		name string
	}{{FlagZerocoded, "zerocoded"}, {FlagReliable, "reliable"}, {FlagResent, "resent"}, {FlagAppendedAcks, "appended_acks"}} {
		if f&fl.bit != 0 {
			names = append(names, fl.name)
		}
	}
	return strings.Join(names, "|")
}
