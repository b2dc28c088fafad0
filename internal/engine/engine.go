// Package engine defines the contract between rudp's protocol engines and the
// root package, and the pieces every engine shares:
//   - the lifecycle (Lifecycle): State and Err, the graceful close and its
//     Linger, the handshake and idle timeouts, Deadline's zero once
//     closed, what HandleDatagram does around an engine's own parsing
//     (Input), the counters behind Stats, and the queue of delivered
//     messages behind Recv and SetRecvOpen (MaxRecvQueue);
//   - the timer lists an engine's Deadline and its timer pass in Poll both
//     read (Earliest, End);
//   - the settings every engine's Config has: their defaults and checks
//     (DefaultLinger, DefaultMaxQueued, CheckConfig, ConfigError) and the
//     random IDs drawn from its Rand (DrawID);
//   - keepalives (KeepAliveAt) and challenges of an announced restart or
//     close (Challenge);
//   - the RFC 6298 RTT estimator, serial-number arithmetic and the FIFO
//     queue.
//
// It owns the two halves of that contract: Engine, one end of one
// association, and Protocol, the descriptor by which each engine package
// tells the root everything else about its wire protocol (how an opening
// looks, how to build an engine from a Setup, how a stream rides on its
// messages), so that the root keeps one table of protocols and no code of
// its own per protocol (docs/architecture.md).
//
// An Engine is one end of one association, written sans-I/O: it owns no
// socket, starts no goroutine, never reads the clock and keeps no global
// state. Time comes in as an argument to every call that needs it and
// randomness from a source given at construction, so that an engine driven
// by the same inputs produces the same outputs, byte for byte.
//
// Engines are not safe for concurrent use; the caller serialises all calls.
package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
)

// Delivery is how a message is to be delivered.
type Delivery uint8

const (
	// Reliable messages are delivered exactly once or the association fails.
	Reliable Delivery = iota
	// Unreliable messages are delivered at most once.
	Unreliable
	// Passive messages are delivered at most once and are dropped first
	// under pressure (protocols that distinguish them, such as POROUS).
	Passive
)

// String returns "reliable", "unreliable" or "passive".
func (d Delivery) String() string {
	switch d {
	case Reliable:
		return "reliable"
	case Unreliable:
		return "unreliable"
	case Passive:
		return "passive"
	}
	return "delivery(?)"
}

// SendOptions carries what a protocol can express about one message. Fields
// a protocol cannot express must be zero; an engine returns
// ErrUnsupported for a value it cannot honour.
type SendOptions struct {
	Delivery Delivery
	// Channel selects a channel on protocols that have them (POROUS).
	Channel uint8
	// MessageNumber is the LLUDP message number.
	MessageNumber uint32
	// Params are the Avara message fields; zero on other protocols.
	Params Params
}

// Params are the fields of an Avara message besides its data
// (docs/protocols/avara.md §1.4): the command, and the parameters p1, p2
// and p3 with their wire widths. They are zero on other protocols, whose
// engines refuse nonzero ones with ErrUnsupported.
type Params struct {
	// Command is the message's command: 0..36 are the game's at the cited
	// reference commit, negative ones belong to the transport.
	Command int8
	P1      int8
	P2      int16
	P3      int32
}

// Message is one delivered message. Data is owned by the receiver of the
// Message: the engine keeps no reference to it.
type Message struct {
	Data    []byte
	Channel uint8
	// Reliable is false only for a message the wire marks unreliable
	// (LLUDP's and Wirefox's reliable flags); engines whose wire does not
	// carry the delivery mode set it true.
	Reliable      bool
	MessageNumber uint32
	// Params are an Avara message's command and parameters; zero on
	// other protocols.
	Params Params
}

// State is the lifecycle state of an association.
type State uint8

const (
	// StateHandshake: the association is being set up; messages may be
	// queued and, on some protocols, already ride on handshake packets.
	StateHandshake State = iota
	// StateEstablished: both ends know each other.
	StateEstablished
	// StateClosing: Close was called; queued messages are still delivered
	// and the peer is still answered, no new message is accepted.
	StateClosing
	// StateClosed: the association is over. Err tells why when it ended
	// abnormally.
	StateClosed
)

// String returns the state's lower-case name.
func (s State) String() string {
	switch s {
	case StateHandshake:
		return "handshake"
	case StateEstablished:
		return "established"
	case StateClosing:
		return "closing"
	case StateClosed:
		return "closed"
	}
	return "state(?)"
}

