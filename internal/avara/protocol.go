package avara

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Options are Avara's own settings of a conn (rudp's Config.AvaraPassword,
// AvaraVersion, AvaraCram and AvaraSkipAfter).
type Options struct {
	// Password is what a client logs in with, at most MaxPassword bytes.
	Password string
	// Version is the network version (0: DefaultVersion).
	Version uint16
	// Cram is the cram level, 0 to MaxCram; negative for level 0 as the
	// reference's preference "off".
	Cram int
	// SkipAfter is a message conn's skip threshold (Config.SkipAfter);
	// streams never skip.
	SkipAfter int
}

// version is o's network version, DefaultVersion by default.
func (o Options) version() uint16 {
	if o.Version == 0 {
		return DefaultVersion
	}
	return o.Version
}

const (
	// streamAckDelay is how long a stream's ack waits for a datagram to
	// ride on, instead of the reference's 41 ms: acknowledging sooner
	// keeps the sender's resend timer (from the acks, Config.AckRTT)
	// close to the round trip.
	streamAckDelay = 2 * time.Millisecond
	// streamClientID is the player id of the client of a stream: each
	// stream is a connection of its own, not one of a server's seven
	// players.
	streamClientID = 1
	// loginPad is the length of the data of every client's Login, stream
	// or message conn (Config.LoginPad): enough that the listener's first
	// answer, the TOC, the Control and a stream's first frame, fits the 3
	// times what the Login brought that a rudp listener sends an
	// unvalidated peer.
	loginPad = 128
	// headerLen is the length of a message's header in the byte form of
	// a message conn's Read and Write: command, p1, p2 and p3,
	// little-endian as on the wire.
	headerLen = 8
)

// Protocol describes Avara to the package above the engines; its options
// are an Options. A stream's frames ride in command StreamCommand; a
// message conn's Read and Write put the command and parameters in an
// 8-byte header before the data. A listener of message conns shares a
// Room among its clients.
var Protocol = engine.Protocol{
	Name: "avara",
	IsOpening: func(p []byte, opts any) bool {
		return IsOpening(p, engine.OptionsOf[Options](opts).version())
	},
	OpeningID: openingID,
	Validate:  validate,
	New:       newFromSetup,
	Stream: engine.StreamCarrier{
		Send:    engine.SendOptions{Params: engine.Params{Command: StreamCommand}},
		IsFrame: func(m engine.Message) bool { return m.Params == engine.Params{Command: StreamCommand} },
	},
	Header: &engine.MessageHeader{
		Put: func(dst []byte, m engine.Message) int {
			dst[0], dst[1] = byte(m.Params.Command), byte(m.Params.P1)
			binary.LittleEndian.PutUint16(dst[2:], uint16(m.Params.P2))
			binary.LittleEndian.PutUint32(dst[4:], uint32(m.Params.P3))
			return headerLen
		},
		Parse: func(p []byte) (engine.Message, error) {
			if len(p) < headerLen {
				return engine.Message{}, fmt.Errorf("%w: Avara Write of %d bytes, shorter than its %d-byte header (command, p1, p2, p3)", engine.ErrUnsupported, len(p), headerLen)
			}
			return engine.Message{Params: engine.Params{Command: int8(p[0]), P1: int8(p[1]),
				P2: int16(binary.LittleEndian.Uint16(p[2:])), P3: int32(binary.LittleEndian.Uint32(p[4:]))},
				Data: p[headerLen:]}, nil
		},
	},
	Describe: DescribeSession,
	Handshake: func(opts any, what string) (string, string, string) {
		return fmt.Sprintf("avara %s login (network version %d)", what, engine.OptionsOf[Options](opts).version()),
			"another protocol, another network version",
			"; the password (Config.AvaraPassword) may be wrong or the server full, which an Avara server does not answer"
	},
	NewListener: func() engine.Roster { return new(Room) },
}

// openingID returns the seed (p3) of the Login that opens datagram p
// (docs/protocols/avara.md §3.1), which the Login's resends repeat (only
// its send count and the checksum change); false when p does not start
// with a whole Login at serial 0. The checksum is not checked: it covers
// the network version, an option, which IsOpening checked. It reads p in
// place.
func openingID(p []byte) (uint64, bool) {
	if len(p) < HeaderLen || len(p) > MaxReceived || len(p) == PunchLen || p[2]&1 != 0 {
		return 0, false
	}
	var m Message
	if _, err := parseMessage(p[HeaderLen:], &m); err != nil || m.Serial != 0 || m.Command != CommandLogin {
		return 0, false
	}
	return uint64(uint32(m.P3)), true
}

