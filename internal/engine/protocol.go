package engine

import (
	"crypto/rand"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/trace"
)

// Protocol describes one wire protocol to the package above the engines:
// everything that package needs of a protocol besides the Engine
// methods, so that it keeps a table of protocols and no code of its own
// per protocol. Each engine package exports one (airhook.Protocol,
// porous.Protocol, …). Name, IsOpening, Validate, New, Describe and
// Handshake are required; the other function fields may be nil, meaning
// the protocol has no such feature. Opts is the protocol's own options,
// the type its package defines (its zero value where the package above
// gave none).
//
// A message listener takes an engine's leaving StateHandshake as proof
// that the peer receives what this end sends, unless the engine is a
// Prover: an engine whose server side leaves the handshake on the
// client's first datagram must implement Prover. A stream's frames are
// at most 1500 bytes with Stream.Prefix, so Capabilities.MaxMessage of a
// stream's engine (Setup.Stream) must stay within that.
type Protocol struct {
	// Name is the protocol's name in lower case ("porous").
	Name string
	// IsOpening reports whether p, from an address with no association,
	// can open one at a listener; anything else is dropped before an
	// engine is built.
	IsOpening func(p []byte, opts any) bool
	// OpeningID returns the random identifier that an opening datagram
	// (IsOpening) carries and that stays the same when the opening is sent
	// again (a nonce, session ID, circuit code, peer ID or seed); false
	// when p holds none. Two Transports dialing each other at once each
	// compare theirs with the peer's, to agree on which becomes the
	// server (simultaneous open). It is nil where the handshake is
	// symmetric and settles a simultaneous open itself: each end's
	// opening answers the other's (POROUS's Connect, Airhook's session
	// IDs), and an answer may itself look like an opening.
	OpeningID func(p []byte) (uint64, bool)
	// Refusal returns the datagrams that answer an opening this end
	// cannot accept, holding no state for the peer (nil: none; the
	// caller sends them only within the amplification limit).
	Refusal func(opts any) [][]byte
	// Validate checks the protocol's options and the common settings
	// against the protocol's limits; its errors name the Config field.
	Validate func(s *Setup) error
	// New builds the engine of one association (see Setup).
	New func(s *Setup) (Engine, error)
	// Stream is how a stream's frames ride on the protocol's messages.
	Stream StreamCarrier
	// Header, when not nil, is the header a message conn's Read returns
	// before a message's data and Write takes, for the message fields
	// that are not data (LLUDP's message number, Avara's command and
	// parameters).
	Header *MessageHeader
	// Describe decodes one of the protocol's datagrams for a tracer.
	Describe func(b []byte) trace.Datagram
	// Handshake names, for a handshake timeout's error, what was tried
	// ("porous stream handshake (Config.Channels 1)"; what is "stream"
	// or "message conn"), the likely causes of the peer's silence, and
	// any further hint ("" if none).
	Handshake func(opts any, what string) (tried, causes, hint string)
	// NewListener returns the state a listener of message conns shares
	// among its associations (Setup.Listener), or is nil.
	NewListener func() Roster
}

// StreamCarrier is how a protocol carries a stream's frames.
type StreamCarrier struct {
	// Send are the send options of every frame.
	Send SendOptions
	// Prefix precedes each frame in its message (nil: nothing).
	Prefix []byte
	// IsFrame reports whether a delivered message carries a frame (a
	// stream ignores other messages); nil: every message does.
	IsFrame func(m Message) bool
}

// Carries reports whether a delivered message carries a frame.
func (c *StreamCarrier) Carries(m Message) bool { return c.IsFrame == nil || c.IsFrame(m) }

// MessageHeader is the header of a message in the byte form of a message
// conn's Read and Write.
type MessageHeader struct {
	// Put writes m's header into dst (MaxHeaderLen bytes) and returns its
	// length.
	Put func(dst []byte, m Message) int
	// Parse reads the header at the front of p into a message whose Data
	// is the rest of p; it fails (wrapping ErrUnsupported) if p is too
	// short for a header.
	Parse func(p []byte) (Message, error)
}

// MaxHeaderLen is the longest MessageHeader, in bytes.
const MaxHeaderLen = 16

