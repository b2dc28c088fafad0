package wirefox

import (
	"crypto/ecdh"
	"encoding/binary"
	"fmt"
	"io"
	mrand "math/rand/v2"

	"github.com/rudpkit/rudp/internal/engine"
)

// Options are Wirefox's own settings of a conn (rudp's
// Config.WirefoxChannels, WirefoxEncrypt, WirefoxIdentity and
// WirefoxServerKey).
type Options struct {
	// Channels is the channel table of message conns: entry i is channel
	// i+1's mode. At most MaxChannels entries.
	Channels []ChannelMode
	// Encrypt encrypts the conn as the reference's libsodium build does.
	Encrypt bool
	// Identity is a listener's long-term X25519 private key (Encrypt
	// only); nil: a fresh key pair.
	Identity *ecdh.PrivateKey
	// ServerKey is the server's long-term X25519 public key a client
	// checks (Encrypt only); nil: the server is not authenticated.
	ServerKey *ecdh.PublicKey
}

const (
	// StreamCommand is the command byte that starts every message
	// carrying a stream's frame.
	StreamCommand = 0xFF
	// streamChannel is the ORDERED channel of a stream's frames.
	streamChannel = 1
	// streamQueued bounds the frames a stream may have unacknowledged:
	// under half the packet IDs a receiver's duplicate history covers,
	// so that the congestion controller sets the flight.
	streamQueued = 1 << 14
)

// Protocol describes Wirefox to the package above the engines; its
// options are an Options. A stream's frames ride on an ORDERED channel 1,
// each message starting with StreamCommand.
var Protocol = engine.Protocol{
	Name:      "wirefox",
	IsOpening: func(p []byte, _ any) bool { return IsOpening(p) },
	OpeningID: openingID,
	Validate:  validate,
	New:       newFromSetup,
	Stream: engine.StreamCarrier{
		Send:   engine.SendOptions{Channel: streamChannel},
		Prefix: []byte{StreamCommand},
		IsFrame: func(m engine.Message) bool {
			return m.Channel == streamChannel && len(m.Data) > 0 && m.Data[0] == StreamCommand
		},
	},
	Describe: Describe,
	Handshake: func(_ any, what string) (string, string, string) {
		return "wirefox " + what + " handshake", "another protocol", ""
	},
}

// openingID returns the PeerID of INITIAL_CLIENT p (IsOpening), which the
// client repeats unchanged, in datagrams of new IDs, until answered
// (docs/protocols/wirefox.md §3.2); false for any other datagram and for
// PeerID 0, which a session takes for none. It reads p in place.
func openingID(p []byte) (uint64, bool) {
	if !IsOpening(p) {
		return 0, false
	}
	const peerIDAt = 7 + 11 + 1 + len(Magic) + 1 // datagram and packet headers, command, magic, version
	id := binary.BigEndian.Uint64(p[peerIDAt:])
	return id, id != 0
}

// validate checks a conn's Wirefox options; its errors name rudp's
// Config fields.
func validate(s *engine.Setup) error {
	o := engine.OptionsOf[Options](s.Options)
	switch {
	case s.MTU < MTU:
		return fmt.Errorf("rudp: Config.MTU %d below Wirefox's %d", s.MTU, MTU)
	case len(o.Channels) > MaxChannels:
		return fmt.Errorf("rudp: Config.WirefoxChannels: %d channels above %d", len(o.Channels), MaxChannels)
	case s.MaxMessage > MaxMessage:
		return fmt.Errorf("rudp: Config.MaxMessage %d above %d", s.MaxMessage, MaxMessage)
	}
	switch {
	case (o.Identity != nil || o.ServerKey != nil) && !o.Encrypt:
		return fmt.Errorf("rudp: Config.WirefoxIdentity and WirefoxServerKey need WirefoxEncrypt")
	case o.Identity != nil && o.Identity.Curve() != ecdh.X25519(),
		o.ServerKey != nil && o.ServerKey.Curve() != ecdh.X25519():
		return fmt.Errorf("rudp: Config.WirefoxIdentity and WirefoxServerKey must be X25519 keys")
	}
	for i, m := range o.Channels {
		if m > Sequenced {
			return fmt.Errorf("rudp: Config.WirefoxChannels[%d] = %d, not a channel mode", i, m)
		}
	}
	return nil
}

// newFromSetup builds a Wirefox session of one association. Message
// conns, which may talk to the reference, send at the reference's own
// pace (Config.ReferencePeer: a datagram per 5 ms cycle within its
// congestion window), send a packet up to ResendLimit times, the
// reference's 6 when it is 0 (as the reference does: a peer that
// acknowledges nothing is given up within seconds), and challenge a
// restart announced from the peer's address (with keepalives the
// reference acknowledges) but not a close (the reference goes on
// acknowledging after its DISCONNECT_REQUEST); streams, between rudp
// peers, resend without limit (the idle timeout ends a dead peer) and
// challenge a close as well. Either way a listener's conn opens only once
// the client acknowledged a datagram sent to its address (the proof;
// with Encrypt the sealed handshake is the proof), so that a blind
// source is never accepted.
func newFromSetup(s *engine.Setup) (engine.Engine, error) {
	o := engine.OptionsOf[Options](s.Options)
	cfg := Config{
		Client:           !s.Accept,
		Accept:           s.Accept,
		PeerID:           s.Random64() | 1, // nonzero
		Channels:         o.Channels,
		MaxDatagram:      MTU,
		MaxMessage:       s.MaxMessage,
		SendLimit:        s.ResendLimit, // 0: the reference's 6
		KeepAlive:        s.KeepAlive,
		IdleTimeout:      s.IdleTimeout,
		HandshakeTimeout: s.HandshakeTimeout,
		Linger:           s.Linger,
		Congestion:       s.Congestion,
		Logger:           s.Logger,
		Tracer:           s.Tracer,
		ReferencePeer:    !s.Stream,
	}
	if o.Encrypt {
		cfg.Encrypt = true
		cfg.Rand = sessionRand(s.Rand)
		if s.Accept && o.Identity != nil {
			id := KeyPairFromSecret([KeySize]byte(o.Identity.Bytes()))
			cfg.Identity = &id
		}
		if !s.Accept && o.ServerKey != nil {
			key := [KeySize]byte(o.ServerKey.Bytes())
			cfg.ServerKey = &key
		}
	}
	if s.Stream {
		cfg.Channels = []ChannelMode{Ordered}
		cfg.MaxDatagram -= s.Overhead
		cfg.MaxMessage = SegmentSize
		cfg.MaxQueued = streamQueued
		cfg.SendLimit = -1
		cfg.Challenge = true
		cfg.RepeatAcks = true
		cfg.ProvenAbove = true // the stream's token proves the dialer's address
		cfg.KeepAlive = s.StreamKeepAlive()
	}
	return New(s.Now, cfg)
}

// sessionRand is the random source of one encrypted session (its key
// pair, challenge and nonces): crypto/rand when r is nil, else a ChaCha8
// generator of its own seeded from r, since the sessions of several
// conns draw at once.
func sessionRand(r io.Reader) io.Reader {
	if r == nil {
		return nil
	}
	var seed [32]byte
	for i := 0; i < len(seed); i += 8 {
		binary.BigEndian.PutUint64(seed[i:], engine.Random64(r))
	}
	return mrand.NewChaCha8(seed)
}
