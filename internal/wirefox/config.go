package wirefox

import (
	"io"
	"log/slog"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"

	"github.com/rudpkit/rudp/trace"
)

// ChannelMode is how a channel other than 0 delivers its messages
// (docs/protocols/wirefox.md §3.5).
type ChannelMode uint8

const (
	// Unordered: messages are delivered as they arrive (sequence 0 on the
	// wire).
	Unordered ChannelMode = iota
	// Ordered: messages are delivered in the order they were sent; a gap
	// holds the later ones back until it is filled.
	Ordered
	// Sequenced: a message older than the newest delivered is dropped;
	// the others are delivered at once.
	Sequenced
)

// String returns "unordered", "ordered" or "sequenced".
func (m ChannelMode) String() string {
	switch m {
	case Unordered:
		return "unordered"
	case Ordered:
		return "ordered"
	case Sequenced:
		return "sequenced"
	}
	return "mode(?)"
}

// Defaults and limits of Config (docs/protocols/wirefox.md §6).
const (
	// MaxChannels is the most channels of Config.Channels (1..255 on the
	// wire; channel 0 is always there).
	MaxChannels = 255
	// MinMaxDatagram is the smallest Config.MaxDatagram: a 1200-byte
	// segment with its largest headers.
	MinMaxDatagram = 7 + 23 + SegmentSize
	// DefaultSendLimit is the reference's number of sends of a reliable
	// packet (docs/protocols/wirefox.md §3.4).
	DefaultSendLimit = 6
	// DefaultKeepAlive is how long the session may go without hearing
	// from the peer before it sends a keepalive datagram.
	DefaultKeepAlive = 5 * time.Second
	// DefaultIdleTimeout ends a session without any datagram from the
	// peer for that long.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultMaxRecvBuffer bounds the memory held for reassembly and
	// ordering (see Config.MaxRecvBuffer): 32 MiB, room for the small
	// tails of tens of thousands of messages the reference sends ahead of
	// their first segments.
	DefaultMaxRecvBuffer = 2 * MaxMessage
	// HandshakeInterval and HandshakeAttempts are the reference's
	// handshake resend timing (docs/protocols/wirefox.md §3.2).
	HandshakeInterval = 2 * time.Second
	HandshakeAttempts = 4
)

