package qlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rudpkit/rudp/trace"
)

// buffer is an io.WriteCloser that keeps what is written.
type buffer struct {
	bytes.Buffer
	closes int
}

func (b *buffer) Close() error { b.closes++; return nil }

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 123_000_000, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

// script drives a tracer with one event of each kind.
func script(ct *trace.ConnTracer) {
	ct.StateChanged(at(0), "handshake")
	ct.DatagramSent(at(time.Millisecond), 48, trace.Datagram{
		Protocol: "airhook", Type: "data",
		Fields: []trace.Field{
			{Name: "flags", Value: "data"},
			{Name: "observed_seq", Value: uint32(3)},
			{Name: "seq", Value: uint32(7)},
			{Name: "interval", Value: 250 * time.Millisecond},
		},
		Frames: []trace.Frame{
			{Type: "message", Fields: []trace.Field{
				{Name: "id", Value: uint8(1)},
				{Name: "length", Value: 5},
				{Name: "data_prefix", Value: []byte("hello")},
			}},
			{Type: "ack", Fields: []trace.Field{{Name: "frame_seqs", Value: []uint32{4, 5}}}},
		},
	})
	ct.DatagramReceived(at(2500*time.Microsecond), 20, trace.Datagram{
		Protocol: "airhook", Type: "ack",
		Fields: []trace.Field{{Name: "flags", Value: "ack"}},
		Err:    errors.New("short datagram"),
	})
	ct.DatagramDropped(at(3*time.Millisecond), 9, errors.New("bad checksum"))
	ct.PacketSent(at(4*time.Millisecond), 1200, true)
	ct.PacketLost(at(5*time.Millisecond), 1200, trace.LossNAK)
	ct.SpuriousRetransmit(at(6 * time.Millisecond))
	ct.MetricsUpdated(at(7250*time.Microsecond), trace.Metrics{
		LatestRTT: 12500 * time.Microsecond, SmoothedRTT: 10 * time.Millisecond,
		RTO: 200 * time.Millisecond, MinRTT: 9250 * time.Microsecond,
		Cwnd: 14720, BytesInFlight: 2400, PacingRate: 1_250_000, Bandwidth: 1_000_000,
	})
	ct.CongestionStateChanged(at(8*time.Millisecond), "probe_bw")
	ct.Challenge(at(9*time.Millisecond), "restart", "spoofed")
	ct.StateChanged(at(10*time.Millisecond), "closed")
	ct.Closed(at(11*time.Millisecond), errors.New("idle timeout"))
	ct.StateChanged(at(12*time.Millisecond), "after close") // ignored
}

var info = trace.ConnInfo{
	Protocol: "airhook", Client: true, Stream: true,
	Local:  &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000},
	Remote: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000},
}

// Structs of the schema's fields, written from the drafts, for a strict
// decode (no unknown field allowed).
type (
	sHeader struct {
		FileSchema          string `json:"file_schema"`
		SerializationFormat string `json:"serialization_format"`
		QlogVersion         string `json:"qlog_version"`
		QlogFormat          string `json:"qlog_format"`
		Title               string `json:"title"`
		Trace               struct {
			CommonFields struct {
				TimeFormat    string   `json:"time_format"`
				ReferenceTime float64  `json:"reference_time"`
				ProtocolType  []string `json:"protocol_type"`
			} `json:"common_fields"`
			VantagePoint struct {
				Type string `json:"type"`
			} `json:"vantage_point"`
		} `json:"trace"`
	}
	sEvent struct {
		Time float64         `json:"time"`
		Name string          `json:"name"`
		Data json.RawMessage `json:"data"`
	}
	sRaw struct {
		Length int `json:"length"`
	}
	sPacket struct {
		Header struct {
			PacketType   string  `json:"packet_type"`
			PacketNumber *uint64 `json:"packet_number"`
		} `json:"header"`
		Raw             sRaw             `json:"raw"`
		Frames          []map[string]any `json:"frames"`
		RUDPHeader      map[string]any   `json:"rudp_header"`
		RUDPDecodeError string           `json:"rudp_decode_error"`
	}
	sTrigger struct {
		Raw     sRaw   `json:"raw"`
		Trigger string `json:"trigger"`
	}
	sMetrics struct {
		MinRTT           float64 `json:"min_rtt"`
		SmoothedRTT      float64 `json:"smoothed_rtt"`
		LatestRTT        float64 `json:"latest_rtt"`
		CongestionWindow uint64  `json:"congestion_window"`
		BytesInFlight    uint64  `json:"bytes_in_flight"`
		PacingRate       uint64  `json:"pacing_rate"`
		RUDPRTO          float64 `json:"rudp_rto"`
		RUDPBandwidth    uint64  `json:"rudp_bandwidth"`
	}
	sState struct {
		New string `json:"new"`
	}
	sSentCC struct {
		Raw        sRaw `json:"raw"`
		Retransmit bool `json:"retransmit"`
	}
	sChallenge struct {
		Kind   string `json:"kind"`
		Result string `json:"result"`
	}
	sClosed struct {
		Error string `json:"error"`
	}
	sEmpty struct{}
)