// Capabilities tells the layers above what an engine can carry.
type Capabilities struct {
	// MaxMessage is the largest message Send accepts, in bytes.
	MaxMessage int
	// MaxQueued is how many messages may be pending (accepted by Send and
	// not yet confirmed) before Send returns ErrQueueFull.
	MaxQueued int
	// Ordered reports whether reliable messages are delivered in the order
	// they were sent.
	Ordered bool
	// Channels is the number of channels (1 for protocols without them).
	Channels int
	// Unreliable reports whether Unreliable and Passive delivery exist.
	Unreliable bool
}

// Stats are an engine's counters. Counters only grow.
type Stats struct {
	PacketsSent     uint64 // datagrams returned by Poll
	PacketsReceived uint64 // datagrams accepted by HandleDatagram
	BytesSent       uint64 // bytes of those datagrams
	BytesReceived   uint64
	PacketsRejected uint64 // datagrams refused: malformed, wrong session, out of range
	MessagesSent    uint64 // messages put on the wire for the first time
	MessagesRecv    uint64 // messages delivered through Recv
	Retransmits     uint64 // messages sent again after a loss
	Duplicates      uint64 // duplicate packets or messages dropped
	PeerRestarts    uint64 // new peer sessions seen after the first
	Expired         uint64 // unreliable messages dropped unsent after waiting too long
	TooLarge        uint64 // messages from the peer dropped undelivered: larger than the largest accepted
	Challenges      uint64 // restarts or closes announced by the peer's address and challenged
	SpoofsRefused   uint64 // of those, refused because the live session answered
	// Refused counts the new data messages dropped unacknowledged while
	// the engine took no new data (see Engine.SetRecvOpen), each time one
	// arrives: the peer sends them again, so a message refused twice
	// counts twice. POROUS counts its Fragment and Sentinel messages.
	Refused uint64
	// Skipped counts the peer's reliable messages this end gave up
	// waiting for and skipped past, as a receiver that mimics a
	// reference's skip rule does (Avara's SkipAfter): each one is a
	// message lost for good, never delivered.
	Skipped uint64
	// SRTT, RTTVar and RTO are the current round-trip estimate, its
	// variation and the retransmission timeout; each engine's Stats says
	// where they come from (zero when the engine has no such estimate).
	SRTT   time.Duration
	RTTVar time.Duration
	RTO    time.Duration
	// Congestion is the sender's congestion controller's figures (zero
	// for an engine without one).
	Congestion congestion.Stats
}

// ChallengeMin is the shortest time an engine waits for the live peer's
// answer when it challenges a restart or close announced from the peer's
// address, whatever the round trip: a fast path's round trip is well below
// the time a loaded host may take to run the peer's answer (a busy
// two-core machine was seen taking over 50 ms), and a spoof taken because
// the answer came late ends a live association. Waiting longer only
// delays a genuine restart, or a close that comes without a proof (a rudp
// POROUS session proves its close within a round trip).
const ChallengeMin = time.Second

// Engine is one end of one association, as a pure state machine.
//
// Byte ownership: HandleDatagram and Send copy what they keep, so the caller
// may reuse p at once. Poll writes into the caller's buf. Recv hands over a
// Message whose Data the engine no longer references.
type Engine interface {
	// HandleDatagram processes one datagram received from the peer at now.
	// A malformed or unacceptable datagram returns an error wrapping
	// ErrMalformed or ErrRejected, is counted in Stats.PacketsRejected and
	// changes no protocol state.
	HandleDatagram(now time.Time, p []byte) error
	// Send queues one message. Errors: ErrMessageTooLarge, ErrEmptyMessage,
	// ErrQueueFull, ErrUnsupported, ErrClosed (after Close or failure).
	Send(p []byte, opt SendOptions) error
	// Poll advances timers to now and writes the next datagram due into
	// buf, returning its length, or 0 when nothing is due. Call it until it
	// returns 0. buf must hold at least the engine's datagram size.
	Poll(now time.Time, buf []byte) int
	// Recv returns the next delivered message, if any.
	Recv() (Message, bool)
	// SetRecvOpen opens (true, the initial state) or closes (false) the
	// engine to new data from the peer. While it is closed,
	// HandleDatagram still applies everything else a datagram carries
	// (acknowledgements, pings, handshake and close) and acknowledges
	// again data already delivered, but drops each new data message
	// without acknowledging it, so that the peer sends it again later,
	// and counts it in Stats.Refused. An engine refuses new data in the
	// same way while its own queue of messages for Recv is at its bound.
	SetRecvOpen(open bool)
	// Deadline is when Poll must next be called; zero if no timer runs.
	Deadline() time.Time
	// Close begins a graceful close at now: pending messages are still
	// delivered, the peer is still answered, and the engine reaches
	// StateClosed when done or when its linger timer runs out.
	Close(now time.Time)
	// State is the current lifecycle state.
	State() State
	// Err is why the association ended when State is StateClosed and the
	// end was not a graceful close; nil otherwise.
	Err() error
	// Pending is the number of messages accepted by Send whose delivery is
	// not yet confirmed by the peer.
	Pending() int
	// SendRoom is how many more bytes of messages on channel ch the
	// engine should be given now: what keeps its congestion window busy
	// for about another round trip (see SendRoom the function), never
	// negative. While it is positive, Send takes a message on ch (one may
	// overshoot it) unless another of Send's bounds refuses it; a caller
	// that can hold data back (a stream, a queue of its own) gives no more
	// once it is 0, so that a message sent later does not wait behind a
	// long queue inside the engine.
	SendRoom(ch uint8) int
	// Stats returns a snapshot of the counters.
	Stats() Stats
	// Capabilities describes what this engine carries.
	Capabilities() Capabilities
}

