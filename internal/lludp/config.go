package lludp

import (
	"encoding/binary"
	"log/slog"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"

	"github.com/rudpkit/rudp/trace"
)

// Defaults applied by New to zero Config fields (docs/protocols/lludp.md §6).
const (
	// DefaultMaxDatagram is OpenSim's hard datagram limit (docs/protocols/lludp.md §1.7).
	DefaultMaxDatagram = 1400
	// MinMaxDatagram is the smallest accepted Config.MaxDatagram: room
	// for UseCircuitCode (46 bytes) and a PacketAck of several IDs.
	MinMaxDatagram = 64
	// DefaultAckDelay is the viewer's AckCollectTime (docs/protocols/lludp.md §3.3).
	DefaultAckDelay = 100 * time.Millisecond
	// DefaultResendLimit is the viewer's number of resends (docs/protocols/lludp.md §3.4).
	DefaultResendLimit = 3
	// DefaultRTOMin and DefaultRTOMax bound the resend timeout, 5 × the
	// averaged ping: the viewer's 1 s minimum, and 5 × its 2 s ping cap.
	DefaultRTOMin = time.Second
	DefaultRTOMax = 10 * time.Second
	// DefaultKeepAlive is the StartPingCheck interval (docs/protocols/lludp.md §3.7).
	DefaultKeepAlive = 5 * time.Second
	// DefaultIdleTimeout is the viewer's circuit timeout (docs/protocols/lludp.md §3.1).
	DefaultIdleTimeout = 100 * time.Second
	// SeqWrap is the modulus of the sequence numbers sessions send: the
	// viewer wraps 0xFFFFFF to 0 (docs/protocols/lludp.md §3.2).
	SeqWrap = 1 << 24
)

// Circuit is the body of UseCircuitCode (docs/protocols/lludp.md §1.6): Code as a
// little-endian u32, then SessionID and AgentID as 16 raw bytes each (36
// bytes).
type Circuit struct {
	Code      uint32
	SessionID [16]byte
	AgentID   [16]byte
}

// circuitLen is the length of a UseCircuitCode body.
const circuitLen = 4 + 16 + 16

// appendCircuit appends the UseCircuitCode body of c to b.
func appendCircuit(b []byte, c Circuit) []byte {
	b = binary.LittleEndian.AppendUint32(b, c.Code)
	b = append(b, c.SessionID[:]...)
	return append(b, c.AgentID[:]...)
}

// parseCircuit reads a UseCircuitCode body; trailing bytes are ignored
// (docs/protocols/lludp.md §2 erratum 11). ok is false when b is shorter than 36 bytes.
func parseCircuit(b []byte) (c Circuit, ok bool) {
	if len(b) < circuitLen {
		return c, false
	}
	c.Code = binary.LittleEndian.Uint32(b)
	copy(c.SessionID[:], b[4:20])
	copy(c.AgentID[:], b[20:36])
	return c, true
}