func strict(t *testing.T, b []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		t.Fatalf("strict decode of %s: %v", b, err)
	}
	if d.More() {
		t.Fatalf("trailing data after %s", b)
	}
}

// records splits JSON-SEQ strictly: the output starts with RS, and
// every record ends in LF.
func records(t *testing.T, out []byte) [][]byte {
	t.Helper()
	if len(out) == 0 || out[0] != 0x1E {
		t.Fatalf("output does not start with RS: %q", out)
	}
	parts := bytes.Split(out[1:], []byte{0x1E})
	for i, p := range parts {
		if len(p) == 0 || p[len(p)-1] != 0x0A {
			t.Fatalf("record %d does not end in LF: %q", i+1, p)
		}
		if !json.Valid(p) {
			t.Fatalf("record %d is not JSON: %q", i+1, p)
		}
	}
	return parts
}

func schemas(t *testing.T) (header, event *jsonschema.Schema) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "qlog-seq.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	const id = "https://github.com/rudpkit/rudp/qlog/testdata/qlog-seq.schema.json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	if header, err = c.Compile(id + "#/$defs/header"); err != nil {
		t.Fatal(err)
	}
	if event, err = c.Compile(id + "#/$defs/event"); err != nil {
		t.Fatal(err)
	}
	return header, event
}

func validate(t *testing.T, s *jsonschema.Schema, rec []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(rec))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("schema: %s: %v", rec, err)
	}
}

