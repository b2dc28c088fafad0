package airhook

import (
	"strings"

	"github.com/rudpkit/rudp/trace"
)

// Describe decodes datagram b with Decode for tracing and capture dumps
// (docs/protocols/airhook.md §1). The datagram's Type is "data" when it
// carries messages and "ack" when it carries none (a pure confirmation or
// a handshake packet). Its fields are "flags" (the letters of the set
// flags, such as "O|S"), "observed_seq", "seq", and, when their flags are
// set, "observed_session", "session", "interval", "next_msg" and "missed"
// ([]uint32). Each message is a frame "message" with "id" (its message
// number: next_msg plus its index, modulo 256), "length" and
// "data_prefix" (its first 16 bytes at most).
//
// On a malformed datagram Err is Decode's error (wrapping
// engine.ErrMalformed, or ErrOutOfBand) and the fields are those of the
// 4-byte fixed header when it is whole. Describe never panics and does
// not keep b.
func Describe(b []byte) trace.Datagram {
	d := trace.Datagram{Protocol: "airhook"}
	var p Packet
	if err := Decode(b, &p); err != nil {
		d.Err = err
		if len(b) >= headerLen && b[0]&flagOutOfBand == 0 {
			// Decode fills the fixed header before any optional field.
			d.Fields = []trace.Field{
				{Name: "flags", Value: flagNames(b[0])},
				{Name: "observed_seq", Value: p.ObservedSeq},
				{Name: "seq", Value: p.Seq},
			}
		}
		return d
	}
	f := b[0]
	d.Fields = []trace.Field{
		{Name: "flags", Value: flagNames(f)},
		{Name: "observed_seq", Value: p.ObservedSeq},
		{Name: "seq", Value: p.Seq},
	}
	if f&flagObservedSession != 0 {
		d.Fields = append(d.Fields, trace.Field{Name: "observed_session", Value: p.ObservedSession})
	}
	if f&flagSession != 0 {
		d.Fields = append(d.Fields, trace.Field{Name: "session", Value: p.Session})
	}
	if f&flagInterval != 0 {
		d.Fields = append(d.Fields, trace.Field{Name: "interval", Value: p.Interval})
	}
	if f&flagNext != 0 {
		d.Fields = append(d.Fields, trace.Field{Name: "next_msg", Value: p.Next})
	}
	if f&flagMissed != 0 {
		missed := make([]uint32, len(p.Missed))
		for i, m := range p.Missed {
			missed[i] = uint32(m)
		}
		d.Fields = append(d.Fields, trace.Field{Name: "missed", Value: missed})
	}
	d.Type = "ack"
	if len(p.Messages) > 0 {
		d.Type = "data"
		d.Frames = make([]trace.Frame, len(p.Messages))
	}
	for i, m := range p.Messages {
		d.Frames[i] = trace.Frame{Type: "message", Fields: []trace.Field{
			{Name: "id", Value: uint8(int(p.Next) + i)},
			{Name: "length", Value: len(m)},
			trace.DataPrefix(m),
		}}
	}
	return d
}

// flagNames spells the flags set in the first octet f by their letters,
// O, S, I, E, M in wire order of their fields, joined by "|"; "" when
// none is set. Reserved bits 5 and 6 are not shown.
func flagNames(f uint8) string {
	names := make([]string, 0, 5)
	for _, fl := range [...]struct {
		bit  uint8
		name string
	}{{flagObservedSession, "O"}, {flagSession, "S"}, {flagInterval, "I"}, {flagNext, "E"}, {flagMissed, "M"}} {
		if f&fl.bit != 0 {
			names = append(names, fl.name)
		}
	}
	return strings.Join(names, "|")
}
