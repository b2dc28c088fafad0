package rudp

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/rudpkit/rudp/internal/airhook"
	"github.com/rudpkit/rudp/internal/avara"
	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/lludp"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/rudpkit/rudp/internal/wirefox"
)

// Protocol selects the wire protocol (the reliability engine) a conn speaks.
// The zero value selects the default protocol, POROUS.
type Protocol uint8

const (
	// Airhook is the Airhook protocol (missed-message lists), wire-compatible
	// with the airhook-2 C library: messages of 1 to 256 bytes, reliable,
	// delivered exactly once but not in order. Streams add ordering on top.
	Airhook Protocol = 1
	// POROUS is the POROUS protocol (paper Rev 0.2), wire-compatible with
	// its reference implementation lowquark/uflow at commit dde0da6:
	// up to 256 channels (Config.Channels), each with reliable (in order),
	// unreliable and passive messages of up to Config.MaxMessage bytes,
	// fragmented into 1472-byte datagrams, paced by the congestion
	// controller of Config.Congestion (model-based by default; the paper's
	// AIMD as an option). Streams run on channel 0. It is the default
	// protocol.
	POROUS Protocol = 2
	// LLUDP is the Second Life packet layer, wire-compatible with the
	// Second Life viewer's message system: each message is a message number
	// plus a body of up to 1190 bytes, reliable (acknowledged and resent)
	// or not, zerocoded when that makes it shorter, delivered in arrival
	// order. A circuit opens with UseCircuitCode (Config.Circuit). Streams
	// ride in message number StreamMessageNumber.
	LLUDP Protocol = 3
	// Wirefox is the Wirefox protocol, wire-compatible with
	// iridinite/wirefox at commit 0897fcf: a three-way handshake,
	// acknowledgements and NAKs per datagram, channel 0 (unordered) plus
	// the channels of Config.WirefoxChannels, reliable and unreliable
	// messages of up to 16 MiB fragmented into 1200-byte segments, every
	// datagram within 1300 bytes, unencrypted. A message is a command
	// byte (15 or above) followed by its payload. Streams ride on an
	// ORDERED channel 1 with command WirefoxStreamCommand.
	Wirefox Protocol = 4
	// Avara is the UDP layer of the game Avara, wire-compatible with
	// avaraline/Avara at commit aaa5e63 (network version 18,
	// Config.AvaraVersion): each message is a command (0..127) with the
	// parameters p1, p2 and p3 and up to 984 bytes of data, reliable and
	// delivered in order. A client logs in to a server with a password
	// (Config.AvaraPassword); a MessageListener plays the server, for up
	// to 7 clients. Streams ride in command StreamCommand.
	Avara Protocol = 5
)

// WirefoxChannelMode is how a Wirefox channel delivers its messages:
// WirefoxUnordered, WirefoxOrdered or WirefoxSequenced
// (docs/protocols/wirefox.md §3.5).
type WirefoxChannelMode uint8

// Wirefox channel modes (Config.WirefoxChannels).
const (
	// WirefoxUnordered delivers messages as they arrive.
	WirefoxUnordered WirefoxChannelMode = 0
	// WirefoxOrdered delivers messages in the order they were sent; a
	// gap holds the later ones back until it is filled.
	WirefoxOrdered WirefoxChannelMode = 1
	// WirefoxSequenced drops a message older than the newest delivered.
	WirefoxSequenced WirefoxChannelMode = 2
)

// String returns "unordered", "ordered" or "sequenced".
func (m WirefoxChannelMode) String() string { return wirefox.ChannelMode(m).String() }

// WirefoxStreamCommand is the Wirefox command byte that starts every
// message carrying a stream's frame; streams use channel 1, ORDERED, on
// both ends (a stream conn ignores Config.WirefoxChannels).
const WirefoxStreamCommand = 0xFF

// StreamMessageNumber is the LLUDP message number (Low 65000, sent as
// FF FF FD E8) that carries rudp's stream frames. The Second Life message
// template uses Low numbers 1 to 431 only.
const StreamMessageNumber uint32 = 0xFFFFFDE8

// StreamCommand is the Avara command (100) that carries rudp's stream
// frames. The game's commands at the cited commit are 0 to 36.
const StreamCommand int8 = 100

// String returns the protocol's name in lower case ("airhook", "porous",
// "lludp", "wirefox", "avara"), or "default" for the zero value.
func (p Protocol) String() string {
	switch p {
	case 0:
		return "default"
	case Airhook:
		return "airhook"
	case POROUS:
		return "porous"
	case LLUDP:
		return "lludp"
	case Wirefox:
		return "wirefox"
	case Avara:
		return "avara"
	}
	return fmt.Sprintf("protocol(%d)", uint8(p))
}

