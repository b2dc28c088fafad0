package rudp

import (
	"crypto/ecdh"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/wirefox"
)

const (
	// wirefoxStreamChannel is the ORDERED channel of a stream's frames.
	wirefoxStreamChannel = 1
	// wirefoxStreamQueued bounds the frames a stream over Wirefox may have
	// unacknowledged: under half the packet IDs a receiver's duplicate
	// history covers, so that the congestion controller sets the flight.
	wirefoxStreamQueued = 1 << 14
	// MaxMessageWirefox is the largest Wirefox message, command byte
	// included, in bytes (Config.MaxMessage).
	MaxMessageWirefox = 16 << 20
	// MaxWirefoxChannels is the most entries of Config.WirefoxChannels.
	MaxWirefoxChannels = 255
	// minWirefoxMTU is the smallest Config.MTU Wirefox works with: its
	// datagrams are up to 1300 bytes, 1200-byte segments and headers.
	minWirefoxMTU = wirefox.MTU
)

// validateWirefox checks the Wirefox fields of a resolved Config.
func (c *Config) validateWirefox() error {
	switch {
	case c.MTU < minWirefoxMTU:
		return fmt.Errorf("rudp: Config.MTU %d below Wirefox's %d", c.MTU, minWirefoxMTU)
	case len(c.WirefoxChannels) > MaxWirefoxChannels:
		return fmt.Errorf("rudp: Config.WirefoxChannels: %d channels above %d", len(c.WirefoxChannels), MaxWirefoxChannels)
	case c.MaxMessage > MaxMessageWirefox:
		return fmt.Errorf("rudp: Config.MaxMessage %d above %d", c.MaxMessage, MaxMessageWirefox)
	}
	switch {
	case (c.WirefoxIdentity != nil || c.WirefoxServerKey != nil) && !c.WirefoxEncrypt:
		return fmt.Errorf("rudp: Config.WirefoxIdentity and WirefoxServerKey need WirefoxEncrypt")
	case c.WirefoxIdentity != nil && c.WirefoxIdentity.Curve() != ecdh.X25519(),
		c.WirefoxServerKey != nil && c.WirefoxServerKey.Curve() != ecdh.X25519():
		return fmt.Errorf("rudp: Config.WirefoxIdentity and WirefoxServerKey must be X25519 keys")
	}
	for i, m := range c.WirefoxChannels {
		if m > WirefoxSequenced {
			return fmt.Errorf("rudp: Config.WirefoxChannels[%d] = %d, not a channel mode", i, m)
		}
	}
	return nil
}

// newWirefox builds a Wirefox engine. Message conns, which may talk to
// the reference, send at the reference's own pace (wirefox.Config's
// ReferencePeer: a datagram per 5 ms cycle within its congestion
// window), send a packet up to Config.ResendLimit times, the reference's
// 6 when it is 0 (as the reference does: a peer that acknowledges
// nothing is given up within seconds), and challenge a restart announced
// from the peer's address (with keepalives the reference acknowledges)
// but not a close (the reference goes on acknowledging after its
// DISCONNECT_REQUEST); streams, between rudp peers, resend without limit
// (IdleTimeout ends a dead peer) and challenge a close as well. Either
// way a listener's conn opens only once the client acknowledged a
// datagram sent to its address (wirefox's proof; with WirefoxEncrypt the
// sealed handshake is the proof), so that a blind source is never
// accepted and gets at most 3 times what it sent (assoc.limit).
func (c *Config) newWirefox(now time.Time, log *slog.Logger, tr *connTrace, stream, accept bool) (engine.Engine, error) {
	cfg := wirefox.Config{
		Client:           !accept,
		Accept:           accept,
		PeerID:           c.random64() | 1, // nonzero
		Channels:         wirefoxModes(c.WirefoxChannels),
		MaxDatagram:      wirefox.MTU,
		MaxMessage:       c.MaxMessage,
		SendLimit:        c.ResendLimit, // 0: the reference's 6
		KeepAlive:        c.KeepAlive,
		IdleTimeout:      c.IdleTimeout,
		HandshakeTimeout: c.HandshakeTimeout,
		Linger:           c.Linger,
		Congestion:       congestion.Algorithm(c.Congestion),
		Logger:           log,
		Tracer:           tr.tracer(),
		ReferencePeer:    !stream,
	}
	if c.WirefoxEncrypt {
		cfg.Encrypt = true
		cfg.Rand = c.wirefoxRand()
		if accept && c.WirefoxIdentity != nil {
			id := wirefox.KeyPairFromSecret([wirefox.KeySize]byte(c.WirefoxIdentity.Bytes()))
			cfg.Identity = &id
		}
		if !accept && c.WirefoxServerKey != nil {
			key := [wirefox.KeySize]byte(c.WirefoxServerKey.Bytes())
			cfg.ServerKey = &key
		}
	}
	if stream {
		cfg.Channels = []wirefox.ChannelMode{wirefox.Ordered}
		cfg.MaxDatagram -= sealLen // see seal
		cfg.MaxMessage = wirefox.SegmentSize
		cfg.MaxQueued = wirefoxStreamQueued
		cfg.SendLimit = -1
		cfg.Challenge = true
		cfg.RepeatAcks = true
		cfg.ProvenAbove = true // the stream's token proves the dialer's address
		cfg.KeepAlive = c.streamKeepAlive(accept)
	}
	return wirefox.New(now, cfg)
}

// wirefoxModes converts Config.WirefoxChannels for the engine.
func wirefoxModes(ms []WirefoxChannelMode) []wirefox.ChannelMode {
	out := make([]wirefox.ChannelMode, len(ms))
	for i, m := range ms {
		out[i] = wirefox.ChannelMode(m)
	}
	return out
}

// wirefoxRand is the random source of one encrypted Wirefox engine (its
// key pair, challenge and nonces): crypto/rand, or with Config.Rand a
// ChaCha8 generator of its own seeded from it, since the engines of
// several conns draw at once.
func (c *Config) wirefoxRand() io.Reader {
	if c.Rand == nil {
		return nil
	}
	var seed [32]byte
	for i := 0; i < len(seed); i += 8 {
		binary.BigEndian.PutUint64(seed[i:], c.random64())
	}
	return mrand.NewChaCha8(seed)
}