// Setup is what an engine is built from: the common settings of the
// package above, resolved (no zero means a default here), and the
// protocol's own options.
type Setup struct {
	// Now is the engine's start.
	Now time.Time
	// Peer is the remote address; what the engine logs names it.
	Peer net.Addr
	// Stream selects rudp's stream semantics: the peer is rudp, a
	// restarted peer ends the association instead of being adopted.
	Stream bool
	// Accept is set for a listener's association, created by a datagram
	// from an unknown address.
	Accept bool
	// Overhead is what the layer above adds to each of a stream's
	// datagrams, in bytes: the engine's datagrams are that much shorter.
	Overhead int

	// The common settings, rudp's Config fields of the same names,
	// resolved: each engine maps them onto its own Config (a message
	// conn may keep its reference's timing instead, as its package says).
	Rand             io.Reader // nil: crypto/rand
	Congestion       congestion.Algorithm
	Logger           *slog.Logger      // never nil
	Tracer           *trace.ConnTracer // nil: no tracing
	MTU              int               // bytes, IP and UDP headers excluded, 576..1500
	KeepAlive        time.Duration     // probe the peer after this long without receiving
	IdleTimeout      time.Duration     // end after this long without receiving
	HandshakeTimeout time.Duration     // bound on the handshake
	Linger           time.Duration     // bound on a graceful close
	MaxMessage       int               // bytes (Config.MaxMessage)
	MaxRecvWindow    int               // bytes: a stream's receive window at most
	ResendLimit      int               // sends of a packet; 0: the protocol's default

	// Options are the protocol's own options (Protocol's opts).
	Options any
	// Listener is the state a listener shares among its associations
	// (Protocol.NewListener), nil on dialed conns and for streams.
	Listener Roster
}

// StreamKeepAlive is how long a stream's engine goes without receiving
// before it probes the peer. The dialing side probes after KeepAlive,
// the accepting side only after twice that: on an idle stream the
// dialer's probes, and their answers, keep both ends alive, one exchange
// per KeepAlive, and the accepting side probes only when the dialer's
// probes stop arriving (still within the idle timeout, at least 3 ×
// KeepAlive). The dialer is usually the side behind a NAT, whose binding
// its probes refresh.
func (s *Setup) StreamKeepAlive() time.Duration {
	if s.Accept {
		return 2 * s.KeepAlive
	}
	return s.KeepAlive
}

// Random64 draws 64 random bits from Rand (see Random64).
func (s *Setup) Random64() uint64 { return Random64(s.Rand) }

// Random64 draws 64 random bits from r, or from crypto/rand when r is
// nil or fails.
func Random64(r io.Reader) uint64 {
	var b [8]byte
	if r == nil || func() error { _, err := io.ReadFull(r, b[:]); return err }() != nil {
		_, _ = rand.Read(b[:]) // never fails (crypto/rand.Read)
	}
	return binary.BigEndian.Uint64(b[:])
}

// OptionsOf returns opts as a T, or T's zero value when opts is nil (a
// protocol used without options of its own).
func OptionsOf[T any](opts any) T {
	o, _ := opts.(T)
	return o
}

// LargeFramer is implemented by engines that can send datagrams above
// their protocol's usual bound to a peer known to take them over a path
// known to carry them (POROUS's large frames, between rudp stream peers
// on one host).
type LargeFramer interface {
	// FrameSizes returns the protocol's usual largest datagram and the
	// largest one SetMaxFrame allows, in bytes; large is at most
	// MaxLargeDatagram less the layer above's overhead.
	FrameSizes() (usual, large int)
	// SetMaxFrame lets new datagrams grow to n bytes.
	SetMaxFrame(n int)
	// LargeDue reports whether Poll may now write a datagram above the
	// usual bound: new data beyond one usual datagram is queued, or a
	// large datagram lost awaits its resend. Otherwise a Poll buffer of
	// the usual size does: Poll writes no datagram larger than its
	// buffer, and leaves a resend that does not fit it for a later Poll
	// with a larger one.
	LargeDue() bool
}

// MaxLargeDatagram bounds every LargeFramer's datagrams, the layer
// above's overhead included, in bytes: what one UDP datagram carries over
// IPv6 through a 65,536-byte loopback MTU (65,536 − 40 − 8).
const MaxLargeDatagram = 65536 - 40 - 8

// Roster is the state a listener of message conns shares among its
// associations when the protocol has one (Protocol.NewListener returns
// it): the listener tells it which conn each engine it built serves, and
// when one ends.
type Roster interface {
	// Join tells that conn c serves engine e, built with this roster.
	Join(e Engine, c RosterConn)
	// Leave tells that one of the listener's conns ended.
	Leave()
	// Drop forgets what New reserved for e, an engine that refused the
	// datagram it was built for and is discarded.
	Drop(e Engine)
}

// RosterConn is one of a listener's conns as its Roster sees it.
type RosterConn interface {
	// Ended reports whether the conn's association has ended.
	Ended() bool
	// Locked runs f with the association's lock held, unless the
	// association has ended, and then sends what f queued.
	Locked(f func())
}
