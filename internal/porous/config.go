package porous

import (
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"

	"github.com/rudpkit/rudp/trace"
)

// Priority is a channel's local send priority (paper §3.1, docs/protocols/porous.md §3.3):
// messages of High channels are put in frames before those of Low
// channels. It is never sent on the wire (docs/protocols/porous.md §2 row 16).
type Priority uint8

// Priorities.
const (
	High Priority = iota
	Low
)

// Defaults applied by New to zero Config fields, and fixed timers.
const (
	// DefaultMaxPacket is the default largest packet, in bytes: 1 MiB.
	DefaultMaxPacket = 1 << 20
	// DefaultMaxQueuedBytes is the default bound on the bytes of pending
	// messages: 4 MiB.
	DefaultMaxQueuedBytes = 4 << 20
	// DefaultKeepAlive is the ping interval of the reference (docs/protocols/porous.md §3.7).
	DefaultKeepAlive = time.Second
	// DefaultIdleTimeout is the reference's watchdog (docs/protocols/porous.md §3.7).
	DefaultIdleTimeout = 20 * time.Second
	// DefaultMaxUnreliableDelay is the default Config.MaxUnreliableDelay.
	DefaultMaxUnreliableDelay = 100 * time.Millisecond
	// ConnectInterval is how often an unacknowledged Connect is sent
	// (docs/protocols/porous.md §3.2).
	ConnectInterval = 500 * time.Millisecond
	// DisconnectInterval is how often an unacknowledged Disconnect is sent
	// (docs/protocols/porous.md §3.8).
	DisconnectInterval = 500 * time.Millisecond
	// MinTimeWait is the shortest time a session that answered the peer's
	// Disconnect keeps answering repeats of it before StateClosed; it is
	// two RTOs when that is longer.
	MinTimeWait = time.Second
	// NoBandwidthLimit is the default of MaxRxBandwidth and
	// MaxTxBandwidth: no limit.
	NoBandwidthLimit = math.MaxUint32
)

