package avara

import (
	"log/slog"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"

	"github.com/rudpkit/rudp/trace"
)

// Defaults applied by New to zero Config fields (docs/protocols/avara.md §6).
const (
	// DefaultCram is the reference's default cram level, sent in the
	// Control message.
	DefaultCram = 3
	// MaxCram is the highest cram level.
	MaxCram = 3
	// DefaultAckDelay is how long after receiving a pure acknowledgement
	// goes out when nothing else does (docs/protocols/avara.md §3.2, §5).
	DefaultAckDelay = 41 * time.Millisecond
	// DefaultHandshakeTimeout is the reference client's login timeout.
	DefaultHandshakeTimeout = 3 * time.Second
	// DefaultServerHandshakeTimeout is how long a server session waits
	// after the Login for the client's acknowledgement of its TOC: the
	// reference client's 3 s login timeout, plus 1 s for the round trip
	// of a TOC sent just before it.
	DefaultServerHandshakeTimeout = 4 * time.Second
	// DefaultDeadTimeout ends a connection whose oldest unacknowledged
	// message has waited this long without any acknowledgement
	// (docs/protocols/avara.md §3.4).
	DefaultDeadTimeout = 120 * time.Second
	// DefaultLinger is how long a closing side keeps servicing the
	// connection until its messages are acknowledged, as the reference
	// (docs/protocols/avara.md §3.5).
	DefaultLinger = 20 * time.Second
	// MinMaxDatagram is the smallest accepted Config.MaxDatagram.
	MinMaxDatagram = 64
	// MaxClients is the most clients of a server (player ids 1..7).
	MaxClients = 7
	// MaxPassword is the longest password: a Pascal string's length byte.
	MaxPassword = 255
	// ReferenceSkipAfter is the reference's Config.SkipAfter at its
	// default 16 ms frame time: 4 / (16 ms / 64 ms).
	ReferenceSkipAfter = 16
)

