package qlog

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/rudpkit/rudp/trace"
)

// bufSize is the size of a tracer's write buffer in bytes.
const bufSize = 32 << 10

// Record framing of RFC 7464 §2.
const (
	recordSeparator = 0x1E
	lineFeed        = 0x0A
)

// writer writes one conn's trace. Its methods are the ConnTracer's
// callbacks.
type writer struct {
	mu      sync.Mutex
	w       io.WriteCloser
	bw      *bufio.Writer
	info    trace.ConnInfo
	t0      time.Time
	started bool  // header written, t0 set
	err     error // first write error; nothing is written after it
	closed  bool
}

// NewConnTracer returns a tracer that writes the conn's events to w as a
// qlog JSON-SEQ trace (see the package doc). The header record is
// written with the first event, whose time is the trace's reference
// time. Records are buffered and w is flushed and closed when the
// tracer's Closed callback runs; events after that are ignored.
//
// The library calls a conn's callbacks one at a time (it holds the
// conn's lock); the tracer takes a mutex of its own all the same. After
// the first error from w the tracer writes nothing more (Closed still
// closes w); it never panics and blocks its caller only for the writes
// to w.
func NewConnTracer(w io.WriteCloser, info trace.ConnInfo) *trace.ConnTracer {
	t := &writer{w: w, bw: bufio.NewWriterSize(w, bufSize), info: info}
	return &trace.ConnTracer{
		StateChanged: func(at time.Time, state string) {
			t.event(at, NameStateUpdated, StateData{New: state})
		},
		DatagramSent: func(at time.Time, size int, d trace.Datagram) {
			t.event(at, NamePacketSent, packetData(size, d))
		},
		DatagramReceived: func(at time.Time, size int, d trace.Datagram) {
			t.event(at, NamePacketReceived, packetData(size, d))
		},
		DatagramDropped: func(at time.Time, size int, err error) {
			t.event(at, NamePacketDropped, DroppedData{Raw: RawInfo{Length: size}, Trigger: errText(err)})
		},
		PacketSent: func(at time.Time, size int, retransmit bool) {
			t.event(at, NamePacketSentCC, SentCCData{Raw: RawInfo{Length: size}, Retransmit: retransmit})
		},
		PacketLost: func(at time.Time, size int, reason trace.LossReason) {
			t.event(at, NamePacketLost, LostData{Raw: RawInfo{Length: size}, Trigger: reason.String()})
		},
		SpuriousRetransmit: func(at time.Time) {
			t.event(at, NameSpuriousRetransmit, struct{}{})
		},
		MetricsUpdated: func(at time.Time, m trace.Metrics) {
			t.event(at, NameMetricsUpdated, MetricsData{
				MinRTT:           ms(m.MinRTT),
				SmoothedRTT:      ms(m.SmoothedRTT),
				LatestRTT:        ms(m.LatestRTT),
				CongestionWindow: nonNeg(m.Cwnd),
				BytesInFlight:    nonNeg(m.BytesInFlight),
				PacingRate:       bits(m.PacingRate),
				RUDPRTO:          ms(m.RTO),
				RUDPBandwidth:    bits(m.Bandwidth),
			})
		},
		CongestionStateChanged: func(at time.Time, state string) {
			t.event(at, NameCongestionState, StateData{New: state})
		},
		PeerValidated: func(at time.Time) {
			t.event(at, NamePeerValidated, struct{}{})
		},
		KeepAlive: func(at time.Time) {
			t.event(at, NameKeepAlive, struct{}{})
		},
		FlowBlocked: func(at time.Time, unsent int) {
			t.event(at, NameFlowBlocked, FlowBlockedData{Unsent: unsent})
		},
		Challenge: func(at time.Time, kind, result string) {
			t.event(at, NameChallenge, ChallengeData{Kind: kind, Result: result})
		},
		Closed: func(at time.Time, err error) {
			t.event(at, NameConnectionClosed, ClosedData{Error: errText(err)})
			t.close()
		},
	}
}

// event writes one event record, and the header before the first one.
func (t *writer) event(at time.Time, name string, data any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.err != nil {
		return
	}
	if !t.started {
		t.started = true
		t.t0 = at
		t.record(t.header(at))
	}
	d, err := json.Marshal(data)
	if err != nil {
		// Only a value of an unexpected kind gets here; keep the
		// event with the error as its data rather than lose the trace.
		d, _ = json.Marshal(map[string]string{"rudp_marshal_error": err.Error()})
	}
	t.record(Event{Time: ms(at.Sub(t.t0)), Name: name, Data: d})
}

