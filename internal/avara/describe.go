package avara

import (
	"encoding/binary"

	"github.com/rudpkit/rudp/trace"
)

// Describe decodes datagram b with ParseDatagram, checked against
// DefaultVersion, for tracing and capture dumps (docs/protocols/avara.md
// §1).
//
// The datagram's Type is "data" when it carries messages, "ack" when it
// carries none, "punch" for a 7-byte NAT punch datagram (with Err
// ErrPunch). Its fields are "crc" (the checksum field), "ack" (the last
// serial received in order, the AckMap flag cleared) and "ackmap" (with
// the flag). Each message is a frame "message" with "serial",
// "send_count", "command", "distribution" and "sender" (when on the
// wire), "p1", "p2", "p3", "length" and "data_prefix" (its first 16
// bytes at most).
//
// A datagram whose checksum does not match DefaultVersion (corrupted, or
// of another network version) is described all the same, from a copy
// carrying the matching checksum, with Err set to the checksum error. On
// any other malformed datagram Err is ParseDatagram's error (wrapping
// engine.ErrMalformed), with "crc" and "ack" when the header decoded.
// Describe never panics and does not keep b.
func Describe(b []byte) trace.Datagram {
	d := trace.Datagram{Protocol: "avara"}
	var dg Datagram
	err := ParseDatagram(b, &dg, DefaultVersion)
	if err == errChecksum {
		// len(b) is within HeaderLen..MaxReceived here.
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint16(c, Checksum(c, DefaultVersion))
		if err2 := ParseDatagram(c, &dg, DefaultVersion); err2 != nil {
			err = err2
		}
		d.Err = errChecksum
		if err != errChecksum {
			// A later fault: report it, the checksum's aside.
			d.Err = err
		}
		describeInto(&d, b, &dg, err != errChecksum)
		return d
	}
	switch {
	case err == ErrPunch:
		d.Type, d.Err = "punch", err
		return d
	case err == errAckMap || err == errTrunc || err == errDataLen:
		d.Err = err // the header decoded
		describeInto(&d, b, &dg, true)
		return d
	case err != nil:
		d.Err = err
		return d
	}
	describeInto(&d, b, &dg, false)
	return d
}

// describeInto fills d from dg, decoded from b; with partial only the
// header is known.
func describeInto(d *trace.Datagram, b []byte, dg *Datagram, partial bool) {
	d.Fields = []trace.Field{
		{Name: "crc", Value: binary.LittleEndian.Uint16(b)},
		{Name: "ack", Value: dg.Ack},
	}
	if partial {
		return
	}
	if dg.HasAckMap {
		d.Fields = append(d.Fields, trace.Field{Name: "ackmap", Value: dg.AckMap})
	}
	d.Type = "ack"
	if len(dg.Messages) > 0 {
		d.Type = "data"
		d.Frames = make([]trace.Frame, len(dg.Messages))
	}
	for i := range dg.Messages {
		m := &dg.Messages[i]
		fs := []trace.Field{
			{Name: "serial", Value: m.Serial},
			{Name: "send_count", Value: m.SendCount},
			{Name: "command", Value: m.Command},
		}
		if m.HasDistribution {
			fs = append(fs, trace.Field{Name: "distribution", Value: m.Distribution})
		}
		if m.HasSender {
			fs = append(fs, trace.Field{Name: "sender", Value: m.Sender})
		}
		fs = append(fs,
			trace.Field{Name: "p1", Value: m.P1},
			trace.Field{Name: "p2", Value: m.P2},
			trace.Field{Name: "p3", Value: m.P3},
			trace.Field{Name: "length", Value: len(m.Data)},
			trace.DataPrefix(m.Data),
		)
		d.Frames[i] = trace.Frame{Type: "message", Fields: fs}
	}
}

// DescribeSession is Describe for a datagram a session built or accepted
// (a tracer's view): its checksum was checked by the session, which may
// key it (Config.ReliablePeer streams), so a mismatch with DefaultVersion
// is no error.
func DescribeSession(b []byte) trace.Datagram {
	d := Describe(b)
	if d.Err == errChecksum {
		d.Err = nil
	}
	return d
}
