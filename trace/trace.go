// Package trace defines the events a rudp conn reports while it runs, for
// debugging and analysis: state changes, every datagram sent, received or
// dropped with its decoded frames, losses and their cause, retransmits,
// RTT samples, congestion state and window changes, keepalives,
// flow-control blocking, challenges and the close.
//
// A program turns tracing on with rudp.Config.Tracer, which returns a
// *ConnTracer for each conn; package qlog provides one that writes qlog
// files. A ConnTracer is a set of callbacks, any of which may be nil.
// They run on the conn's own goroutines with the conn's lock held: they
// must return quickly, must not block and must not call back into the
// conn. The values they receive (Datagram's slices included) are valid
// only during the call.
//
// Times are the conn's clock (the time the engine was handed for the
// event), so that a trace of a simulated run carries the simulation's
// times.
//
// With no tracer set a conn pays one nil check per event site and
// allocates nothing for tracing.
package trace

import (
	"net"
	"time"
)

// ConnInfo describes the conn a tracer is asked for.
type ConnInfo struct {
	// Protocol is the wire protocol's name: "airhook", "porous", "lludp",
	// "wirefox" or "avara".
	Protocol string
	// Client is true for a dialed conn, false for one a listener accepts.
	Client bool
	// Stream is true for a byte stream (rudp.Conn), false for a message
	// conn (rudp.MessageConn).
	Stream bool
	// Local and Remote are the conn's addresses.
	Local, Remote net.Addr
}

// ConnTracer receives one conn's events. Every field may be nil; an event
// whose callback is nil is not built.
type ConnTracer struct {
	// StateChanged reports the association's new state: "handshake",
	// "established", "closing" or "closed".
	StateChanged func(t time.Time, state string)

	// DatagramSent reports a datagram handed to the socket: its size in
	// bytes (UDP payload) and its contents as the protocol's codec reads
	// them.
	DatagramSent func(t time.Time, size int, d Datagram)
	// DatagramReceived reports a datagram the conn received and handed
	// to its engine, decoded as for DatagramSent.
	DatagramReceived func(t time.Time, size int, d Datagram)
	// DatagramDropped reports a datagram the engine refused (malformed,
	// spoofed, out of its window, ...), with the engine's error.
	DatagramDropped func(t time.Time, size int, err error)

	// PacketSent reports a packet (the unit the congestion controller
	// counts: a datagram, or for POROUS a frame) counted in flight, its
	// size in bytes, and whether it carries data sent before.
	PacketSent func(t time.Time, size int, retransmit bool)
	// PacketLost reports a packet declared lost: its size and why.
	PacketLost func(t time.Time, size int, reason LossReason)
	// SpuriousRetransmit reports that a packet declared lost was
	// acknowledged after all.
	SpuriousRetransmit func(t time.Time)
	// MetricsUpdated reports the congestion controller's figures after
	// each round of acknowledgements and losses.
	MetricsUpdated func(t time.Time, m Metrics)
	// CongestionStateChanged reports the congestion controller's new
	// state: BBR's "startup", "drain", "probe_bw", "probe_rtt", AIMD's
	// "slow_start", "avoidance".
	CongestionStateChanged func(t time.Time, state string)

	// KeepAlive reports a keepalive probe the engine queued after
	// Config.KeepAlive without hearing from the peer.
	KeepAlive func(t time.Time)
	// FlowBlocked reports that a stream has unsent bytes and has reached
	// the peer's flow-control limit: it sends no more data until the
	// peer's reader makes room. It is reported once each time the stream
	// becomes blocked.
	FlowBlocked func(t time.Time, unsent int)

	// PeerValidated reports that a listener's new peer showed it
	// receives what this end sends (its handshake proof): from then on
	// the conn may send it more than 3 times what it received.
	PeerValidated func(t time.Time)

	// Challenge reports a challenge of an announcement from the peer's
	// address (a restart or a close that may be spoofed): started, and
	// then answered by the live peer ("spoofed": the announcement is
	// ignored) or expired unanswered ("accepted": it is acted on).
	Challenge func(t time.Time, kind, result string)

	// Closed reports the end of the conn: nil for an orderly close, else
	// the error the conn ended with.
	Closed func(t time.Time, err error)
}

// Metrics are a congestion controller's figures (docs in
// rudp.CongestionStats).
type Metrics struct {
	// LatestRTT is the update's RTT sample, 0 when it took none.
	LatestRTT, SmoothedRTT, RTO time.Duration
	MinRTT                      time.Duration
	Cwnd                        int    // bytes
	BytesInFlight               int    // bytes
	PacingRate                  uint64 // bytes/s; 0 when unpaced
	Bandwidth                   uint64 // bytes/s
}

// LossReason is why a packet was declared lost.
type LossReason uint8

const (
	// LossTime: a packet sent later was acknowledged and this one is
	// older than the reordering window allows (RACK, RFC 8985 §6.2).
	LossTime LossReason = iota + 1
	// LossTimeout: its retransmission timeout ran out (RTO, RFC 6298).
	LossTimeout
	// LossNAK: the peer reported it missing (Wirefox NAK, Airhook's
	// missed list, an LLUDP or Avara gap).
	LossNAK
)

// String returns "time_threshold", "timeout" or "nak": qlog's trigger
// names where it has them.
func (r LossReason) String() string {
	switch r {
	case LossTime:
		return "time_threshold"
	case LossTimeout:
		return "timeout"
	case LossNAK:
		return "nak"
	}
	return "unknown"
}

// Datagram is a datagram as a protocol's codec decodes it: header fields,
// then its frames in wire order. Names are the protocol's own (those of
// its notes in docs/protocols), in snake case.
type Datagram struct {
	// Protocol is the protocol's name (see ConnInfo.Protocol).
	Protocol string
	// Type names the kind of datagram, such as "data", "ack" or
	// "handshake".
	Type   string
	Fields []Field
	Frames []Frame
	// Err is set when the bytes do not decode: Fields and Frames hold
	// what came before the fault.
	Err error
}

// Frame is one frame, packet, message or block of a datagram.
type Frame struct {
	Type   string
	Fields []Field
}

// Field is one named value: an integer, a string, a bool, a
// time.Duration, a []byte (its hex is shown) or a []uint32 (lists of
// sequence numbers).
type Field struct {
	Name  string
	Value any
}

// PrefixLen is how many bytes of a message's payload a decoded frame
// carries, in its "data_prefix" field.
const PrefixLen = 16

// DataPrefix returns the "data_prefix" field of a payload: a copy of its
// first PrefixLen bytes at most.
func DataPrefix(b []byte) Field {
	return Field{Name: "data_prefix", Value: append([]byte(nil), b[:min(len(b), PrefixLen)]...)}
}