// MinSendRoom is the least data SendRoom lets an engine hold beyond twice
// its congestion window: 64 KiB, so that a small window still has a
// datagram's worth queued behind it.
const MinSendRoom = 64 << 10

// SendRoom is what an engine's SendRoom method returns: room for
// 2 × cwnd + MinSendRoom bytes accepted by Send and not yet confirmed
// (queued or in flight), less the pending bytes already there. One
// window's worth in flight and one queued keep the window busy, and a new
// message waits at most about a round trip behind the queue.
func SendRoom(pendingBytes, cwnd int) int {
	return max(0, 2*cwnd+MinSendRoom-pendingBytes)
}

// Recycler is implemented by engines that reuse the buffers of delivered
// messages: a caller that has consumed a Message's Data (copied what it
// needs) may hand the slice back with Recycle, and must not use it after.
type Recycler interface {
	Recycle(b []byte)
}

// Builder is implemented by engines that let the caller write a message
// in place, in a buffer the engine then keeps, which saves Send's copy.
type Builder interface {
	// MessageBuffer returns a buffer of n bytes, n at most
	// Capabilities.MaxMessage, in which to write the next message. It
	// returns the same buffer, its first n bytes kept, until SendBuffer
	// queues it or Trim (see Trimmer) frees it; a call for fewer bytes
	// may move them to a smaller buffer, so that a message kept until
	// acknowledged does not hold the room of a larger one. A buffer
	// returned before must not be used after another call.
	MessageBuffer(n int) []byte
	// SendBuffer queues the first n bytes of the buffer MessageBuffer
	// returned as one message, as Send would, without copying them. It
	// returns Send's errors; after an error the buffer is kept as it
	// was.
	SendBuffer(n int, opt SendOptions) error
}

// Sinker is implemented by engines that can hand a delivered message to
// the caller during HandleDatagram, before copying it anywhere, instead
// of queueing it for Recv.
type Sinker interface {
	// SetSink makes the engine call f with the messages it can deliver
	// at once, in delivery order: during HandleDatagram, at the time
	// HandleDatagram was given, with Data that is valid only during the
	// call (it may alias the datagram). f must copy what it keeps and
	// must not call the engine. The other messages still come through
	// Recv, never out of order with those given to f. A nil f, the
	// initial state, queues every message for Recv.
	SetSink(f func(now time.Time, m Message))
}

// Holder is implemented by engines that keep messages received, and
// acknowledged to the peer, that they cannot deliver yet: POROUS holds a
// channel's later packets until the earlier ones arrive. Held is how many
// such messages there are now.
type Holder interface {
	Held() int
}

// Prover is implemented by engines whose handshake does not show that the
// peer receives what this end sends: LLUDP's UseCircuitCode comes from
// any source. PeerProven reports whether the peer has since acknowledged,
// or answered, a datagram of ours. It is a weak proof (the numbers
// acknowledged start at 1, which a blind source can guess), but it makes
// a spoofed source work for what it gets: until it holds, a listener
// sends the address at most 3 times what it received.
type Prover interface {
	PeerProven() bool
}

// Pinger is implemented by engines whose keepalives follow a slow
// reference cadence (seconds): PingAt asks for a keepalive probe, one the
// peer answers, at t (at once if t has passed), besides the regular
// ones. The root asks for one when the socket reports the peer's port
// unreachable, so that the report repeats, or a live peer's answer
// clears it, within a round trip rather than a keepalive interval. A
// later call replaces an earlier one not yet sent. An engine may ignore
// it while a challenge of the peer's close or restart runs, whose own
// probes decide.
type Pinger interface {
	PingAt(t time.Time)
}