// record writes v as one JSON-SEQ record.
func (t *writer) record(v any) {
	if t.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.err = err
		return
	}
	if err := t.bw.WriteByte(recordSeparator); err != nil {
		t.err = err
		return
	}
	if _, err := t.bw.Write(b); err != nil {
		t.err = err
		return
	}
	if err := t.bw.WriteByte(lineFeed); err != nil {
		t.err = err
	}
}

// close flushes and closes w, once.
func (t *writer) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.closed = true
	if t.err == nil {
		t.err = t.bw.Flush()
	}
	_ = t.w.Close()
}

func (t *writer) header(at time.Time) Header {
	role, remote := roleOf(t.info), remoteOf(t.info)
	return Header{
		FileSchema:          "urn:ietf:params:qlog:file:sequential",
		SerializationFormat: "application/qlog+json-seq",
		QlogVersion:         "0.3",
		QlogFormat:          "JSON-SEQ",
		Title:               fmt.Sprintf("rudp %s %s %s", t.info.Protocol, role, remote),
		Trace: Trace{
			CommonFields: CommonFields{
				TimeFormat:    "relative",
				ReferenceTime: float64(at.Unix())*1e3 + float64(at.Nanosecond())/1e6,
				ProtocolType:  []string{"RUDP-" + t.info.Protocol},
			},
			VantagePoint: VantagePoint{Type: role},
		},
	}
}

// sequenceFields are the header field names taken as a packet number.
var sequenceFields = map[string]bool{
	"seq": true, "sequence": true, "sequence_number": true,
	"packet_number": true, "packet_seq": true, "frame_seq": true,
}

func packetData(size int, d trace.Datagram) PacketData {
	p := PacketData{
		Header: PacketHeader{PacketType: d.Type},
		Raw:    RawInfo{Length: size},
		Frames: make([]Object, 0, len(d.Frames)),
	}
	for _, f := range d.Fields {
		if p.Header.PacketNumber == nil && sequenceFields[f.Name] {
			if n, ok := unsigned(f.Value); ok {
				p.Header.PacketNumber = &n
				continue
			}
		}
		p.RUDPHeader = append(p.RUDPHeader, Member{Name: f.Name, Value: value(f.Value)})
	}
	for _, fr := range d.Frames {
		o := make(Object, 0, 1+len(fr.Fields))
		o = append(o, Member{Name: "frame_type", Value: fr.Type})
		for _, f := range fr.Fields {
			if f.Name == "frame_type" {
				continue
			}
			o = append(o, Member{Name: f.Name, Value: value(f.Value)})
		}
		p.Frames = append(p.Frames, o)
	}
	if d.Err != nil {
		p.RUDPDecodeError = d.Err.Error()
	}
	return p
}

// value converts a trace.Field value to what its JSON should show:
// durations as milliseconds, bytes as hex, and anything unexpected as
// its fmt text.
func value(v any) any {
	switch x := v.(type) {
	case nil, bool, string, []uint32,
		int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return x
	case time.Duration:
		return ms(x)
	case []byte:
		return hex.EncodeToString(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
		return x
	case float32:
		return value(float64(x))
	case []string:
		return x
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// unsigned returns an integer field value as a uint64; false for
// anything else, or a negative integer.
func unsigned(v any) (uint64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := rv.Int(); n >= 0 {
			return uint64(n), true
		}
	}
	return 0, false
}

// roleOf is the conn's vantage point: "client" or "server".
func roleOf(info trace.ConnInfo) string {
	if info.Client {
		return "client"
	}
	return "server"
}

// remoteOf is the conn's remote address as text, "unknown" without one.
func remoteOf(info trace.ConnInfo) string {
	if info.Remote == nil {
		return "unknown"
	}
	return info.Remote.String()
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// bits converts bytes/s to bits/s, saturating.
func bits(bytesPerSec uint64) uint64 {
	if bytesPerSec > math.MaxUint64/8 {
		return math.MaxUint64
	}
	return bytesPerSec * 8
}

func nonNeg(n int) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimSpace(err.Error())
}