// validate checks a conn's Avara options; its errors name rudp's Config
// fields.
func validate(s *engine.Setup) error {
	o := engine.OptionsOf[Options](s.Options)
	switch {
	case len(o.Password) > MaxPassword:
		return fmt.Errorf("rudp: Config.AvaraPassword of %d bytes, at most %d", len(o.Password), MaxPassword)
	case o.SkipAfter < 0:
		return fmt.Errorf("rudp: Config.AvaraSkipAfter %d is negative", o.SkipAfter)
	case o.Cram > MaxCram:
		return fmt.Errorf("rudp: Config.AvaraCram %d above %d", o.Cram, MaxCram)
	}
	return nil
}

// newFromSetup builds an Avara session. Message conns keep the
// reference's timing (resends after its estimate, acknowledgements after
// 41 ms, the 120 s dead timeout); streams time resends from the acks and
// acknowledge within streamAckDelay. A listener's message conn takes its
// player id from the listener's Room.
func newFromSetup(s *engine.Setup) (engine.Engine, error) {
	o := engine.OptionsOf[Options](s.Options)
	cram := int8(o.Cram)
	if o.Cram < 0 {
		cram = -1 // Config: −1 for level 0
	}
	cfg := Config{
		Client:      !s.Accept,
		Accept:      s.Accept,
		ClientID:    streamClientID,
		Password:    []byte(o.Password),
		Version:     o.version(),
		Cram:        cram,
		MaxDatagram: min(s.MTU, MaxDatagram),
		// The conn's own timer ends the handshake at the common
		// handshake timeout, saying what was tried.
		HandshakeTimeout: -1,
		Linger:           s.Linger,
		Congestion:       s.Congestion,
		Logger:           s.Logger,
		Tracer:           s.Tracer,
	}
	if !s.Stream {
		// A message conn may talk to the reference: it paces, bounds its
		// messages outstanding and acknowledges as the reference takes
		// it (Config.ReferencePeer).
		cfg.SkipAfter = o.SkipAfter
		cfg.ReferencePeer = true
	}
	if s.Stream {
		cfg.MaxDatagram -= s.Overhead
		cfg.AckRTT = true
		cfg.AckDelay = streamAckDelay
		// A peer is given up when data waits unacknowledged, or nothing
		// arrives, for the idle timeout; the keepalive Pings (which the
		// stream ignores) keep an idle stream's peers hearing from each
		// other.
		cfg.DeadTimeout = s.IdleTimeout
		cfg.IdleTimeout = s.IdleTimeout
		cfg.KeepAlive = s.StreamKeepAlive()
		cfg.ChallengeClose = true // a Logout from the peer's address may be spoofed
		// The peer runs this package: take only what it can send (a
		// forged message or acknowledgement ends the stream with an
		// error instead of stalling or corrupting it).
		cfg.ReliablePeer = true
	}
	if !s.Accept {
		cfg.Seed = int32(s.Random64())
		// The Login is padded so that the listener's TOC fits what it
		// may send an address not yet validated (3 times what it
		// received): a rudp listener answers at once instead of at the
		// Login's resend, 2 s later. The reference server compares the
		// password's Pascal string alone and ignores what follows
		// (avaraline/Avara aaa5e63, src/net/CUDPComm.cpp,
		// CUDPComm::DoLogin).
		cfg.LoginPad = loginPad
	}
	room, _ := s.Listener.(*Room)
	if !s.Accept || s.Stream || room == nil {
		return New(s.Now, cfg)
	}
	return room.newSession(s.Now, addrPortOf(s.Peer), cfg)
}

// addrPortOf returns a UDP address as a netip.AddrPort (the zero one for
// other kinds of address).
func addrPortOf(a net.Addr) netip.AddrPort {
	if ua, ok := a.(*net.UDPAddr); ok {
		return ua.AddrPort()
	}
	return netip.AddrPort{}
}