// Config configures a Session. The zero value is a server waiting for a
// UseCircuitCode with every default; zero fields take the defaults
// documented on them.
type Config struct {
	// Client makes this end open the circuit: its first datagram is a
	// reliable UseCircuitCode carrying Circuit (sequence number
	// InitialSeq, 1 by default), and its messages wait until that is
	// acknowledged (docs/protocols/lludp.md §3.1). Without Client the session is a server:
	// it accepts nothing but a reliable UseCircuitCode until one arrives.
	Client bool
	// Circuit is the client's UseCircuitCode body. A server ignores it.
	Circuit Circuit
	// Accept marks a server session created for a datagram from an
	// unknown address: that first datagram must be a valid reliable
	// UseCircuitCode, else HandleDatagram returns an error wrapping
	// engine.ErrRejected (engine.ErrMalformed when it does not parse) and
	// the session, unchanged, stays in StateHandshake (the caller discards
	// it). Servers behave the same with or without Accept; Accept with
	// Client is invalid.
	Accept bool
	// MaxDatagram is the largest datagram Poll writes, in bytes; default
	// DefaultMaxDatagram (1400), minimum MinMaxDatagram (64). A message is
	// at most min(MTUBytes, MaxDatagram) bytes before appended acks (see
	// Session.Capabilities); datagrams never exceed MTUBytes+1, so values
	// above 1201 change nothing.
	MaxDatagram int
	// AckDelay is the longest an acknowledgement waits for an outgoing
	// datagram to ride on before it goes out in a PacketAck; default
	// DefaultAckDelay (100 ms, the viewer's AckCollectTime). Any positive
	// value; negative is invalid.
	AckDelay time.Duration
	// ResendLimit is how many times a reliable datagram is resent; when
	// the timeout after the last resend expires unacknowledged, the
	// session fails with engine.ErrRetransmitLimit (docs/protocols/lludp.md §3.4). 0 means
	// DefaultResendLimit (3, the viewer); negative means unlimited (as
	// OpenSim; IdleTimeout still ends a dead circuit).
	ResendLimit int
	// RTOMin and RTOMax bound the resend timeout, which is 5 × the
	// averaged ping (docs/protocols/lludp.md §3.4); defaults DefaultRTOMin (1 s) and
	// DefaultRTOMax (10 s). The averaged ping starts at 1 s, so the first
	// timeout is 5 s clamped to these bounds.
	RTOMin, RTOMax time.Duration
	// AckRTT, when true, takes RTT samples from the acks of datagrams sent
	// once (Karn's rule) and sets the resend timeout to the RFC 6298 RTO,
	// SRTT + 4·RTTVAR within [RTOMin, RTOMax], in place of 5 × the
	// averaged ping. A resend doubles it (RFC 6298 §5.5), at most once per
	// timeout period however many datagrams time out in it; the next ack
	// of a datagram sent once takes the doubling back. The timeout runs
	// from the later of a datagram's transmission and the latest ack
	// (RFC 6298 §5.3, congestion.Controller.TimeoutAt), as RACK finds
	// ordinary losses.
	// Only the timing of resends changes, nothing on the wire. The viewer
	// does not do this; it suits peers that both run this package and
	// need loss recovery at the pace of the path, as rudp's streams do
	// (with an RTOMin of a few milliseconds).
	AckRTT bool
	// KeepAlive is the StartPingCheck interval once the circuit is open;
	// default DefaultKeepAlive (5 s, without the viewer's ±5 %
	// randomisation). Negative disables pings, and with them the
	// averaged ping's samples (AckRTT still samples the acks).
	KeepAlive time.Duration
	// PingWhenQuiet makes the session send a StartPingCheck only once
	// KeepAlive has passed without an accepted datagram from the peer (and
	// every KeepAlive while that lasts), rather than every KeepAlive
	// whatever arrives, as the viewer does. An idle session then wakes
	// only for its pings, and the peer's pings, which it answers, spare it
	// its own. It suits peers that both run this package, with AckRTT (the
	// averaged ping then gets few samples).
	PingWhenQuiet bool
	// IdleTimeout ends the session with engine.ErrIdleTimeout after this
	// long without an accepted datagram from the peer; default
	// DefaultIdleTimeout (100 s, the viewer). Negative means never.
	IdleTimeout time.Duration
	// HandshakeTimeout, when positive, ends the session with
	// engine.ErrHandshakeTimeout if the circuit is not open within it: a
	// client's UseCircuitCode unacknowledged, or a server without one. 0
	// means never.
	HandshakeTimeout time.Duration
	// Linger is the longest time spent in StateClosing; default
	// engine.DefaultLinger (5 s). When it runs out with messages unacknowledged,
	// Err wraps engine.ErrLingerTimeout.
	Linger time.Duration
	// MaxQueued bounds Pending (messages accepted by Send: queued, or sent
	// reliably and not yet acknowledged); Send returns engine.ErrQueueFull
	// at the bound. Default engine.DefaultMaxQueued (1024).
	MaxQueued int
	// RejectNewPeerSession: once the circuit is open, a reliable
	// UseCircuitCode carrying a different Circuit makes HandleDatagram
	// return engine.ErrPeerRestarted without changing any state, so that the
	// caller can start a new session. When false the new circuit is
	// adopted: receive state is reset, pending messages are resent to the
	// new peer, and Stats.PeerRestarts counts it; a late UseCircuitCode of
	// one of the last four circuits replaced this way is refused (error
	// wrapping engine.ErrRejected).
	RejectNewPeerSession bool
	// InitialSeq is the first sequence number this end sends; 0 means 1,
	// as the viewer. It must be below SeqWrap (2^24). Other values exist
	// to exercise the wrap to 0 after 0xFFFFFF; peers accept any number.
	InitialSeq uint32
	// DeliverDuplicates delivers an application message whose sequence
	// number arrived before, instead of dropping it (Stats.Duplicates
	// still counts it), for a layer above that drops duplicates itself,
	// as rudp streams do by byte offset. Then a datagram forged by a
	// blind attacker with a sequence number the peer has yet to use
	// cannot get the genuine datagram dropped as its duplicate.
	DeliverDuplicates bool
	// RepeatAcks makes each PacketAck carry, after the acks owed, those
	// of the previous PacketAck again, as far as room allows, so that
	// losing one PacketAck costs no resends (POROUS's DataAck does the
	// same). An ack of a datagram already acknowledged is ignored, by the
	// viewer as here; the viewer itself acknowledges once.
	RepeatAcks bool
	// NoChallenge takes a CloseCircuit, or a server's reliable
	// UseCircuitCode with another Circuit, received while the circuit is
	// open at once, as the viewer does, instead of first checking with a
	// ping that the circuit is really gone (see Session.challenged). One
	// spoofed datagram from the peer's address then ends or replaces the
	// circuit.
	NoChallenge bool
	// Congestion selects the sender's congestion controller: congestion.BBR
	// (the default) or congestion.AIMD. It bounds the reliable datagrams in
	// flight and paces every datagram carrying a message; nothing on the
	// wire changes. With AckRTT, loss is also detected by RACK (RFC 8985)
	// from the acks, so a loss costs about a round trip; otherwise resends
	// keep the viewer's timing.
	Congestion congestion.Algorithm
	// Logger receives the congestion controller's events at Debug level;
	// nil discards them.
	Logger *slog.Logger
	// Tracer, when not nil, receives the session's congestion events
	// (packets sent and lost, metrics, state changes) and its challenges
	// (package trace).
	Tracer *trace.ConnTracer
}