// Trimmer is implemented by engines that can free memory they keep for
// traffic (rings grown by a transfer, recycled buffers) when the
// association is idle; they allocate it again when traffic resumes. Call
// Trim after a while without traffic, not after every datagram.
type Trimmer interface {
	Trim()
}

// Errors shared by all engines. The root package re-exports the ones users
// see, so errors.Is matches across the layers.
var (
	ErrMessageTooLarge        = errors.New("message too large")
	ErrEmptyMessage           = errors.New("empty message")
	ErrQueueFull              = errors.New("send queue full")
	ErrUnsupported            = errors.New("send option not supported by protocol")
	ErrClosed                 = errors.New("association closed")
	ErrMalformed              = errors.New("malformed datagram")
	ErrRejected               = errors.New("datagram rejected")
	ErrHandshakeTimeout error = timeoutError("handshake timeout")
	ErrIdleTimeout      error = timeoutError("idle timeout: no datagram from peer")
	ErrPeerRestarted          = errors.New("peer restarted with a new session")
	ErrRetransmitLimit        = errors.New("retransmission limit reached")
	ErrLingerTimeout          = errors.New("linger timeout: messages left unconfirmed")
	// ErrPeerClosed: the peer closed the association while messages of
	// ours were still unconfirmed.
	ErrPeerClosed = errors.New("peer closed with messages unconfirmed")
	// ErrIncompatible: the peer's handshake carries parameters this end
	// cannot work with (protocol version, channel count).
	ErrIncompatible = errors.New("peer parameters incompatible")
	// ErrSpoofed: datagrams forged from the peer's address got past the
	// engine's checks and contradict the peer's own (two different
	// copies of one message): the association ends rather than deliver
	// data that may be forged.
	ErrSpoofed = errors.New("data forged from the peer's address")
)

// timeoutError is an error that reports Timeout() true, so that a
// *net.OpError wrapping it is a net.Error timeout, as with quic-go's idle
// timeout.
type timeoutError string

// Error returns the message.
func (e timeoutError) Error() string { return string(e) }

// Timeout reports true: the error is a timeout.
func (e timeoutError) Timeout() bool { return true }

// Temporary reports true, as net.Error timeouts do.
func (e timeoutError) Temporary() bool { return true }

// PeerCloser is implemented by engines that stay open for a while after
// taking the peer's close, to answer its repeats (POROUS's TIME-WAIT).
// PeerClosed reports whether the peer has closed: nothing more will be
// delivered, so that a reader can be told at once rather than when the
// engine reaches StateClosed. err is what Err will then report: nil for a
// graceful close, or an error wrapping ErrPeerClosed.
type PeerCloser interface {
	PeerClosed() (closed bool, err error)
}

// Unsupported returns an error wrapping ErrUnsupported that names what the
// protocol cannot carry, for Send to return: "send option not supported
// by protocol: lludp: channel 3 (only channel 0)".
func Unsupported(protocol, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrUnsupported, protocol, fmt.Sprintf(format, args...))
}

// TooLarge returns an error wrapping ErrMessageTooLarge that gives the
// message's size and the largest the protocol takes, both in bytes.
func TooLarge(protocol string, n, limit int) error {
	return fmt.Errorf("%w: %s: %d bytes, at most %d", ErrMessageTooLarge, protocol, n, limit)
}

// CheckParams returns the error of Send for options a protocol without
// channels, message numbers or Avara fields was given, nil if none is
// set; channels is how many channels the protocol has (1 for none).
func CheckParams(protocol string, opt SendOptions, channels int, numbers bool) error {
	switch {
	case int(opt.Channel) >= channels && channels == 1:
		return Unsupported(protocol, "channel %d (only channel 0)", opt.Channel)
	case int(opt.Channel) >= channels:
		return Unsupported(protocol, "channel %d (channels 0 to %d)", opt.Channel, channels-1)
	case opt.MessageNumber != 0 && !numbers:
		return Unsupported(protocol, "message number %#x (LLUDP only)", opt.MessageNumber)
	case opt.Params != (Params{}):
		return Unsupported(protocol, "Avara command and parameters (Avara only)")
	case opt.Delivery > Passive:
		return Unsupported(protocol, "delivery %d unknown", opt.Delivery)
	}
	return nil
}
