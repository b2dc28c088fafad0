package qlog

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Header is the first record of a trace file: the file's format and
// the one trace it holds.
type Header struct {
	// FileSchema is "urn:ietf:params:qlog:file:sequential".
	FileSchema string `json:"file_schema"`
	// SerializationFormat is "application/qlog+json-seq".
	SerializationFormat string `json:"serialization_format"`
	// QlogVersion is "0.3" and QlogFormat "JSON-SEQ", the members older
	// readers such as qvis look for.
	QlogVersion string `json:"qlog_version"`
	QlogFormat  string `json:"qlog_format"`
	// Title names the conn: protocol, role and remote address.
	Title string `json:"title,omitempty"`
	Trace Trace  `json:"trace"`
}

// Trace describes the trace of one conn.
type Trace struct {
	CommonFields CommonFields `json:"common_fields"`
	VantagePoint VantagePoint `json:"vantage_point"`
}

// CommonFields are the fields every event of the trace shares.
type CommonFields struct {
	// TimeFormat is "relative": event times are milliseconds after
	// ReferenceTime.
	TimeFormat string `json:"time_format"`
	// ReferenceTime is the time of the first event in milliseconds since
	// the Unix epoch (UTC).
	ReferenceTime float64 `json:"reference_time"`
	// ProtocolType is ["RUDP-<protocol>"], such as ["RUDP-wirefox"].
	ProtocolType []string `json:"protocol_type"`
}

// VantagePoint tells which end of the conn wrote the trace.
type VantagePoint struct {
	// Type is "client" for a dialed conn, "server" for an accepted one.
	Type string `json:"type"`
}

// Event is one event record.
type Event struct {
	// Time is in milliseconds after the trace's reference time.
	Time float64 `json:"time"`
	// Name is "category:event", such as "transport:packet_sent".
	Name string `json:"name"`
	// Data is the event's data, a JSON object; decode it into the type
	// the name calls for (PacketData, MetricsData, ...).
	Data json.RawMessage `json:"data"`
}

// Event names this package writes.
const (
	NameStateUpdated       = "transport:connection_state_updated"
	NamePacketSent         = "transport:packet_sent"
	NamePacketReceived     = "transport:packet_received"
	NamePacketDropped      = "transport:packet_dropped"
	NameMetricsUpdated     = "recovery:metrics_updated"
	NamePacketLost         = "recovery:packet_lost"
	NameCongestionState    = "recovery:congestion_state_updated"
	NamePacketSentCC       = "rudp:packet_sent_cc"
	NameSpuriousRetransmit = "rudp:spurious_retransmit"
	NameChallenge          = "rudp:challenge"
	NameKeepAlive          = "rudp:keepalive"
	NamePeerValidated      = "rudp:peer_validated"
	NameFlowBlocked        = "rudp:flow_blocked"
	NameConnectionClosed   = "rudp:connection_closed"
)

// StateData is the data of transport:connection_state_updated and
// recovery:congestion_state_updated.
type StateData struct {
	New string `json:"new"`
}

// RawInfo is the size of a datagram or packet.
type RawInfo struct {
	// Length is in bytes (for a datagram, the UDP payload).
	Length int `json:"length"`
}

// PacketHeader is the header of transport:packet_sent and
// transport:packet_received.
type PacketHeader struct {
	// PacketType is the datagram's kind, trace.Datagram.Type.
	PacketType string `json:"packet_type"`
	// PacketNumber is the datagram's sequence number; nil when its
	// protocol has none.
	PacketNumber *uint64 `json:"packet_number,omitempty"`
}

// PacketData is the data of transport:packet_sent and
// transport:packet_received.
type PacketData struct {
	Header PacketHeader `json:"header"`
	Raw    RawInfo      `json:"raw"`
	// Frames hold one object per frame: frame_type first, then the
	// protocol's fields in wire order.
	Frames []Object `json:"frames"`
	// RUDPHeader holds the datagram's header fields other than the
	// sequence number; nil when there are none.
	RUDPHeader Object `json:"rudp_header,omitempty"`
	// RUDPDecodeError is the codec's error for a datagram that does not
	// decode whole.
	RUDPDecodeError string `json:"rudp_decode_error,omitempty"`
}

// DroppedData is the data of transport:packet_dropped.
type DroppedData struct {
	Raw RawInfo `json:"raw"`
	// Trigger is the engine's error text.
	Trigger string `json:"trigger"`
}

// MetricsData is the data of recovery:metrics_updated.
type MetricsData struct {
	// MinRTT, SmoothedRTT and LatestRTT are in milliseconds; LatestRTT
	// is left out (0) when the update took no RTT sample.
	MinRTT      float64 `json:"min_rtt"`
	SmoothedRTT float64 `json:"smoothed_rtt"`
	LatestRTT   float64 `json:"latest_rtt,omitempty"`
	// CongestionWindow and BytesInFlight are in bytes.
	CongestionWindow uint64 `json:"congestion_window"`
	BytesInFlight    uint64 `json:"bytes_in_flight"`
	// PacingRate is in bits per second; 0 (left out) when unpaced.
	PacingRate uint64 `json:"pacing_rate,omitempty"`
	// RUDPRTO is the retransmission timeout in milliseconds.
	RUDPRTO float64 `json:"rudp_rto"`
	// RUDPBandwidth is the bandwidth estimate in bits per second.
	RUDPBandwidth uint64 `json:"rudp_bandwidth"`
}

// LostData is the data of recovery:packet_lost.
type LostData struct {
	Raw RawInfo `json:"raw"`
	// Trigger is "time_threshold", "timeout" or "nak".
	Trigger string `json:"trigger"`
}

// SentCCData is the data of rudp:packet_sent_cc.
type SentCCData struct {
	Raw        RawInfo `json:"raw"`
	Retransmit bool    `json:"retransmit"`
}

// ChallengeData is the data of rudp:challenge.
type ChallengeData struct {
	Kind   string `json:"kind"`
	Result string `json:"result"`
}

// FlowBlockedData is the data of rudp:flow_blocked.
type FlowBlockedData struct {
	// Unsent is the bytes the stream holds and may not send yet.
	Unsent int `json:"unsent"`
}

// ClosedData is the data of rudp:connection_closed.
type ClosedData struct {
	// Error is the error the conn ended with; empty for an orderly close.
	Error string `json:"error,omitempty"`
}

// Member is one member of an Object.
type Member struct {
	Name  string
	Value any
}

// Object is a JSON object whose members keep their order. Decoded
// numbers are json.Number.
type Object []Member

// MarshalJSON writes the members in order.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

var errNotObject = errors.New("qlog: not a JSON object")

// UnmarshalJSON reads an object's members in order.
func (o *Object) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return errNotObject
	}
	var out Object
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		var v any
		if err := d.Decode(&v); err != nil {
			return err
		}
		out = append(out, Member{Name: name, Value: v})
	}
	*o = out
	return nil
}

// Get returns the value of the first member named name.
func (o Object) Get(name string) (any, bool) {
	for _, m := range o {
		if m.Name == name {
			return m.Value, true
		}
	}
	return nil, false
}