func TestConnTracerOutput(t *testing.T) {
	var buf buffer
	script(NewConnTracer(&buf, info))
	if buf.closes != 1 {
		t.Fatalf("Close called %d times, want 1", buf.closes)
	}
	recs := records(t, buf.Bytes())
	hs, es := schemas(t)

	if len(recs) != 13 {
		t.Fatalf("%d records, want 13 (header + 12 events)", len(recs))
	}
	validate(t, hs, recs[0])
	var h sHeader
	strict(t, recs[0], &h)
	if h.FileSchema != "urn:ietf:params:qlog:file:sequential" || h.SerializationFormat != "application/qlog+json-seq" ||
		h.QlogVersion != "0.3" || h.QlogFormat != "JSON-SEQ" || h.Title != "rudp airhook client 127.0.0.1:9000" {
		t.Fatalf("header %+v", h)
	}
	cf := h.Trace.CommonFields
	if cf.TimeFormat != "relative" || cf.ReferenceTime != 1735787045123 ||
		len(cf.ProtocolType) != 1 || cf.ProtocolType[0] != "RUDP-airhook" || h.Trace.VantagePoint.Type != "client" {
		t.Fatalf("trace %+v", h.Trace)
	}

	wantTimes := []float64{0, 1, 2.5, 3, 4, 5, 6, 7.25, 8, 9, 10, 11}
	wantNames := []string{
		"transport:connection_state_updated", "transport:packet_sent", "transport:packet_received",
		"transport:packet_dropped", "rudp:packet_sent_cc", "recovery:packet_lost", "rudp:spurious_retransmit",
		"recovery:metrics_updated", "recovery:congestion_state_updated", "rudp:challenge",
		"transport:connection_state_updated", "rudp:connection_closed",
	}
	ev := make([]sEvent, len(recs)-1)
	for i, r := range recs[1:] {
		validate(t, es, r)
		strict(t, r, &ev[i])
		if ev[i].Time != wantTimes[i] || ev[i].Name != wantNames[i] {
			t.Errorf("event %d: time %v name %q, want %v %q", i, ev[i].Time, ev[i].Name, wantTimes[i], wantNames[i])
		}
	}

	var st sState
	strict(t, ev[0].Data, &st)
	if st.New != "handshake" {
		t.Errorf("state %q", st.New)
	}

	// The packet_sent record, byte for byte: member order is the wire's.
	wantSent := `{"time":1,"name":"transport:packet_sent","data":{"header":{"packet_type":"data","packet_number":7},` +
		`"raw":{"length":48},"frames":[{"frame_type":"message","id":1,"length":5,"data_prefix":"68656c6c6f"},` +
		`{"frame_type":"ack","frame_seqs":[4,5]}],"rudp_header":{"flags":"data","observed_seq":3,"interval":250}}}` + "\n"
	if string(recs[2]) != wantSent {
		t.Errorf("packet_sent record\n got %s\nwant %s", recs[2], wantSent)
	}
	var ps sPacket
	strict(t, ev[1].Data, &ps)
	if ps.Header.PacketType != "data" || ps.Header.PacketNumber == nil || *ps.Header.PacketNumber != 7 ||
		ps.Raw.Length != 48 || len(ps.Frames) != 2 || ps.Frames[0]["frame_type"] != "message" {
		t.Errorf("packet_sent %+v", ps)
	}

	var pr sPacket
	strict(t, ev[2].Data, &pr)
	if pr.Header.PacketType != "ack" || pr.Header.PacketNumber != nil || pr.Raw.Length != 20 ||
		pr.Frames == nil || len(pr.Frames) != 0 || pr.RUDPDecodeError != "short datagram" || pr.RUDPHeader["flags"] != "ack" {
		t.Errorf("packet_received %+v", pr)
	}

	var dr sTrigger
	strict(t, ev[3].Data, &dr)
	if dr != (sTrigger{Raw: sRaw{9}, Trigger: "bad checksum"}) {
		t.Errorf("packet_dropped %+v", dr)
	}
	var cc sSentCC
	strict(t, ev[4].Data, &cc)
	if cc != (sSentCC{Raw: sRaw{1200}, Retransmit: true}) {
		t.Errorf("packet_sent_cc %+v", cc)
	}
	var lost sTrigger
	strict(t, ev[5].Data, &lost)
	if lost != (sTrigger{Raw: sRaw{1200}, Trigger: "nak"}) {
		t.Errorf("packet_lost %+v", lost)
	}
	var empty sEmpty
	strict(t, ev[6].Data, &empty)

	var m sMetrics
	strict(t, ev[7].Data, &m)
	wantM := sMetrics{
		MinRTT: 9.25, SmoothedRTT: 10, LatestRTT: 12.5, CongestionWindow: 14720, BytesInFlight: 2400,
		PacingRate: 10_000_000, RUDPRTO: 200, RUDPBandwidth: 8_000_000,
	}
	if m != wantM {
		t.Errorf("metrics_updated %+v, want %+v", m, wantM)
	}
	strict(t, ev[8].Data, &st)
	if st.New != "probe_bw" {
		t.Errorf("congestion state %q", st.New)
	}
	var ch sChallenge
	strict(t, ev[9].Data, &ch)
	if ch != (sChallenge{Kind: "restart", Result: "spoofed"}) {
		t.Errorf("challenge %+v", ch)
	}
	var cl sClosed
	strict(t, ev[11].Data, &cl)
	if cl.Error != "idle timeout" {
		t.Errorf("closed %+v", cl)
	}
}

