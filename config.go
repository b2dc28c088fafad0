package rudp

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/rudpkit/rudp/internal/airhook"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/stream"
)

// Protocol selects the wire protocol (the reliability engine) a conn speaks.
// The zero value selects the default protocol, Airhook.
type Protocol uint8

const (
	// Airhook is the Airhook protocol (missed-message lists), wire-compatible
	// with the airhook-2 C library: messages of 1 to 256 bytes, reliable,
	// delivered exactly once but not in order. Streams add ordering on top.
	Airhook Protocol = 1
)

// String returns the protocol's name in lower case: "airhook", or
// "default" for the zero value.
func (p Protocol) String() string {
	switch p {
	case 0:
		return "default"
	case Airhook:
		return "airhook"
	}
	return fmt.Sprintf("protocol(%d)", uint8(p))
}

// ParseProtocol returns the Protocol named s ("airhook"), as printed by
// Protocol.String. It returns an error wrapping ErrUnknownProtocol for any
// other name.
func ParseProtocol(s string) (Protocol, error) {
	for _, p := range Protocols() {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("rudp: %w: %q", ErrUnknownProtocol, s)
}

// Protocols lists the protocols this version of rudp implements.
func Protocols() []Protocol { return []Protocol{Airhook} }

// Default values of the Config fields.
const (
	DefaultMTU              = 1400
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultIdleTimeout      = 30 * time.Second
	DefaultKeepAlive        = 5 * time.Second
	DefaultLinger           = 10 * time.Second
	DefaultRecvWindow       = 1 << 20
	DefaultSendBuffer       = 1 << 20
	DefaultBacklog          = 128
	DefaultMaxRecvQueue     = 1024
)

// Config configures conns and listeners. A nil *Config, and every zero
// field, means the documented default. A Config may be shared by several
// conns and must not be modified after use.
type Config struct {
	// Protocol is the wire protocol. Zero means Airhook.
	Protocol Protocol

	// MTU is the largest datagram sent, in bytes (UDP payload). Default
	// DefaultMTU (1400), which stays below common path MTUs; the minimum is
	// 576 and Airhook's maximum is 1500 (the reference's buffer size).
	MTU int

	// HandshakeTimeout bounds Dial, Handshake and a listener's wait for a
	// new peer to complete its handshake. Expiry fails with
	// ErrHandshakeTimeout. Default 10 s.
	HandshakeTimeout time.Duration

	// IdleTimeout is how long a conn lives without receiving any datagram
	// from its peer before it fails with ErrIdleTimeout. Default 30 s.
	IdleTimeout time.Duration

	// KeepAlive is how long a conn may go without receiving before it sends
	// a probe that the peer must answer, so an idle but healthy association
	// does not reach IdleTimeout. Default 5 s; it is capped at a third of
	// IdleTimeout.
	KeepAlive time.Duration

	// Linger bounds how long Close keeps delivering data already accepted by
	// Write, and waits for the peer to finish, before the association is
	// abandoned (the peer then sees a reset). Close itself never blocks.
	// Default 10 s.
	Linger time.Duration

	// RecvWindow is a stream's receive buffer in bytes: the flow-control
	// window advertised to the peer. Default 1 MiB; 4 KiB to 1 GiB.
	RecvWindow int

	// SendBuffer is how many bytes a stream's Write may queue beyond what
	// the peer's window allows; Write blocks when it is full. Default 1 MiB;
	// 4 KiB to 1 GiB.
	SendBuffer int

	// Backlog bounds a listener's new peers: those still in their handshake
	// plus those waiting for Accept. Datagrams from further new peers are
	// dropped (counted) until Accept makes room. Default 128.
	Backlog int

	// MaxRecvQueue bounds the messages a message conn holds for ReadMessage
	// (it may exceed it by the messages of one datagram). When it is full,
	// further datagrams from the peer are left unprocessed (the peer sees
	// no confirmation and sends again later), so nothing is lost and memory
	// stays bounded. Default 1024.
	MaxRecvQueue int

	// Logger receives debug events (new peers, drops, resets). Default: no
	// logging.
	Logger *slog.Logger

	// Rand is the source of session identifiers. Default crypto/rand.
	Rand io.Reader
}

// resolved returns a copy of c with every default filled in, or an error
// for an invalid field.
func (c *Config) resolved() (*Config, error) {
	var r Config
	if c != nil {
		r = *c
	}
	if r.Protocol == 0 {
		r.Protocol = Airhook
	}
	if r.Protocol != Airhook {
		return nil, fmt.Errorf("rudp: %w: %v", ErrUnknownProtocol, r.Protocol)
	}
	setDefault(&r.MTU, DefaultMTU)
	if r.MTU < 576 || r.MTU > 1500 {
		return nil, fmt.Errorf("rudp: Config.MTU %d out of range 576..1500", r.MTU)
	}
	setDefault(&r.HandshakeTimeout, DefaultHandshakeTimeout)
	setDefault(&r.IdleTimeout, DefaultIdleTimeout)
	setDefault(&r.KeepAlive, DefaultKeepAlive)
	r.KeepAlive = min(r.KeepAlive, r.IdleTimeout/3)
	setDefault(&r.Linger, DefaultLinger)
	setDefault(&r.RecvWindow, DefaultRecvWindow)
	setDefault(&r.SendBuffer, DefaultSendBuffer)
	setDefault(&r.Backlog, DefaultBacklog)
	setDefault(&r.MaxRecvQueue, DefaultMaxRecvQueue)
	if min(r.RecvWindow, r.SendBuffer) < 4096 || max(r.RecvWindow, r.SendBuffer) > stream.MaxBuffer {
		return nil, fmt.Errorf("rudp: Config.RecvWindow and SendBuffer must be 4096 bytes to 1 GiB")
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	return &r, nil
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// newEngine builds the protocol engine for one association. stream selects
// rudp's stream semantics, where a restarted peer ends the association
// instead of being adopted silently.
func (c *Config) newEngine(now time.Time, stream bool) (engine.Engine, error) {
	return airhook.New(now, airhook.Config{
		Rand:                 c.Rand,
		MaxDatagram:          c.MTU,
		KeepAlive:            c.KeepAlive,
		IdleTimeout:          c.IdleTimeout,
		HandshakeTimeout:     c.HandshakeTimeout,
		Linger:               c.Linger,
		RejectNewPeerSession: stream,
	})
}
