package rudp

import (
	"crypto/ecdh"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/rudpkit/rudp/internal/engine"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/stream"

	"github.com/rudpkit/rudp/qlog"
	"github.com/rudpkit/rudp/trace"
)

// Default values of the Config fields.
const (
	DefaultMTU              = 1400 // bytes of UDP payload
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultIdleTimeout      = 60 * time.Second // 3 × DefaultKeepAlive
	DefaultKeepAlive        = 20 * time.Second // see Config.KeepAlive
	DefaultLinger           = 10 * time.Second
	DefaultRecvWindow       = 1 << 20  // bytes
	DefaultMaxRecvWindow    = 16 << 20 // bytes
	DefaultSendBuffer       = 1 << 20  // bytes
	DefaultBacklog          = 128      // new peers
	DefaultMaxRecvBuffer    = 8 << 20  // bytes
	// DefaultMaxUnreliableDelay is the default Config.MaxUnreliableDelay.
	DefaultMaxUnreliableDelay = 100 * time.Millisecond
)

// Config configures conns and listeners. A nil *Config, and every zero
// field, means the documented default. A negative duration or size is an
// error (reported by Dial, Listen, or the first use of a Client or
// Server), except in the fields that give it a meaning
// (MaxUnreliableDelay, ResendLimit, AvaraCram). A field that only some
// protocols read (each says which: Channels, MaxMessage, the Wirefox*,
// Avara* and circuit fields, ResendLimit) set while Protocol selects
// another is an error that names it, so that, say, WirefoxEncrypt never
// yields a plaintext conn of another protocol. A Config may be shared by
// several conns and must not be modified after use.
type Config struct {
	// Protocol is the wire protocol. Zero means POROUS.
	Protocol Protocol

	// MTU is the largest datagram sent, in bytes (UDP payload). Default
	// DefaultMTU (1400), which stays below common path MTUs; 576 to 1500.
	// LLUDP never sends more than 1400 bytes. POROUS ignores MTU: its wire
	// format fixes its datagrams at up to 1472 bytes.
	MTU int

	// HandshakeTimeout bounds Dial, Handshake and a listener's wait for a
	// new peer to complete its handshake. Expiry fails with
	// ErrHandshakeTimeout. Default 10 s.
	HandshakeTimeout time.Duration

	// IdleTimeout is how long a conn lives without receiving any datagram
	// from its peer before it fails with ErrIdleTimeout. Default 60 s.
	IdleTimeout time.Duration

	// KeepAlive is how long a conn may go without receiving before it sends
	// a probe that the peer must answer, so an idle but healthy association
	// does not reach IdleTimeout. Default 20 s: short enough for NAT
	// bindings of 30 s (RFC 4787 REQ-5 asks for at least 2 minutes),
	// while 10,000 idle streams cost their listener 500 probes and
	// answers a second; it is capped at a third of IdleTimeout. On a
	// stream, the dialing side probes after KeepAlive without receiving
	// and the accepting side only after twice that, so an idle stream
	// carries one probe and its answer per KeepAlive and no timer fires
	// for anything else. Message conns probe as their protocol's
	// reference does: POROUS pings every KeepAlive or every second,
	// whichever is shorter (the pings also measure the RTT); LLUDP sends
	// StartPingCheck every KeepAlive or every 5 s, whichever is shorter
	// (peers expect it: some end a circuit silent for 30 s); Airhook
	// probes after KeepAlive without receiving.
	KeepAlive time.Duration

	// Linger bounds how long Close keeps delivering data already accepted by
	// Write, and waits for the peer to finish, before the association is
	// abandoned (the peer then sees a reset). Close itself never blocks.
	// Default 10 s.
	Linger time.Duration

	// RecvWindow is a stream's initial receive buffer in bytes: the
	// flow-control window first advertised to the peer. Default 1 MiB;
	// 4 KiB to 1 GiB. The streams of a process that are moving data
	// (having written or received within the last second) share 16 MiB of
	// receive window: beyond 16 of them, each advertises at most its
	// share, and at least 16 KiB, whatever RecvWindow and MaxRecvWindow
	// allow, so that a thousand busy streams hold 16 MiB between them
	// rather than a window each.
	RecvWindow int

	// MaxRecvWindow is how far a stream's receive window may grow, in
	// bytes. While the reader keeps up, the window grows, once per round
	// trip, to eight round trips of the rate at which the peer's data
	// arrives (twice that while the rate doubles, as in slow start), up to
	// MaxRecvWindow; a slow reader keeps it at RecvWindow, so memory
	// follows use. Default 16 MiB: a 100 ms path at 160 MB/s without
	// loss; with loss the window also holds what arrives behind a lost
	// datagram until its resend, about a round trip of data, so at 50 MB/s
	// on 100 ms it is just enough. At least RecvWindow, at most 1 GiB.
	MaxRecvWindow int

	// SendBuffer is how many bytes a stream's Write may queue beyond what
	// the engine has taken to send; Write blocks when it is full. Within
	// it, a stream queues at most four congestion windows, and at
	// least 64 KiB (as Linux sizes a TCP send buffer), so that many
	// streams sharing a path hold little each; the engine holds about as
	// much again, framed, until the peer acknowledges it. The busy streams
	// of a process (see RecvWindow) also share 16 MiB of unsent bytes:
	// beyond 16 of them each queues at most its share, and beyond 256 less
	// than 64 KiB, down to 16 KiB. Default 1 MiB; 4 KiB to 1 GiB.
	SendBuffer int

	// Backlog bounds a listener's new peers: those still in their handshake
	// plus those waiting for Accept. At the bound, a new peer's opening
	// evicts the oldest peer still in its handshake if those hold more
	// than half of Backlog (a flood of openings that never complete), and
	// is otherwise dropped (counted; the peer sends it again) until
	// Accept makes room. Default 128.
	Backlog int

	// MaxRecvBuffer bounds the memory of the messages a message conn
	// holds for ReadMessage, in bytes: each message counts its data plus
	// RecvMessageOverhead (64) bytes, so a burst of small messages is
	// bounded by what it really holds, and fits (10,000 messages of 100
	// bytes take 1.6 MiB). The conn may exceed it by the messages of one
	// datagram. When it is full, new messages from the peer are refused
	// without being acknowledged (Stats.Refused; one Debug line each time
	// it fills), so the peer sends them again later, while the
	// acknowledgements, pings and close the peer sends are still taken:
	// nothing is lost, memory stays bounded, and the conn's own writes
	// keep flowing. A reference peer gives up after its own resend limit
	// (an LLUDP viewer after 3 resends, Wirefox after 6 sends), so keep
	// it large enough for the bursts the peer sends, and read promptly.
	// Default DefaultMaxRecvBuffer (8 MiB).
	MaxRecvBuffer int

	// Channels is the number of POROUS channels, 1 to MaxChannels (256).
	// Both ends must configure the same number; a peer with another count
	// is refused with ErrIncompatible: a dialer learns it from the
	// listener's answer within a round trip (a rudp listener answers an
	// incompatible Connect with its own), and the listener logs the
	// refusal at Debug. Default 1. Message conns choose the
	// channel per message (Message.Channel); streams use channel 0.
	Channels int

	// LowPriorityChannels lists POROUS channels whose messages are sent
	// only when no message of the other (high-priority) channels is
	// waiting. Priority is local: it is not signalled to the peer.
	LowPriorityChannels []uint8

	// ChannelWeights gives POROUS channels their share of the sending when
	// several of one priority have messages waiting: they take turns
	// (deficit round robin), each sending up to its weight in datagrams
	// per turn, so a small message on one channel waits about one
	// datagram per busy channel, never behind another channel's queue.
	// Index i is channel i's weight, 1 to 255; missing entries are 1.
	ChannelWeights []int

	// MaxUnreliableDelay is how long an unreliable POROUS message may wait
	// to be sent: one still unsent after it is dropped, and counted in
	// Stats.Expired, rather than sent late. Default 100 ms; negative
	// means no limit.
	MaxUnreliableDelay time.Duration

	// MaxMessage is the largest POROUS message, in bytes, that a message
	// conn sends (larger ones fail with ErrMessageTooLarge) and receives
	// (larger ones are discarded). Messages are fragmented into 1452-byte
	// pieces. Default 1 MiB; at most MaxMessagePOROUS (95,158,272).
	MaxMessage int

	// WirefoxChannels is the Wirefox channel table of message conns: entry
	// i is the mode of channel i+1 (WirefoxUnordered, WirefoxOrdered or
	// WirefoxSequenced); channel 0 is always there, unordered. Wirefox
	// does not negotiate channels: the table must be the one the peer
	// application created, in the same order (the reference terminates
	// on a channel it lacks), and a message on a channel outside it fails
	// with ErrUnsupported. At most MaxWirefoxChannels (255) entries;
	// default none. Stream conns ignore it: they use channel 1, ORDERED.
	WirefoxChannels []WirefoxChannelMode

	// WirefoxEncrypt encrypts Wirefox conns, message and stream, as the
	// reference's libsodium build: fresh X25519 keys for every conn, then
	// every datagram sealed with XChaCha20-Poly1305 (40 bytes more, within
	// the 1300-byte limit). Both ends must agree: otherwise the handshake
	// fails with ErrIncompatible. A datagram that does not open is
	// dropped and counted in Stats.PacketsRejected. Without
	// WirefoxServerKey the server is not authenticated.
	WirefoxEncrypt bool

	// WirefoxIdentity is a Wirefox listener's long-term X25519 private key
	// (ecdh.X25519), with which it proves its identity to clients that
	// know its public key (WirefoxServerKey). Requires WirefoxEncrypt;
	// dialing conns ignore it.
	WirefoxIdentity *ecdh.PrivateKey

	// WirefoxServerKey is the server's long-term X25519 public key
	// (ecdh.X25519) that a dialing Wirefox conn checks: its handshake
	// fails with ErrIncorrectRemoteIdentity unless the server holds the
	// private key. Requires WirefoxEncrypt; listeners ignore it.
	WirefoxServerKey *ecdh.PublicKey

	// Circuit is what an LLUDP client sends in its UseCircuitCode message
	// to open the circuit. A zero Circuit.Code is replaced by a random
	// code. A listener accepts any circuit; MessageConn.Circuit reports it.
	Circuit Circuit

	// AcceptCircuit, when set, decides whether an LLUDP message listener
	// accepts the circuit a new peer opened with UseCircuitCode, as a
	// Second Life region checks the code against its login service. LLUDP
	// has no proof that a peer receives what is sent to it, so without
	// this check any source, spoofed ones included, can open circuits (up
	// to Config.Backlog waiting for Accept). A refused circuit is closed
	// (CloseCircuit) and never reaches Accept. It runs on the listener's
	// receiving goroutine and must not block.
	AcceptCircuit func(Circuit) bool

	// ResendLimit is how many times an LLUDP conn resends an
	// unacknowledged reliable message (the Second Life viewer uses 3), or
	// a Wirefox message conn sends a packet, before the conn fails with
	// ErrRetransmitLimit. For LLUDP, zero or negative means no limit: a
	// dead peer ends in ErrIdleTimeout, and a rudp peer that refuses
	// messages while its reader lags (Config.MaxRecvBuffer) is not given
	// up on. For Wirefox message conns, zero means the reference's own
	// limit, 6 sends, which the reference applies to us too: a peer that
	// has stopped acknowledging ends the conn within seconds rather than
	// at IdleTimeout; negative means no limit. Wirefox streams resend
	// without limit and end a dead peer at IdleTimeout.
	ResendLimit int

	// AvaraPassword is the password of an Avara server: a client sends it
	// in its login, a MessageListener or Listener accepts only logins
	// that carry it, byte for byte. A wrong one gets no answer, as with
	// the reference, so Dial fails with ErrHandshakeTimeout. At most
	// MaxAvaraPassword (255) bytes; default empty.
	AvaraPassword string

	// AvaraVersion is the Avara network version, which every datagram's
	// checksum covers: a peer of another version is not heard at all.
	// Default DefaultAvaraVersion (18, avaraline/Avara at commit
	// aaa5e63).
	AvaraVersion uint16

	// AvaraCram is the cram level an Avara conn announces in its Control
	// message, 0 to MaxAvaraCram (3); the reference paces its sending by
	// the lower of both ends' levels, (level + 1) × 3 bytes per
	// millisecond. Default 3; a negative value announces 0. This end
	// paces by its congestion controller whatever the level.
	AvaraCram int

	// AvaraSkipAfter, when positive, makes an Avara message conn receive
	// as the reference does: once that many of the peer's messages are
	// held behind a missing one, the missing one is skipped for good
	// and what follows is delivered (the reference skips at
	// AvaraReferenceSkipAfter, 16, with its default 16 ms frames;
	// docs/protocols/avara.md §3.3). Each skipped message is counted in
	// Stats.Skipped and logged at Debug. Zero, the default, never skips:
	// every message is delivered, in order, and a hole waits for the
	// peer's resend (the reference resends after its retransmit time, 2 s
	// until game frames and pings have taught it the round trip), so
	// later messages wait that long. Streams never skip and ignore it;
	// negative values are invalid.
	AvaraSkipAfter int

	// Congestion selects the sender's congestion controller. Default BBR;
	// AIMD is the POROUS paper's window. It is local to the sender:
	// nothing on the wire changes, and the peer may use the other.
	Congestion Congestion

	// Tracer, when set, is asked for a tracer for each conn as it is
	// created (dialed, or a listener's new peer: a listener facing
	// spoofed sources gets one per source it answers, at most Backlog
	// waiting at once) and may return nil to trace nothing. The tracer
	// receives the conn's events: package trace lists them, and package
	// qlog writes them as qlog files. Without it, and with QLOGDIR set in
	// the environment, conns write qlog files into that directory
	// (qlog.FromEnv). With no tracer a conn does no tracing work.
	Tracer func(trace.ConnInfo) *trace.ConnTracer

	// Logger receives debug events (new peers, refused handshakes,
	// datagrams that open nothing, drops, resets, congestion responses),
	// each naming the peer. Default: no logging.
	Logger *slog.Logger

	// Rand is the source of session identifiers (and of the seeds of
	// Wirefox's per-conn key and nonce generators). Default crypto/rand.
	Rand io.Reader

	proto  *protocolEntry // Protocol's entry in the table (resolved)
	opts   any            // the protocol's own options (resolved)
	roster engine.Roster  // a message listener's shared state, if its protocol has one
}