// Config configures a Session. The zero value is usable: every zero field
// takes the default documented on it.
type Config struct {
	// Nonce is this end's random 32-bit ID for the handshake (docs/protocols/porous.md §3.2).
	// It also starts the peer's frame numbering. 0 means draw one from
	// Rand.
	Nonce uint32
	// Rand is the source of the nonce; nil means crypto/rand. It is read
	// only by New, and only when Nonce is 0.
	Rand io.Reader
	// Channels is the number of channels, 1..256 (default 1). It must
	// equal the peer's: a Connect with another count ends the session
	// with an error wrapping engine.ErrIncompatible (docs/protocols/porous.md §3.2).
	Channels int
	// Priorities gives each channel's local send priority; at most
	// Channels entries, missing ones are High. A Low channel sends only
	// when no High channel has anything to send.
	Priorities []Priority
	// SendOrder picks the channel whose message goes out next among those
	// of one priority: RoundRobin (the default) or Arrival (the
	// reference's order).
	SendOrder SendOrder
	// Weights gives each channel's share under RoundRobin, 1 to 255 (a
	// channel of weight 2 sends twice the bytes of one of weight 1 when
	// both have data); at most Channels entries, missing ones are 1.
	Weights []int
	// MaxUnreliableDelay is how long an Unreliable packet may wait to be
	// sent: one still unsent after it is dropped, counted in
	// Stats.Expired, rather than sent late. Default 100 ms; negative
	// means no limit. Reliable and Passive packets never expire.
	MaxUnreliableDelay time.Duration
	// MaxPacket is the largest message Send accepts and the largest packet
	// reassembled, in bytes (default 1 MiB, at most MaxPacketLimit).
	// Incoming packets larger than that, or announcing more fragments
	// than it needs, are consumed without delivery (docs/protocols/porous.md §3.6 "duds"),
	// counted in Stats.TooLarge and logged at Debug to Logger.
	MaxPacket int
	// MaxQueued bounds Pending: Send returns engine.ErrQueueFull when
	// MaxQueued messages are pending (default 1024), except that with
	// round-robin sending a channel with nothing unsent may add one
	// message of at most FragmentSize bytes, up to Channels such messages
	// beyond the bound (see Session.Send).
	MaxQueued int
	// MaxQueuedBytes bounds the bytes of pending messages: Send returns
	// engine.ErrQueueFull when the message would take them above it
	// (default 4 MiB), with the same exception, up to Channels ×
	// FragmentSize bytes beyond it. A message is always admitted when
	// nothing is pending.
	MaxQueuedBytes int
	// MaxRxBandwidth is the receive rate advertised in Connect, in
	// bytes/s (default NoBandwidthLimit). The peer limits its sending to
	// it (docs/protocols/porous.md §2 row 5).
	MaxRxBandwidth uint32
	// MaxTxBandwidth is this end's send rate limit in bytes/s (default
	// NoBandwidthLimit). The effective limit is the smaller of it and the
	// peer's advertised MaxRxBandwidth; it caps the congestion window at
	// RTT × limit (docs/protocols/porous.md §3.3).
	MaxTxBandwidth uint32
	// Accept marks a session created for a datagram from an unknown
	// address: until a compatible Connect is accepted, every other
	// datagram makes HandleDatagram return an error wrapping
	// engine.ErrRejected without changing any state, and the session sends
	// nothing.
	Accept bool
	// KeepAlive is the ping interval while connected (default 1 s, the
	// reference's; docs/protocols/porous.md §3.7). Pings measure the RTT and keep the peer's
	// watchdog quiet.
	KeepAlive time.Duration
	// PingWhenQuiet makes the session ping only once KeepAlive has passed
	// without a frame from the peer (and every KeepAlive while that
	// lasts), rather than every KeepAlive whatever arrives, as the
	// reference does. An idle session then wakes only for its pings, and
	// the peer's pings, which it answers, spare it its own. The first
	// ping, at once after the handshake, still goes: its answer is the
	// first RTT sample.
	PingWhenQuiet bool
	// IdleTimeout is the watchdog (default 20 s, the reference's; negative
	// disables it). It is reset by every datagram from the peer that
	// decodes, which is more lenient than the reference's PingAck-only
	// reset (docs/protocols/porous.md §2 row 9). When it runs out the session ends with
	// engine.ErrIdleTimeout, or engine.ErrHandshakeTimeout while the
	// handshake is incomplete. A channel that holds packets it cannot
	// deliver, its base unmoved, for IdleTimeout also ends the session,
	// with an error wrapping engine.ErrIdleTimeout and ErrStalled,
	// whatever else arrives: the packet it waits for is not coming.
	IdleTimeout time.Duration
	// HandshakeTimeout, when positive, ends the session with
	// engine.ErrHandshakeTimeout if it is not connected HandshakeTimeout
	// after New. 0 means never (the IdleTimeout watchdog still applies).
	HandshakeTimeout time.Duration
	// Linger is the longest time spent in StateClosing (default 5 s). When
	// it runs out with messages unconfirmed, Err wraps
	// engine.ErrLingerTimeout.
	Linger time.Duration
	// RejectNewPeerSession: while connected, a Connect carrying a nonce
	// other than the peer's makes HandleDatagram return
	// engine.ErrPeerRestarted without changing any state, so that the
	// caller can start a fresh association. When false the Connect is
	// acknowledged as the reference does (docs/protocols/porous.md §3.2) and counted in
	// Stats.PeerRestarts. A repeat of the peer's own Connect is always
	// just acknowledged again.
	RejectNewPeerSession bool
	// NoChallenge acts on a Disconnect, or a Connect with a new nonce,
	// received while connected at once, as the reference does, instead of
	// first asking the live session with a Ping (see Session.challenged).
	// One spoofed datagram from the peer's address then ends the session.
	NoChallenge bool
	// AckOnce lists each frame ID in a single DataAck, as the reference
	// does. By default the IDs of the previous DataAck are listed again in
	// the next one, so that a lost DataAck does not cost resends; the
	// reference ignores IDs of frames it no longer holds
	// (docs/protocols/porous.md §3.3).
	AckOnce bool
	// Congestion selects the congestion controller: congestion.BBR (the
	// default: pacing, loss detected by RACK within about a round trip) or
	// congestion.AIMD (the paper's window, loss detected by timeout only,
	// docs/protocols/porous.md §3.3). It changes nothing on the wire.
	Congestion congestion.Algorithm
	// LargeFrames makes the session take Data frames of up to
	// LargeFrameSize bytes, beyond the reference's MaxFrameSize (other
	// frames keep that bound). It is for peers that send them only when
	// told they may (see Session.SetMaxFrame): rudp streams, never the
	// reference.
	LargeFrames bool
	// Overhead is how many bytes the layer below adds to each datagram (a
	// rudp stream's seal), in [0, 64]: the frames a lost large frame is
	// split into, and new frames once large frames are given up (see
	// Session.SetMaxFrame), are at most MaxFrameSize − Overhead bytes, so
	// that each still fits a datagram of the usual size.
	Overhead int
	// ReliablePeer declares that the peer sends every packet Reliable, as
	// a rudp stream does: each of its frames is resent until acknowledged,
	// and each packet of a channel waits for the one before. The session
	// then takes from the peer only what such a peer can send (see
	// spoof.go): Data frames less than RxAhead numbers beyond the oldest
	// one it has not delivered, and each channel's packets strictly in
	// order, never skipping one; Sentinels, and fragments of packets
	// larger than MaxPacket, are ignored (the peer's MaxPacket must not
	// exceed this end's). A blind attacker spoofing the peer's address
	// then needs about 2^32 / RxAhead datagrams to have one frame taken,
	// and such a frame can neither skip a packet nor make the peer's
	// later packets duplicates, except by carrying the very next packet
	// of a channel; two different copies of one packet end the session
	// with an error wrapping ErrSpoofed. Leave it off for a peer that may
	// send Unreliable or Passive packets (the reference): the reference's
	// windows and skips then apply.
	ReliablePeer bool
	// Logger receives debug events: incoming packets dropped for being
	// larger than MaxPacket, large frames given up (see
	// Session.SetMaxFrame), and the congestion controller's events. nil
	// discards them.
	Logger *slog.Logger
	// Tracer, when not nil, receives the session's congestion events
	// (packets sent and lost, metrics, state changes) and its challenges
	// (package trace).
	Tracer *trace.ConnTracer
}