func TestOrderlyCloseAndUnpaced(t *testing.T) {
	var buf buffer
	ct := NewConnTracer(&buf, trace.ConnInfo{Protocol: "lludp"})
	ct.MetricsUpdated(at(0), trace.Metrics{Cwnd: -1})
	ct.Closed(at(time.Second), nil)
	ct.Closed(at(2*time.Second), nil) // second close: nothing
	recs := records(t, buf.Bytes())
	want := []string{
		`{"file_schema":"urn:ietf:params:qlog:file:sequential","serialization_format":"application/qlog+json-seq",` +
			`"qlog_version":"0.3","qlog_format":"JSON-SEQ","title":"rudp lludp server unknown","trace":{"common_fields":` +
			`{"time_format":"relative","reference_time":1735787045123,"protocol_type":["RUDP-lludp"]},"vantage_point":{"type":"server"}}}`,
		`{"time":0,"name":"recovery:metrics_updated","data":{"min_rtt":0,"smoothed_rtt":0,` +
			`"congestion_window":0,"bytes_in_flight":0,"rudp_rto":0,"rudp_bandwidth":0}}`,
		`{"time":1000,"name":"rudp:connection_closed","data":{}}`,
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i := range want {
		if string(recs[i]) != want[i]+"\n" {
			t.Errorf("record %d\n got %s\nwant %s", i, recs[i], want[i])
		}
	}
	if buf.closes != 1 {
		t.Errorf("Close called %d times, want 1", buf.closes)
	}
}

// TestKeepAliveFlowBlockedValidated: the keepalive, flow-control and
// validation events are written exactly, and pass the schema.
func TestKeepAliveFlowBlockedValidated(t *testing.T) {
	var buf buffer
	ct := NewConnTracer(&buf, trace.ConnInfo{Protocol: "porous", Client: true, Stream: true})
	ct.KeepAlive(at(0))
	ct.FlowBlocked(at(1500*time.Microsecond), 65536)
	ct.PeerValidated(at(1750 * time.Microsecond))
	ct.Closed(at(2*time.Millisecond), nil)
	recs := records(t, buf.Bytes())
	want := []string{
		`{"time":0,"name":"rudp:keepalive","data":{}}`,
		`{"time":1.5,"name":"rudp:flow_blocked","data":{"unsent":65536}}`,
		`{"time":1.75,"name":"rudp:peer_validated","data":{}}`,
		`{"time":2,"name":"rudp:connection_closed","data":{}}`,
	}
	if len(recs) != 1+len(want) {
		t.Fatalf("%d records, want %d", len(recs), 1+len(want))
	}
	_, event := schemas(t)
	for i, w := range want {
		if string(recs[1+i]) != w+"\n" {
			t.Errorf("record %d\n got %s\nwant %s", 1+i, recs[1+i], w)
		}
		validate(t, event, recs[1+i])
	}
}

// failWriter accepts ok writes, then fails every one.
type failWriter struct {
	ok, writes, closes int
	n                  int
}

var errDisk = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	f.writes++
	if f.writes > f.ok {
		return 0, errDisk
	}
	f.n += len(p)
	return len(p), nil
}

func (f *failWriter) Close() error { f.closes++; return nil }

func TestWriteErrorStopsWriting(t *testing.T) {
	for _, ok := range []int{0, 1} {
		fw := &failWriter{ok: ok}
		ct := NewConnTracer(fw, info)
		d := trace.Datagram{Type: "data", Frames: []trace.Frame{{Type: "message", Fields: []trace.Field{{Name: "data_prefix", Value: bytes.Repeat([]byte{0xAB}, 64)}}}}}
		// About 250 bytes a record: 1000 records fill the 32 KiB buffer
		// several times over.
		for i := range 1000 {
			ct.DatagramSent(at(time.Duration(i)*time.Millisecond), 1200, d)
		}
		ct.Closed(at(time.Hour), nil)
		if fw.writes != ok+1 {
			t.Errorf("ok=%d: %d writes, want %d (none after the first error)", ok, fw.writes, ok+1)
		}
		if fw.n != ok*bufSize {
			t.Errorf("ok=%d: %d bytes written, want %d", ok, fw.n, ok*bufSize)
		}
		if fw.closes != 1 {
			t.Errorf("ok=%d: Close called %d times, want 1", ok, fw.closes)
		}
	}
}

