package airhook

import (
	"io"
	"log/slog"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"

	"github.com/rudpkit/rudp/trace"
)

// Defaults applied by New to zero Config fields.
const (
	// DefaultMaxDatagram is the reference applications' datagram buffer
	// size (docs/protocols/airhook.md §1.4).
	DefaultMaxDatagram = 1500
	// MinMaxDatagram is the smallest accepted Config.MaxDatagram: a packet
	// with every header field, a full missed list and one 256-byte message.
	MinMaxDatagram = maxHeaderLen + 1 + maxMessageLen
	// DefaultRTOInitial, DefaultRTOMin and DefaultRTOMax bound the RFC 6298
	// retransmission timeout.
	DefaultRTOInitial = 250 * time.Millisecond
	DefaultRTOMin     = 10 * time.Millisecond
	DefaultRTOMax     = 5 * time.Second
	// MinTimeWait is the shortest quiet period (no datagram received) that
	// ends a graceful close; it is two RTOs when that is longer. It lets a
	// peer whose last confirmation from us was lost resend and be answered
	// (TCP's TIME-WAIT), so that it closes gracefully too.
	MinTimeWait = time.Second
)

// Config configures a Session. The zero value is usable: every zero field
// takes the default documented on it.
type Config struct {
	// Rand is the source of the random session ID; nil means crypto/rand.
	// It is read only by New, and only when Session is 0.
	Rand io.Reader
	// MaxDatagram is the largest datagram Poll writes, in bytes; default
	// DefaultMaxDatagram (1500), minimum MinMaxDatagram (527). A packet
	// carries as many queued messages as fit.
	MaxDatagram int
	// RTOInitial, RTOMin and RTOMax bound the retransmission timeout
	// (defaults 250 ms, 10 ms, 5 s). The reference uses a fixed 1 s
	// retransmit interval; this engine uses an RFC 6298 RTO in its place,
	// which stays compatible because only the timing of header repeats
	// depends on it. Setting all three to 1 s reproduces the reference.
	RTOInitial, RTOMin, RTOMax time.Duration
	// KeepAlive, when positive, makes an established session send a
	// probe after KeepAlive without receiving any datagram, and again
	// every KeepAlive: a new packet without messages that confirms nothing
	// new, which a peer running this package answers at once (a reference
	// peer confirms it with its next transmission), or a header repeat
	// when the sequence window is full. 0 disables it.
	KeepAlive time.Duration
	// IdleTimeout, when positive, closes the session with
	// engine.ErrIdleTimeout after IdleTimeout without receiving any
	// datagram. 0 means never.
	IdleTimeout time.Duration
	// HandshakeTimeout, when positive, closes the session with
	// engine.ErrHandshakeTimeout if the session handshake has not
	// completed HandshakeTimeout after New. 0 means never.
	HandshakeTimeout time.Duration
	// Linger is the longest time spent in StateClosing (default 5 s). When
	// it runs out with messages unconfirmed, Err wraps
	// engine.ErrLingerTimeout.
	Linger time.Duration
	// MaxQueued bounds Pending: Send returns engine.ErrQueueFull when
	// MaxQueued messages are pending (default 1024).
	MaxQueued int
	// RejectNewPeerSession, once a peer session is known, makes
	// HandleDatagram return engine.ErrPeerRestarted for a datagram carrying
	// a different session ID, without changing any state, so that the
	// caller can start a fresh association for the restarted peer. When
	// false the new session is adopted as the reference does (docs/protocols/airhook.md §3.9)
	// and counted in Stats.PeerRestarts.
	RejectNewPeerSession bool
	// NoChallenge takes a packet with a new peer session ID at once, as
	// the reference does, instead of first checking that the live session
	// is gone (see Session.challenged). One spoofed packet from the peer's
	// address then replaces the peer.
	NoChallenge bool
	// Congestion selects the sender's congestion controller: congestion.BBR
	// (the default) or congestion.AIMD. It paces the packets carrying
	// messages and bounds those unconfirmed; a packet whose messages the
	// peer reports missed counts as lost. Nothing on the wire changes.
	Congestion congestion.Algorithm
	// Session is this endpoint's own session ID. 0 means draw a random
	// nonzero ID from Rand. (0 is reserved on the wire,
	// docs/protocols/airhook.md §1.3.) It sits after the flags, where it
	// fills what would be padding.
	Session uint32
	// Logger receives the congestion controller's events at Debug level;
	// nil discards them.
	Logger *slog.Logger
	// Tracer, when not nil, receives the session's congestion events
	// (packets sent and lost, metrics, state changes) and its challenges
	// (package trace).
	Tracer *trace.ConnTracer
}