// Config configures a Session. Zero fields take the defaults documented
// on them; a server session needs ClientID.
type Config struct {
	// Client makes this end log in to a server: its first message is the
	// Login (command −8, serial 0) carrying Seed and Password, and
	// nothing else is sent until the server's connection table (TOC)
	// gives it its id (docs/protocols/avara.md §3.1). Without Client the
	// session is a server's connection to one client.
	Client bool
	// Accept marks a server session created for a datagram from an
	// unknown address: that first datagram must be a Login with the
	// right password, else HandleDatagram returns an error wrapping
	// engine.ErrRejected (engine.ErrMalformed when it does not parse) and
	// the session, unchanged, stays in StateHandshake (the caller
	// discards it). Accept with Client is invalid. A server session,
	// Accept or not, is established only once the client acknowledged
	// the TOC (see Join).
	Accept bool
	// ClientID is the player id a server gives this client, 1..MaxClients
	// (the caller keeps ids unique among its clients). A client ignores
	// it and learns its id from the TOC.
	ClientID int8
	// Password is compared byte for byte with the Login's Pascal string
	// (a server), or sent in it (a client); at most MaxPassword bytes. A
	// wrong password gets no answer on the wire, as with the reference.
	Password []byte
	// LoginPad, when positive, is the least length of the Login's data:
	// zero bytes follow the password's Pascal string up to it, at most
	// MaxData. A server reads the password and ignores what follows, so
	// the padding changes nothing but the Login's size: a listener that
	// sends an unvalidated address at most a few times what it received
	// from it (as rudp's do) can then answer with the TOC at once.
	LoginPad int
	// Seed is the client's login seed, sent as p3 of the Login and echoed
	// in the TOC meant for it (the reference uses its tick count).
	Seed int32
	// Version is the network version the checksum covers
	// (docs/protocols/avara.md §1.3); default DefaultVersion (18). A peer
	// of another version is indistinguishable from a corrupting link.
	Version uint16
	// Cram is the cram level sent in the Control message, 0..MaxCram;
	// default DefaultCram (3). Use −1 for 0 (a zero field takes the
	// default).
	Cram int8
	// Table returns the peers' addresses a server sends in the TOC when
	// the client logs in; nil sends an empty table. See Session.SendTOC
	// for later tables.
	Table func() TOC
	// Join, on a server session, is called once the client acknowledged
	// its first TOC, which shows that it receives what is sent to its
	// address (validate.go); the session is then established. It returns
	// the client's player id, 1..MaxClients: ClientID, or another one
	// (the session then sends a TOC with that id and table t, and takes
	// the client's messages with either id in their sender byte); ok
	// false, or an id out of range, ends the session with an error
	// wrapping engine.ErrRejected. nil keeps ClientID. Called from
	// HandleDatagram.
	Join func() (id int8, t TOC, ok bool)
	// SkipAfter, when positive, mimics the reference receiver: once that
	// many messages are held behind a missing one, the missing serial is
	// skipped for good (docs/protocols/avara.md §3.3; ReferenceSkipAfter
	// is the reference's value). Each serial skipped is counted in
	// Stats.Skipped and logged at Debug level on Logger with its serial;
	// it is never delivered (nor counted in MessagesRecv), even if it
	// arrives later. A message held at the expected serial because
	// SetRecvOpen(false) refused it is never skipped. 0, the default,
	// never skips: delivery is strictly reliable and ordered.
	SkipAfter int
	// ReferencePeer adapts the session to a peer that may be the
	// reference program rather than this package (docs/protocols/avara.md
	// §3.2, §4.1; pacing.go):
	//   - a byte quota, as the reference's own sender: (min(Cram, the
	//     peer's cram level) + 1) × 3 bytes earned per millisecond (12 at
	//     the default levels, 3 until the peer's Control arrives), at most
	//     360 bytes banked, 12 + the datagram's length paid per datagram;
	//     a datagram carrying messages, new or resent, leaves only while
	//     the quota is not negative (pure acknowledgements are never held
	//     back, but pay);
	//   - at most ReferenceSkipAfter (16) messages outstanding, counted
	//     from the oldest unacknowledged one, so that a reference receiver
	//     never holds the 16 messages behind a gap at which it skips the
	//     gap for good (and acknowledges past it);
	//   - no AckMap: the reference sender tests map bits with a shift
	//     that wraps at 32, so any map can make it drop, unsent and for
	//     good, its messages 64 serials beyond a held one; the ack field
	//     alone is sent and the peer's timers resend what it holds;
	//   - after a message arrives, the acknowledgement goes out in 3
	//     datagrams, AckDelay plus the retransmit time apart (fewer when
	//     datagrams go out anyway): a reference sender that has resent 3
	//     times without hearing from us resends nothing more, so a lost
	//     last acknowledgement would leave its messages unacknowledged
	//     until its 120 s dead timeout;
	//   - Close: the Logout waits until everything before it is
	//     acknowledged, and the session ends a retransmit time after the
	//     Logout's second transmission instead of waiting out Linger for
	//     an acknowledgement the reference never sends (see
	//     Session.Close).
	// The congestion controller still applies: a datagram leaves when
	// both allow it. This costs throughput (about 12 KB/s and 16
	// messages per round trip): set it for game connections, not for
	// transfers between peers that both run this package (rudp's
	// streams). Off by default.
	ReferencePeer bool
	// ReliablePeer declares that the peer runs this package and resends
	// every message unchanged until acknowledged, as rudp's streams do.
	// The session then takes from the peer's address only what such a
	// peer can send (spoof.go): the checksums of the datagrams after the
	// Login cover the version mixed with the client's seed (both ends
	// must set ReliablePeer), two different copies of one serial end the
	// session with an error wrapping ErrSpoofed, and so do the peer's ack
	// fields staying behind one taken before for max(4 × RTO,
	// engine.ChallengeMin). Not for a peer that may be the reference,
	// whose checksums cover the version alone and whose ack fields go
	// back (§4.2). Off by default.
	ReliablePeer bool
	// ChallengeClose makes an established session challenge a close
	// (the peer's Logout, or a Kill naming a client) before taking it,
	// and a closing one refuse, unacknowledged, every new message but
	// the peer's own close once its Logout went out (challenge.go). A
	// blind attacker sending from the peer's address can then no longer
	// close the session: the live peer acknowledges the probe. A genuine
	// close is taken when the peer sends its Logout again after
	// max(2 × RTO, engine.ChallengeMin) without an answer. Only for peers
	// running this package with it (rudp's streams): a reference peer
	// keeps acknowledging for 20 s after its Logout, so its close would
	// be refused as spoofed for that long.
	ChallengeClose bool
	// MaxDatagram is the largest datagram Poll writes, in bytes, between
	// MinMaxDatagram and MaxDatagram (the default, 1024).
	MaxDatagram int
	// AckDelay is how long after a message arrives a pure acknowledgement
	// goes out when nothing else does; default DefaultAckDelay (41 ms).
	AckDelay time.Duration
	// AckRTT times resends with the RFC 6298 RTO from the
	// acknowledgements of messages sent once, at least RTOMin, instead of
	// the reference's estimator, which only learns from game frames
	// (command 17) and pings (31) and otherwise resends after 2 s. Only
	// the timing of resends changes; it suits peers that both run this
	// package, as rudp's streams do.
	AckRTT bool
	// RTOMin is the least resend timeout with AckRTT; default 10 ms.
	RTOMin time.Duration
	// HandshakeTimeout ends a client whose Login gets no TOC in time
	// (default DefaultHandshakeTimeout, 3 s), or a server whose client
	// does not acknowledge its TOC in time after the Login (default
	// DefaultServerHandshakeTimeout, 4 s), with an error wrapping
	// engine.ErrHandshakeTimeout. Negative means never.
	HandshakeTimeout time.Duration
	// DeadTimeout ends the session when its oldest unacknowledged message
	// has waited this long and nothing was acknowledged meanwhile; default
	// DefaultDeadTimeout (120 s).
	DeadTimeout time.Duration
	// IdleTimeout, when positive, ends the session with
	// engine.ErrIdleTimeout after this long without a datagram from the
	// peer. The protocol has no keepalive (docs/protocols/avara.md §3.5),
	// so only an application that sends regularly can use it. 0 means
	// never.
	IdleTimeout time.Duration
	// KeepAlive, when positive, queues a Ping (command 31, p3 0: a reliable
	// message the reference's game layer takes as a poke) once KeepAlive
	// has passed without a datagram from the peer, at most once per
	// KeepAlive; and a session with KeepAlive acknowledges a received
	// poke at once rather than after AckDelay, so that the pinging end
	// hears back within a round trip and the answering end's timer does
	// not fire. The UDP layer has no keepalive (docs/protocols/avara.md
	// §3.5): 0, the default, sends none. Pokes are delivered by Recv as
	// any message.
	KeepAlive time.Duration
	// Linger bounds StateClosing; default DefaultLinger (20 s).
	Linger time.Duration
	// MaxQueued bounds the messages accepted by Send and not yet
	// acknowledged; default engine.DefaultMaxQueued (1024), the
	// reference's transmit queue limit.
	MaxQueued int
	// Congestion selects the sender's congestion controller (BBR by
	// default). It paces datagrams carrying messages and bounds the bytes
	// in flight; nothing on the wire changes.
	Congestion congestion.Algorithm
	// Logger receives the congestion controller's events and the
	// serials skipped (SkipAfter) at Debug level; nil discards them.
	Logger *slog.Logger
	// Tracer, when not nil, receives the session's congestion events
	// (packets sent and lost, metrics, state changes) and its challenges
	// (package trace).
	Tracer *trace.ConnTracer
}