func TestDirTracerNames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traces") // created on demand
	now := func() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 123_456_789, time.FixedZone("X", 3600)) }
	f := dirTracer(dir, now)
	v6 := trace.ConnInfo{Protocol: "wirefox", Client: false, Remote: &net.UDPAddr{IP: net.IPv6loopback, Port: 443}}
	for range 3 {
		ct := f(info)
		if ct == nil {
			t.Fatal("nil tracer")
		}
		ct.StateChanged(at(0), "handshake")
		ct.Closed(at(time.Millisecond), nil)
	}
	if f(v6) == nil {
		t.Fatal("nil tracer")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{
		"20250102T020405.123_airhook_client_127.0.0.1-9000.sqlog",
		"20250102T020405.123_airhook_client_127.0.0.1-9000_1.sqlog",
		"20250102T020405.123_airhook_client_127.0.0.1-9000_2.sqlog",
		"20250102T020405.123_wirefox_server_[--1]-443.sqlog",
	}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Fatalf("files\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	b, err := os.ReadFile(filepath.Join(dir, want[1]))
	if err != nil {
		t.Fatal(err)
	}
	if recs := records(t, b); len(recs) != 3 {
		t.Errorf("%d records in %s, want 3", len(recs), want[1])
	}

	// A directory that cannot be made: no tracer.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if ct := DirTracer(filepath.Join(file, "sub"))(info); ct != nil {
		t.Error("tracer for a directory under a file")
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvDir, "")
	if FromEnv() != nil {
		t.Error("FromEnv with QLOGDIR empty is not nil")
	}
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	f := FromEnv()
	if f == nil {
		t.Fatal("FromEnv with QLOGDIR set is nil")
	}
	ct := f(info)
	if ct == nil {
		t.Fatal("nil tracer")
	}
	ct.Closed(at(0), nil)
	m, err := filepath.Glob(filepath.Join(dir, "*_airhook_client_127.0.0.1-9000.sqlog"))
	if err != nil || len(m) != 1 {
		t.Fatalf("files %v, %v", m, err)
	}
}

func TestReadEvents(t *testing.T) {
	var buf buffer
	script(NewConnTracer(&buf, info))
	h, ev, err := ReadEvents(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if h.Trace.CommonFields.ProtocolType[0] != "RUDP-airhook" || len(ev) != 12 {
		t.Fatalf("header %+v, %d events", h, len(ev))
	}
	if ev[7].Name != NameMetricsUpdated || ev[7].Time != 7.25 {
		t.Fatalf("event 7: %+v", ev[7])
	}
	var m MetricsData
	if err := json.Unmarshal(ev[7].Data, &m); err != nil || m.CongestionWindow != 14720 || m.PacingRate != 10_000_000 {
		t.Fatalf("metrics %+v, %v", m, err)
	}
	var p PacketData
	if err := json.Unmarshal(ev[1].Data, &p); err != nil {
		t.Fatal(err)
	}
	if v, ok := p.Frames[0].Get("data_prefix"); !ok || v != "68656c6c6f" {
		t.Fatalf("frame 0 data_prefix %v", v)
	}
	if v, _ := p.RUDPHeader.Get("observed_seq"); v != json.Number("3") {
		t.Fatalf("observed_seq %#v", v)
	}

	// A last record cut short is skipped.
	cut := buf.Bytes()[:buf.Len()-5]
	if _, ev, err := ReadEvents(bytes.NewReader(cut)); err != nil || len(ev) != 11 {
		t.Fatalf("cut trace: %d events, %v", len(ev), err)
	}
	// A record cut short before others is an error.
	bad := append(append([]byte{}, buf.Bytes()[:40]...), buf.Bytes()...)
	if _, _, err := ReadEvents(bytes.NewReader(bad)); err == nil || err.Error() != "qlog: record 1: no final line feed" {
		t.Fatalf("bad trace: %v", err)
	}
	if _, _, err := ReadEvents(strings.NewReader("")); !errors.Is(err, ErrNoHeader) {
		t.Fatalf("empty: %v", err)
	}
	if _, _, err := ReadEvents(strings.NewReader("\x1e{\"trace\":{}}\n")); err == nil ||
		err.Error() != "qlog: header record: no trace common_fields" {
		t.Fatalf("no common_fields: %v", err)
	}
	if _, _, err := ReadEvents(strings.NewReader("\x1e{\"qlog_version\":3}\n")); err == nil ||
		!strings.HasPrefix(err.Error(), "qlog: header record: ") {
		t.Fatalf("bad header: %v", err)
	}
	big := "\x1e" + strings.Repeat(" ", MaxRecordSize+10) + "\n"
	if _, _, err := ReadEvents(strings.NewReader(big)); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("huge record: %v", err)
	}
}