// ParseProtocol returns the Protocol named s ("airhook", "porous",
// "lludp", "wirefox", "avara"), as printed by Protocol.String, in any
// case ("POROUS" and "Airhook" too). It returns an error wrapping
// ErrUnknownProtocol for any other name.
func ParseProtocol(s string) (Protocol, error) {
	for _, p := range Protocols() {
		if strings.EqualFold(p.String(), s) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("rudp: %w: %q", ErrUnknownProtocol, s)
}

// Protocols lists the protocols this version of rudp implements, the
// default first.
func Protocols() []Protocol { return []Protocol{POROUS, Airhook, LLUDP, Wirefox, Avara} }

// Circuit is what an LLUDP client presents in its UseCircuitCode message
// when it opens a circuit; a Second Life region expects the values its
// login service handed out. A zero Code is replaced by a random one.
type Circuit struct {
	Code      uint32
	SessionID [16]byte
	AgentID   [16]byte
}

// Limits of the protocol-specific Config fields.
const (
	// MaxChannels is the most POROUS channels (Config.Channels).
	MaxChannels = 256
	// MaxMessagePOROUS is the largest POROUS message, in bytes: 65536
	// fragments of 1452 bytes.
	MaxMessagePOROUS = 95158272
	// DefaultMaxMessage is the default Config.MaxMessage, in bytes.
	DefaultMaxMessage = 1 << 20
)

const (
	// porousStreamPacket is the size of the POROUS packets that carry a
	// stream's frames: one fragment, so one frame fills one datagram, and
	// short of a full fragment by the seal, so that the datagram, seal
	// included, is 1472 bytes, what a 1500-byte IPv4 path carries
	// without fragmenting it.
	porousStreamPacket = porous.FragmentSize - sealLen
	// lludpAckDelay is how long an LLUDP ack waits for a datagram to ride
	// on. The viewer waits up to 100 ms; acknowledging sooner keeps the
	// sender's window of unacknowledged messages moving.
	lludpAckDelay = 2 * time.Millisecond
	// lludpStreamQueued bounds the messages a stream over LLUDP may have
	// unacknowledged: half the 65,536 sequence numbers behind which a
	// receiver takes a datagram as new (see internal/lludp, Bounds), so
	// that the congestion controller, not this bound, sets the flight.
	lludpStreamQueued = 1 << 15
	// lludpStreamRTOMin is the floor of the RFC 6298 resend timeout of
	// streams over LLUDP. Streams run between rudp peers, so they time
	// resends from the acks (lludp.Config.AckRTT) rather than with the
	// viewer's 1 s floor, which would stall a stream for a second per
	// loss.
	lludpStreamRTOMin = 10 * time.Millisecond
	// avaraStreamAckDelay is how long a stream's ack waits for a datagram
	// to ride on, instead of the reference's 41 ms: acknowledging sooner
	// keeps the sender's resend timer (from the acks, avara.Config.AckRTT)
	// close to the round trip.
	avaraStreamAckDelay = 2 * time.Millisecond
	// avaraStreamClientID is the player id of the client of a stream over
	// Avara: each stream is a connection of its own, not one of a
	// server's seven players.
	avaraStreamClientID = 1
	// avaraLoginPad is the length of the data of every Avara client's
	// Login, stream or message conn (avara.Config.LoginPad): enough that
	// the listener's first answer, the TOC, the Control and a stream's
	// first frame, fits the 3 times what the Login brought that a rudp
	// listener sends an unvalidated peer.
	avaraLoginPad = 128
)

// validateProtocol checks the protocol-specific fields of a resolved
// Config.
func (c *Config) validateProtocol() error {
	switch c.Protocol {
	case Airhook, LLUDP:
	case Wirefox:
		return c.validateWirefox()
	case Avara:
		if len(c.AvaraPassword) > MaxAvaraPassword {
			return fmt.Errorf("rudp: Config.AvaraPassword of %d bytes, at most %d", len(c.AvaraPassword), MaxAvaraPassword)
		}
		if c.AvaraSkipAfter < 0 {
			return fmt.Errorf("rudp: Config.AvaraSkipAfter %d is negative", c.AvaraSkipAfter)
		}
		if c.AvaraCram > MaxAvaraCram {
			return fmt.Errorf("rudp: Config.AvaraCram %d above %d", c.AvaraCram, MaxAvaraCram)
		}
	case POROUS:
		if c.Channels > MaxChannels {
			return fmt.Errorf("rudp: Config.Channels %d above %d", c.Channels, MaxChannels)
		}
		for _, ch := range c.LowPriorityChannels {
			if int(ch) >= c.Channels {
				return fmt.Errorf("rudp: Config.LowPriorityChannels: channel %d of %d", ch, c.Channels)
			}
		}
		if len(c.ChannelWeights) > c.Channels {
			return fmt.Errorf("rudp: Config.ChannelWeights: %d weights for %d channels", len(c.ChannelWeights), c.Channels)
		}
		for i, w := range c.ChannelWeights {
			if w < 1 || w > 255 {
				return fmt.Errorf("rudp: Config.ChannelWeights[%d] = %d, want 1..255", i, w)
			}
		}
		if c.MaxMessage > MaxMessagePOROUS {
			return fmt.Errorf("rudp: Config.MaxMessage %d above %d", c.MaxMessage, MaxMessagePOROUS)
		}
	default:
		return fmt.Errorf("rudp: %w: %v", ErrUnknownProtocol, c.Protocol)
	}
	return nil
}

// streamKeepAlive is how long a stream's engine goes without receiving
// before it probes the peer (every engine then waits as long again
// between probes while the silence lasts). The dialing side probes after
// KeepAlive, the accepting side only after twice that: on an idle stream
// the dialer's probes, and their answers, keep both ends alive, one
// exchange per KeepAlive, and neither end's timer fires for anything
// else; the accepting side probes only when the dialer's probes stop
// arriving (still within IdleTimeout, which is at least 3 × KeepAlive).
// The dialer is usually the side behind a NAT, whose binding its probes
// refresh.
func (c *Config) streamKeepAlive(accept bool) time.Duration {
	if accept {
		return 2 * c.KeepAlive
	}
	return c.KeepAlive
}

// newEngine builds the protocol engine for one association. stream selects
// rudp's stream semantics, where a restarted peer ends the association
// instead of being adopted silently; accept, that the association is a
// listener's, created by a datagram from an unknown address. What the
// engine logs names peer; tr, when not nil, receives its events.
func (c *Config) newEngine(now time.Time, peer net.Addr, tr *connTrace, stream, accept bool) (engine.Engine, error) {
	log := c.Logger.With("peer", peer)
	switch c.Protocol {
	case POROUS:
		pri := make([]porous.Priority, c.Channels)
		for _, ch := range c.LowPriorityChannels {
			pri[ch] = porous.Low
		}
		maxPacket, maxQueued, maxQueuedBytes := c.MaxMessage, 0, 0
		// A message conn may talk to the reference, which pings every
		// second and whose RTT estimate our answers feed: it pings as
		// often. Streams run between rudp peers and ping at KeepAlive.
		keepAlive := min(c.KeepAlive, porous.DefaultKeepAlive)
		if stream {
			keepAlive = c.streamKeepAlive(accept)
			// A stream's frames are bounded by the peer's receive window:
			// the engine may hold all of it, whatever the congestion
			// window.
			maxPacket = porousStreamPacket
			maxQueued = porous.TransferWindow
			maxQueuedBytes = 2 * c.MaxRecvWindow
		}
		return porous.New(now, porous.Config{
			Rand:                 c.Rand,
			Congestion:           congestion.Algorithm(c.Congestion),
			Logger:               log,
			Tracer:               tr.tracer(),
			Channels:             c.Channels,
			Priorities:           pri,
			Weights:              c.ChannelWeights,
			MaxUnreliableDelay:   c.MaxUnreliableDelay,
			MaxPacket:            maxPacket,
			MaxQueued:            maxQueued,
			MaxQueuedBytes:       maxQueuedBytes,
			Accept:               accept,
			KeepAlive:            keepAlive,
			PingWhenQuiet:        stream,
			IdleTimeout:          c.IdleTimeout,
			HandshakeTimeout:     c.HandshakeTimeout,
			Linger:               c.Linger,
			RejectNewPeerSession: stream,
			LargeFrames:          stream, // see largeFrame
			// A stream's peer sends only reliable packets: frames far
			// ahead of a gap, out-of-order delivery and conflicting
			// copies are then a blind attacker's, not the peer's.
			ReliablePeer: stream,
		})
	case LLUDP:
		circuit := lludp.Circuit(c.Circuit)
		if circuit.Code == 0 && !accept {
			code, err := randomCode(c.Rand)
			if err != nil {
				return nil, err
			}
			circuit.Code = code
		}
		limit := c.ResendLimit
		if limit <= 0 {
			limit = -1 // unlimited: IdleTimeout ends a dead circuit
		}
		var rtoMin time.Duration // message conns: the viewer's resend timing
		maxQueued := 0           // message conns: lludp's default
		var seq uint32           // message conns: 1, as the viewer
		if stream {
			rtoMin = lludpStreamRTOMin
			maxQueued = lludpStreamQueued
			// Between rudp peers, a random first sequence number, so that
			// a blind attacker cannot guess which numbers are in use.
			seq = uint32(c.random64()%(lludp.SeqWrap-1)) + 1
		}
		maxDatagram := min(c.MTU, lludp.DefaultMaxDatagram)
		keepAlive := min(c.KeepAlive, lludp.DefaultKeepAlive) // message conns: as the viewer
		if stream {
			maxDatagram -= sealLen
			keepAlive = c.streamKeepAlive(accept)
		}
		return lludp.New(now, lludp.Config{
			AckRTT:               stream,
			DeliverDuplicates:    stream,
			RepeatAcks:           stream,
			RTOMin:               rtoMin,
			Client:               !accept,
			Circuit:              circuit,
			Accept:               accept,
			MaxDatagram:          maxDatagram,
			AckDelay:             lludpAckDelay,
			ResendLimit:          limit,
			MaxQueued:            maxQueued,
			InitialSeq:           seq,
			Congestion:           congestion.Algorithm(c.Congestion),
			Logger:               log,
			Tracer:               tr.tracer(),
			KeepAlive:            keepAlive,
			PingWhenQuiet:        stream,
			IdleTimeout:          c.IdleTimeout,
			HandshakeTimeout:     c.HandshakeTimeout,
			Linger:               c.Linger,
			RejectNewPeerSession: stream,
		})
	}
	if c.Protocol == Wirefox {
		return c.newWirefox(now, log, tr, stream, accept)
	}
	if c.Protocol == Avara {
		return c.newAvara(now, peer, log, tr, stream, accept)
	}
	maxDatagram, keepAlive := c.MTU, c.KeepAlive
	if stream {
		maxDatagram -= sealLen // see seal
		keepAlive = c.streamKeepAlive(accept)
	}
	return airhook.New(now, airhook.Config{
		Rand:                 c.Rand,
		Congestion:           congestion.Algorithm(c.Congestion),
		Logger:               log,
		Tracer:               tr.tracer(),
		MaxDatagram:          maxDatagram,
		KeepAlive:            keepAlive,
		IdleTimeout:          c.IdleTimeout,
		HandshakeTimeout:     c.HandshakeTimeout,
		Linger:               c.Linger,
		RejectNewPeerSession: stream,
	})
}

// streamChannel is the channel a stream's frames ride on.
const streamChannel = 0

// streamOptions are the send options of a stream's frames.
func (c *Config) streamOptions() engine.SendOptions {
	switch c.Protocol {
	case LLUDP:
		return engine.SendOptions{MessageNumber: lludp.StreamMessage}
	case Wirefox:
		return engine.SendOptions{Channel: wirefoxStreamChannel}
	case Avara:
		return engine.SendOptions{Params: engine.Params{Command: avara.StreamCommand}}
	}
	return engine.SendOptions{}
}

// isStreamFrame reports whether a delivered message carries a stream frame
// (LLUDP may deliver other message numbers, Avara other commands, which a
// stream ignores).
func (c *Config) isStreamFrame(m engine.Message) bool {
	switch c.Protocol {
	case LLUDP:
		return m.MessageNumber == lludp.StreamMessage
	case Wirefox:
		return m.Channel == wirefoxStreamChannel && len(m.Data) > 0 && m.Data[0] == WirefoxStreamCommand
	case Avara:
		return m.Params == engine.Params{Command: avara.StreamCommand}
	}
	return true
}

// streamPrefix is what precedes a stream's frame in its message: the
// Wirefox command byte, nothing for the other protocols.
func (c *Config) streamPrefix() []byte {
	if c.Protocol == Wirefox {
		return []byte{WirefoxStreamCommand}
	}
	return nil
}

// random64 draws 64 random bits from Config.Rand, or from crypto/rand
// when it is nil or fails.
func (c *Config) random64() uint64 {
	var b [8]byte
	if c.Rand == nil || func() error { _, err := io.ReadFull(c.Rand, b[:]); return err }() != nil {
		_, _ = rand.Read(b[:]) // never fails (crypto/rand.Read)
	}
	return binary.BigEndian.Uint64(b[:])
}

// randomCode draws a nonzero LLUDP circuit code from r (crypto/rand when
// nil).
func randomCode(r io.Reader) (uint32, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [4]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, fmt.Errorf("rudp: circuit code: %w", err)
		}
		if v := binary.BigEndian.Uint32(b[:]); v != 0 {
			return v, nil
		}
	}
}