// Congestion is a congestion controller (Config.Congestion).
type Congestion uint8

const (
	// BBR, the default, is model-based (after draft-ietf-ccwg-bbr): it
	// estimates the bottleneck bandwidth and the minimum RTT, paces every
	// datagram at its estimate and keeps about two bandwidth-delay
	// products in flight. Loss lowers the rate only when it is congestion:
	// when sending faster raised it by more than 2 %, or when it comes
	// with a standing queue. Random loss (Wi-Fi, mobile) does not, and
	// losses are found within about a round trip (RACK, RFC 8985).
	BBR Congestion = iota
	// AIMD is the window of the POROUS paper (Rev 0.2 §3.1.3): slow start,
	// one datagram more per window acknowledged, halved on loss; loss is
	// found by timeout only and nothing is paced. It is what the POROUS
	// reference runs, for those who want the paper's behaviour.
	AIMD
)

// String returns "bbr" or "aimd".
func (c Congestion) String() string { return congestion.Algorithm(c).String() }

// resolved returns a copy of c with every default filled in, or an error
// for an invalid field.
func (c *Config) resolved() (*Config, error) {
	var r Config
	if c != nil {
		r = *c
	}
	if r.Protocol == 0 {
		r.Protocol = protocols[0].id // the default
	}
	if err := r.checkNotNegative(); err != nil {
		return nil, err
	}
	r.proto = r.Protocol.entry()
	if r.proto == nil {
		return nil, fmt.Errorf("rudp: %w: %v", ErrUnknownProtocol, r.Protocol)
	}
	if err := r.checkProtocolOptions(); err != nil {
		return nil, err
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
	setDefault(&r.MaxRecvWindow, max(DefaultMaxRecvWindow, r.RecvWindow))
	setDefault(&r.SendBuffer, DefaultSendBuffer)
	setDefault(&r.Backlog, DefaultBacklog)
	setDefault(&r.MaxRecvBuffer, DefaultMaxRecvBuffer)
	if min(r.RecvWindow, r.SendBuffer) < 4096 || max(r.RecvWindow, r.SendBuffer, r.MaxRecvWindow) > stream.MaxBuffer {
		return nil, fmt.Errorf("rudp: Config.RecvWindow, MaxRecvWindow and SendBuffer must be 4096 bytes to 1 GiB")
	}
	if r.MaxRecvWindow < r.RecvWindow {
		return nil, fmt.Errorf("rudp: Config.MaxRecvWindow %d below RecvWindow %d", r.MaxRecvWindow, r.RecvWindow)
	}
	if r.Congestion > AIMD {
		return nil, fmt.Errorf("rudp: Config.Congestion %d unknown", r.Congestion)
	}
	setDefault(&r.Channels, 1)
	if r.MaxUnreliableDelay == 0 {
		r.MaxUnreliableDelay = DefaultMaxUnreliableDelay
	}
	setDefault(&r.MaxMessage, DefaultMaxMessage)
	if r.proto.options != nil {
		r.opts = r.proto.options(&r)
	}
	if err := r.proto.Validate(&engine.Setup{MTU: r.MTU, MaxMessage: r.MaxMessage, Options: r.opts}); err != nil {
		return nil, err
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	if r.Tracer == nil {
		r.Tracer = qlog.FromEnv()
	}
	return &r, nil
}

// checkNotNegative fails for a negative duration or size, which has no
// meaning (zero means the default). MaxUnreliableDelay, ResendLimit and
// AvaraCram give negative values a meaning of their own.
func (c *Config) checkNotNegative() error {
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"HandshakeTimeout", c.HandshakeTimeout}, {"IdleTimeout", c.IdleTimeout},
		{"KeepAlive", c.KeepAlive}, {"Linger", c.Linger},
	} {
		if f.v < 0 {
			return fmt.Errorf("rudp: Config.%s %v is negative (zero means the default)", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"MTU", c.MTU}, {"RecvWindow", c.RecvWindow}, {"MaxRecvWindow", c.MaxRecvWindow},
		{"SendBuffer", c.SendBuffer}, {"Backlog", c.Backlog}, {"MaxRecvBuffer", c.MaxRecvBuffer},
		{"Channels", c.Channels}, {"MaxMessage", c.MaxMessage},
	} {
		if f.v < 0 {
			return fmt.Errorf("rudp: Config.%s %d is negative (zero means the default)", f.name, f.v)
		}
	}
	return nil
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// protocolOptions lists the Config fields that only some protocols read
// (the table of protocols says which). Setting one for another protocol is
// an error (see Config.checkProtocolOptions), never a silent no-op: a
// conn asked for WirefoxEncrypt must not come up as plaintext POROUS.
var protocolOptions = []struct {
	name string
	set  func(*Config) bool
}{
	{"Channels", func(c *Config) bool { return c.Channels != 0 }},
	{"LowPriorityChannels", func(c *Config) bool { return c.LowPriorityChannels != nil }},
	{"ChannelWeights", func(c *Config) bool { return c.ChannelWeights != nil }},
	{"MaxUnreliableDelay", func(c *Config) bool { return c.MaxUnreliableDelay != 0 }},
	{"MaxMessage", func(c *Config) bool { return c.MaxMessage != 0 }},
	{"WirefoxChannels", func(c *Config) bool { return c.WirefoxChannels != nil }},
	{"WirefoxEncrypt", func(c *Config) bool { return c.WirefoxEncrypt }},
	{"WirefoxIdentity", func(c *Config) bool { return c.WirefoxIdentity != nil }},
	{"WirefoxServerKey", func(c *Config) bool { return c.WirefoxServerKey != nil }},
	{"Circuit", func(c *Config) bool { return c.Circuit != Circuit{} }},
	{"AcceptCircuit", func(c *Config) bool { return c.AcceptCircuit != nil }},
	{"ResendLimit", func(c *Config) bool { return c.ResendLimit != 0 }},
	{"AvaraPassword", func(c *Config) bool { return c.AvaraPassword != "" }},
	{"AvaraVersion", func(c *Config) bool { return c.AvaraVersion != 0 }},
	{"AvaraCram", func(c *Config) bool { return c.AvaraCram != 0 }},
	{"AvaraSkipAfter", func(c *Config) bool { return c.AvaraSkipAfter != 0 }},
}

// checkProtocolOptions fails for a protocol-only field set (non-zero)
// while Protocol selects another protocol, naming the field, the
// protocol selected and the ones that read it.
func (c *Config) checkProtocolOptions() error {
	for _, o := range protocolOptions {
		if o.set(c) && !c.proto.reads(o.name) {
			return fmt.Errorf("rudp: Config.%s is set but Protocol is %v (it applies to %s only)", o.name, c.Protocol, readers(o.name))
		}
	}
	return nil
}
