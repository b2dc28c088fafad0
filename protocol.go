package rudp

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/rudpkit/rudp/internal/airhook"
	"github.com/rudpkit/rudp/internal/avara"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/lludp"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/rudpkit/rudp/internal/wirefox"
)

// This file is the package's table of protocols: the only place that
// names them. Everything else reaches a protocol through its entry, the
// engine package's descriptor (engine.Protocol) plus how the flat Config
// fields map to the protocol's own options.

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

// protocolEntry is one protocol of the table.
type protocolEntry struct {
	id Protocol
	*engine.Protocol
	// options returns the protocol's own options (Setup.Options) from
	// the protocol-only fields of a resolved Config; nil when it has none.
	options func(c *Config) any
	// fields are the protocol-only Config fields it reads (see
	// protocolOptions).
	fields []string
}

// protocols is the table, the default first.
var protocols = []*protocolEntry{
	{POROUS, &porous.Protocol, func(c *Config) any {
		return porous.Options{Channels: c.Channels, LowPriority: c.LowPriorityChannels,
			Weights: c.ChannelWeights, MaxUnreliableDelay: c.MaxUnreliableDelay}
	}, []string{"Channels", "LowPriorityChannels", "ChannelWeights", "MaxUnreliableDelay", "MaxMessage"}},
	{Airhook, &airhook.Protocol, nil, nil},
	{LLUDP, &lludp.Protocol, func(c *Config) any {
		return lludp.Options{Circuit: lludp.Circuit(c.Circuit)}
	}, []string{"Circuit", "AcceptCircuit", "ResendLimit"}},
	{Wirefox, &wirefox.Protocol, func(c *Config) any {
		modes := make([]wirefox.ChannelMode, len(c.WirefoxChannels))
		for i, m := range c.WirefoxChannels {
			modes[i] = wirefox.ChannelMode(m)
		}
		return wirefox.Options{Channels: modes, Encrypt: c.WirefoxEncrypt,
			Identity: c.WirefoxIdentity, ServerKey: c.WirefoxServerKey}
	}, []string{"MaxMessage", "WirefoxChannels", "WirefoxEncrypt", "WirefoxIdentity", "WirefoxServerKey", "ResendLimit"}},
	{Avara, &avara.Protocol, func(c *Config) any {
		return avara.Options{Password: c.AvaraPassword, Version: c.AvaraVersion,
			Cram: c.AvaraCram, SkipAfter: c.AvaraSkipAfter}
	}, []string{"AvaraPassword", "AvaraVersion", "AvaraCram", "AvaraSkipAfter"}},
}

// entry returns p's entry in the table, nil for an unknown protocol.
func (p Protocol) entry() *protocolEntry {
	for _, e := range protocols {
		if e.id == p {
			return e
		}
	}
	return nil
}