// Config configures a Session. The zero value is a server with no
// channel but channel 0 and every default.
type Config struct {
	// PeerID is this end's PeerID; 0 draws one from Rand.
	PeerID uint64

	// Rand is the source of the PeerID, and with Encrypt of the
	// per-connection key-exchange key pairs, the datagram nonces and the
	// identity challenge (crypto/rand when nil). When it fails, New or
	// the session fails with its error.
	Rand io.Reader

	// Identity is a server's long-term key pair, with which it answers a
	// client's identity challenge. A server without one, or with another,
	// answers a challenge it cannot open as the reference's server does,
	// with an AUTH_MSG of state AUTHENTICATION without the answer, which
	// the client takes as INCORRECT_REMOTE_IDENTITY, and ends with an
	// error wrapping engine.ErrIncompatible. Requires Encrypt; not for a
	// client.
	Identity *KeyPair

	// ServerKey is, for a client, the server's long-term public key: the
	// client sends it a sealed 64-byte challenge and fails with
	// ErrIncorrectRemoteIdentity unless the server answers it. Nil: no
	// challenge. Requires Encrypt and Client.
	ServerKey *[KeySize]byte

	// Channels is the channel table: Channels[i] is the mode of channel
	// i+1, created in that order by the reference's application
	// (docs/protocols/wirefox.md §3.5). Channels are not negotiated: the
	// table must mirror the peer's. At most MaxChannels entries.
	Channels []ChannelMode

	// MaxDatagram is the largest datagram Poll writes, in bytes: MTU
	// (1300) by default, MinMaxDatagram to MTU.
	MaxDatagram int

	// MaxMessage is the largest message blob (command byte included) Send
	// takes and the receiver reassembles, in bytes; default and maximum
	// MaxMessage (16 MiB). A longer message from the peer is dropped
	// (Stats.TooLarge).
	MaxMessage int

	// MaxQueued bounds the messages accepted by Send and not yet
	// acknowledged (engine.ErrQueueFull); default engine.DefaultMaxQueued (1024).
	MaxQueued int

	// MaxRecvBuffer bounds the memory held for reassembly and for ORDERED
	// channels waiting for a gap, in bytes, each entry counted at its
	// footprint: 512 per message being reassembled, 64 per segment and
	// per ORDERED message held, plus the capacity of its bytes (empty
	// ones included). Default DefaultMaxRecvBuffer, or the footprint of a
	// message of MaxMessage bytes if larger, and at least that. A packet
	// that would go beyond is refused: not acknowledged, counted in
	// Stats.Refused, the first of a run logged at Debug; the peer sends it
	// again (the reference gives up after 6 sends). The next message of an
	// ORDERED channel may go beyond by the footprint of one message of
	// MaxMessage bytes, so that its channel always moves.
	MaxRecvBuffer int

	// SendLimit is how many times a reliable packet is sent before the
	// session fails with engine.ErrRetransmitLimit: DefaultSendLimit (6,
	// the reference) when 0; negative means unlimited (IdleTimeout ends a
	// dead session).
	SendLimit int

	// KeepAlive: after this long without a datagram from the peer (and
	// at most once per KeepAlive) the session sends a keepalive, a data
	// datagram (DAT|LNK) that carries no packet, only two zero bytes of
	// data section, sent once; the peer acknowledges it as any data
	// datagram: the reference (its parser reads no packet from fewer than
	// 7 bytes, docs/protocols/wirefox.md §3.3) and this package, which
	// with a KeepAlive acknowledges it at once rather than after 10 ms.
	// Default DefaultKeepAlive, negative for none.
	KeepAlive time.Duration

	// IdleTimeout ends the session with engine.ErrIdleTimeout after this
	// long without an accepted datagram; default DefaultIdleTimeout,
	// negative for never. The reference has none.
	IdleTimeout time.Duration

	// HandshakeTimeout, when positive, ends the handshake with
	// engine.ErrHandshakeTimeout that long after it began, its messages
	// repeated every 2 s until then; zero: the reference's 4 attempts 2 s
	// apart, then an error wrapping engine.ErrHandshakeTimeout.
	HandshakeTimeout time.Duration

	// Linger bounds StateClosing; default engine.DefaultLinger (5 s).
	Linger time.Duration

	// Client makes this end send INITIAL_CLIENT (docs/protocols/wirefox.md
	// §3.2). Without it the session is a server waiting for one.
	Client bool

	// Accept marks a server session created for a datagram from an
	// unknown address: that first datagram must be an INITIAL_CLIENT, else
	// HandleDatagram returns an error wrapping engine.ErrRejected or
	// engine.ErrMalformed and the session stays unchanged (the caller
	// discards it). Accept with Client is invalid.
	Accept bool

	// Encrypt encrypts the connection (docs/protocols/wirefox.md §1.7,
	// §3.8): the handshake exchanges fresh X25519 keys, then every
	// datagram is sealed, 40 bytes longer. Both ends must agree; a server
	// answers a mismatch with ERROR_OCCURRED INCOMPATIBLE_SECURITY and
	// both end with an error wrapping engine.ErrIncompatible.
	Encrypt bool

	// Challenge makes an established session challenge a
	// DISCONNECT_REQUEST before acting on it, as it always does a new
	// INITIAL_CLIENT from the peer's address (see the package doc). Only
	// for peers running this package: the reference keeps acknowledging
	// after its DISCONNECT_REQUEST, so its genuine close would be
	// refused.
	Challenge bool

	// RepeatAcks makes each ack-only datagram carry, after the ACKs owed,
	// those of the previous ack-only datagram again, as far as the list's
	// 256 entries allow, so that one lost ack-only datagram costs no
	// resends. An ACK of a datagram already acknowledged is ignored here;
	// for peers running this package.
	RepeatAcks bool

	// ReferencePeer suits a peer that may be the reference. The packet
	// duplicate history remembers 1,048,576 packet IDs rather than 65,536
	// (128 KiB while in use), as the reference may send packets of its
	// whole queue ahead of the first (DatagramBuilder::MakeDatagram). And
	// the sender keeps to the reference's own pace
	// (docs/protocols/wirefox.md §3.4), as the reference cannot take
	// datagrams much faster than it sends them: at most
	// one datagram of any kind (data, ack-only, out-of-band) per 5 ms
	// write cycle, a datagram carrying packets no sooner than 7.5 ms
	// after the previous datagram (off the beat of the reference's 5 ms
	// worker timer, at which its ack-only datagram races its socket
	// thread over the ACK list: refDataGap), and new packets only within
	// the reference's congestion
	// window: 1300 bytes, ssthresh 65,536; per ACK received + 1300 while
	// the window is at most ssthresh, else + 1300²/window + 162; per
	// datagram received carrying NAKs ssthresh = max(window/2, 2600) and
	// window = 1300. In flight count the bytes of every connected
	// datagram sent, ack-only ones included, until acknowledged or 16
	// average RTTs old (all of them before the first RTT sample), at most
	// 4096 datagrams (beyond, the oldest leaves the count). Resent packets
	// are not held back by the window. Config.Congestion still applies.
	// Off (the default), datagrams go out as the congestion controller
	// allows and the packet history is 65,536 IDs: right between peers
	// running this package.
	ReferencePeer bool

	// ProvenAbove says that the layer above proves a client's address
	// itself (rudp's streams: the client echoes a random token): an
	// unencrypted server is then established on UNENCRYPTED_ACK, as the
	// reference's is, instead of first waiting for the client to
	// acknowledge a probe (see Session.proves), which would drop the
	// client's first data and cost it a resend.
	ProvenAbove bool

	// Congestion selects the sender's congestion controller.
	Congestion congestion.Algorithm

	// Logger receives the congestion controller's events; nil discards.
	Logger *slog.Logger

	// Tracer, when not nil, receives the session's congestion events
	// (packets sent and lost, metrics, state changes) and its challenges
	// (package trace).
	Tracer *trace.ConnTracer
}
