package porous

import (
	"unicode"

	"github.com/rudpkit/rudp/trace"
)

// Describe decodes datagram b, one POROUS frame, with the package's
// decoder for tracing and capture dumps (docs/protocols/porous.md §1). It
// takes Data frames of up to LargeFrameSize bytes, as a session with
// Config.LargeFrames does; every other rule is Decode's.
//
// The datagram's Type is the frame type in snake case: "connect",
// "connect_ack", "disconnect", "disconnect_ack", "ping", "ping_ack",
// "data" or "data_ack". Its fields are those of the frame: "version",
// "num_channels", "max_rx_bandwidth" and "nonce" (Connect), "nonce"
// (ConnectAck), "ping_id" (Ping, PingAck), "frame_seq" and "msg_count"
// (Data), "count" and "frame_seqs" ([]uint32, DataAck). Each message of
// a Data frame is a frame "fragment" ("channel", "packet_seq",
// "dependent_lead", "fragment_id", "last_fragment_id", "length",
// "data_prefix": its first 16 bytes at most), "sentinel" ("channel",
// "packet_seq", "dependent_lead") or "window_ack" ("channel",
// "packet_seq").
//
// On a malformed datagram Err is the decoder's error (wrapping
// engine.ErrMalformed); Type is set once the frame type is known, and a
// Data frame keeps its "frame_seq" and the messages before the fault.
// Describe never panics and does not keep b.
func Describe(b []byte) trace.Datagram {
	d := trace.Datagram{Protocol: "porous"}
	var f Frame
	err := decode(b, &f, LargeFrameSize)
	if err != nil {
		d.Err = err
		switch err {
		case errEmpty, errTooLong, errFrameType:
			return d
		}
		d.Type = snake(f.Type.String())
		if f.Type == FrameData && len(b) >= DataHeaderSize {
			d.Fields = []trace.Field{{Name: "frame_seq", Value: f.Seq}}
			d.Frames = describeMessages(f.Messages)
		}
		return d
	}
	d.Type = snake(f.Type.String())
	switch f.Type {
	case FrameConnect:
		d.Fields = []trace.Field{
			{Name: "version", Value: f.Version},
			{Name: "num_channels", Value: f.Channels},
			{Name: "max_rx_bandwidth", Value: f.MaxRxBandwidth},
			{Name: "nonce", Value: f.Nonce},
		}
	case FrameConnectAck:
		d.Fields = []trace.Field{{Name: "nonce", Value: f.Nonce}}
	case FramePing, FramePingAck:
		d.Fields = []trace.Field{{Name: "ping_id", Value: f.PingID}}
	case FrameData:
		d.Fields = []trace.Field{
			{Name: "frame_seq", Value: f.Seq},
			{Name: "msg_count", Value: len(f.Messages)},
		}
		d.Frames = describeMessages(f.Messages)
	case FrameDataAck:
		d.Fields = []trace.Field{
			{Name: "count", Value: len(f.Acks)},
			{Name: "frame_seqs", Value: append([]uint32{}, f.Acks...)},
		}
	}
	return d
}

// describeMessages returns one frame per message of a Data frame.
func describeMessages(ms []Message) []trace.Frame {
	if len(ms) == 0 {
		return nil
	}
	out := make([]trace.Frame, len(ms))
	for i := range ms {
		m := &ms[i]
		fr := trace.Frame{Type: snake(m.Type.String()), Fields: []trace.Field{
			{Name: "channel", Value: m.Channel},
			{Name: "packet_seq", Value: m.PacketSeq},
		}}
		switch m.Type {
		case MsgFragment:
			fr.Fields = append(fr.Fields,
				trace.Field{Name: "dependent_lead", Value: m.DependentLead},
				trace.Field{Name: "fragment_id", Value: m.FragmentID},
				trace.Field{Name: "last_fragment_id", Value: m.LastFragmentID},
				trace.Field{Name: "length", Value: len(m.Data)},
				trace.DataPrefix(m.Data),
			)
		case MsgSentinel:
			fr.Fields = append(fr.Fields, trace.Field{Name: "dependent_lead", Value: m.DependentLead})
		}
		out[i] = fr
	}
	return out
}

// snake turns a CamelCase name into snake_case ("ConnectAck" becomes
// "connect_ack").
func snake(s string) string {
	out := make([]rune, 0, len(s)+4)
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				out = append(out, '_')
			}
			r = unicode.ToLower(r)
		}
		out = append(out, r)
	}
	return string(out)
}