// String returns the protocol's name in lower case ("airhook", "porous",
// "lludp", "wirefox", "avara"), or "default" for the zero value.
func (p Protocol) String() string {
	if p == 0 {
		return "default"
	}
	if e := p.entry(); e != nil {
		return e.Name
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
func Protocols() []Protocol {
	ps := make([]Protocol, len(protocols))
	for i, e := range protocols {
		ps[i] = e.id
	}
	return ps
}

// reads reports whether the protocol reads the protocol-only Config
// field name.
func (e *protocolEntry) reads(name string) bool { return slices.Contains(e.fields, name) }

// readers names the protocols that read the protocol-only Config field
// name ("porous and wirefox").
func readers(name string) string {
	var names []string
	for _, e := range protocols {
		if e.reads(name) {
			names = append(names, e.Name)
		}
	}
	return strings.Join(names, " and ")
}

// Circuit is what an LLUDP client presents in its UseCircuitCode message
// when it opens a circuit; a Second Life region expects the values its
// login service handed out. A zero Code is replaced by a random one.
type Circuit struct {
	Code      uint32
	SessionID [16]byte
	AgentID   [16]byte
}

// circuitOf returns the circuit of an LLUDP engine (see
// MessageConn.Circuit); ok is false for other protocols.
func circuitOf(eng engine.Engine) (Circuit, bool) {
	e, is := eng.(interface{ Circuit() (lludp.Circuit, bool) })
	if !is {
		return Circuit{}, false
	}
	lc, ok := e.Circuit()
	return Circuit(lc), ok
}

// Limits of the protocol-specific Config fields.
const (
	// MaxChannels is the most POROUS channels (Config.Channels).
	MaxChannels = porous.MaxChannels
	// MaxMessagePOROUS is the largest POROUS message, in bytes: 65536
	// fragments of 1452 bytes.
	MaxMessagePOROUS = porous.MaxPacketLimit
	// DefaultMaxMessage is the default Config.MaxMessage, in bytes.
	DefaultMaxMessage = 1 << 20
	// MaxMessageWirefox is the largest Wirefox message, command byte
	// included, in bytes (Config.MaxMessage).
	MaxMessageWirefox = wirefox.MaxMessage
	// MaxWirefoxChannels is the most entries of Config.WirefoxChannels.
	MaxWirefoxChannels = wirefox.MaxChannels
)

// Limits and defaults of the Avara Config fields.
const (
	// MaxAvaraPassword is the longest Config.AvaraPassword, in bytes: the
	// login carries it as a Pascal string, after a length byte.
	MaxAvaraPassword = avara.MaxPassword
	// MaxAvaraCram is the highest Config.AvaraCram.
	MaxAvaraCram = avara.MaxCram
	// AvaraReferenceSkipAfter is the reference receiver's skip threshold
	// at its default 16 ms frame time (Config.AvaraSkipAfter).
	AvaraReferenceSkipAfter = avara.ReferenceSkipAfter
	// DefaultAvaraVersion is the default Config.AvaraVersion: the network
	// version of avaraline/Avara at commit aaa5e63.
	DefaultAvaraVersion = avara.DefaultVersion
	// MaxAvaraClients is how many clients an Avara MessageListener serves
	// at once: player ids 1 to 7, the server being 0.
	MaxAvaraClients = avara.MaxClients
)

// AvaraPeer is one entry of an Avara server's connection table: a
// player id (1..7) and the address the server sees the player at.
type AvaraPeer struct {
	ID   int8
	Addr netip.AddrPort
}

// peersOf lists the used entries of t.
func peersOf(t avara.TOC) []AvaraPeer {
	var ps []AvaraPeer
	for i, a := range t {
		if a.IsValid() {
			ps = append(ps, AvaraPeer{ID: int8(i + 1), Addr: a})
		}
	}
	return ps
}

// avaraPeers returns the table of an Avara engine (see
// MessageConn.AvaraPeers): roster's, on a listener's conn, else the
// table of the server's latest TOC; nil on other protocols.
func avaraPeers(eng engine.Engine, roster engine.Roster) []AvaraPeer {
	if room, ok := roster.(*avara.Room); ok {
		return peersOf(room.Table())
	}
	s, ok := eng.(*avara.Session)
	if !ok {
		return nil
	}
	t, _ := s.Table()
	return peersOf(t)
}

// avaraClientID returns the player id of the client end of an Avara
// engine (see MessageConn.AvaraClientID), the peer's on a listener's conn
// (accepted); 0 on other protocols.
func avaraClientID(eng engine.Engine, accepted bool) int8 {
	s, ok := eng.(*avara.Session)
	switch {
	case !ok:
		return 0
	case accepted:
		return s.PeerID()
	}
	return max(s.ID(), 0)
}

// Errors of Wirefox's handshake, as a Wirefox server reports them.
var (
	// ErrNoFreeSlots: a Wirefox server refused the connection: it has no
	// free connection slot (ERROR_OCCURRED NO_FREE_SLOTS).
	ErrNoFreeSlots = wirefox.ErrNoFreeSlots
	// ErrAlreadyConnected: a Wirefox server refused the connection: it is
	// already connected to a peer with this end's PeerID.
	ErrAlreadyConnected = wirefox.ErrAlreadyConnected
	// ErrConnectRefused: a Wirefox server refused the connection for
	// another reason (ERROR_OCCURRED with CONNECT_FAILED, a wrong
	// password, a rate limit or a ban).
	ErrConnectRefused = wirefox.ErrConnectRefused
	// ErrIncorrectRemoteIdentity: a Wirefox server failed the identity
	// check of Config.WirefoxServerKey: it does not hold the matching
	// private key.
	ErrIncorrectRemoteIdentity = wirefox.ErrIncorrectRemoteIdentity
)
