package porous

import (
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Options are POROUS's own settings of a conn (rudp's Config.Channels,
// LowPriorityChannels, ChannelWeights and MaxUnreliableDelay).
type Options struct {
	// Channels is the channel count, 1 to MaxChannels (0: 1).
	Channels int
	// LowPriority lists the channels sent at Low priority.
	LowPriority []uint8
	// Weights are the channels' weights, 1 to 255 each.
	Weights []int
	// MaxUnreliableDelay is Config.MaxUnreliableDelay.
	MaxUnreliableDelay time.Duration
}

// channels is the channel count of o, 1 by default.
func (o Options) channels() int { return max(o.Channels, 1) }

// Protocol describes POROUS to the package above the engines; its
// options are an Options. Streams run on channel 0.
var Protocol = engine.Protocol{
	Name:      "porous",
	IsOpening: func(p []byte, _ any) bool { return IsOpening(p) },
	Refusal: func(opts any) [][]byte {
		return Refusal(engine.OptionsOf[Options](opts).channels())
	},
	Validate: validate,
	New:      newFromSetup,
	Describe: Describe,
	Handshake: func(opts any, what string) (string, string, string) {
		return fmt.Sprintf("porous %s handshake (Config.Channels %d)", what, engine.OptionsOf[Options](opts).channels()),
			"another protocol, another channel count", ""
	},
}

// validate checks a conn's POROUS options; its errors name rudp's
// Config fields.
func validate(s *engine.Setup) error {
	o := engine.OptionsOf[Options](s.Options)
	if o.Channels > MaxChannels {
		return fmt.Errorf("rudp: Config.Channels %d above %d", o.Channels, MaxChannels)
	}
	for _, ch := range o.LowPriority {
		if int(ch) >= o.channels() {
			return fmt.Errorf("rudp: Config.LowPriorityChannels: channel %d of %d", ch, o.channels())
		}
	}
	if len(o.Weights) > o.channels() {
		return fmt.Errorf("rudp: Config.ChannelWeights: %d weights for %d channels", len(o.Weights), o.channels())
	}
	for i, w := range o.Weights {
		if w < 1 || w > 255 {
			return fmt.Errorf("rudp: Config.ChannelWeights[%d] = %d, want 1..255", i, w)
		}
	}
	if s.MaxMessage > MaxPacketLimit {
		return fmt.Errorf("rudp: Config.MaxMessage %d above %d", s.MaxMessage, MaxPacketLimit)
	}
	return nil
}

// newFromSetup builds a POROUS session of one association. A message
// conn may talk to the reference, which pings every second and whose RTT
// estimate our answers feed: it pings as often. A stream runs between
// rudp peers: it pings at the stream keepalive, sends one fragment per
// frame (so one frame fills one datagram, the layer above's overhead
// included), may hold the peer's whole receive window, and takes only
// what a reliable rudp peer sends.
func newFromSetup(s *engine.Setup) (engine.Engine, error) {
	o := engine.OptionsOf[Options](s.Options)
	pri := make([]Priority, o.channels())
	for _, ch := range o.LowPriority {
		pri[ch] = Low
	}
	maxPacket, maxQueued, maxQueuedBytes := s.MaxMessage, 0, 0
	keepAlive := min(s.KeepAlive, DefaultKeepAlive)
	if s.Stream {
		keepAlive = s.StreamKeepAlive()
		maxPacket = FragmentSize - s.Overhead
		maxQueued = TransferWindow
		maxQueuedBytes = 2 * s.MaxRecvWindow
	}
	return New(s.Now, Config{
		Rand:                 s.Rand,
		Congestion:           s.Congestion,
		Logger:               s.Logger,
		Tracer:               s.Tracer,
		Channels:             o.channels(),
		Priorities:           pri,
		Weights:              o.Weights,
		MaxUnreliableDelay:   o.MaxUnreliableDelay,
		MaxPacket:            maxPacket,
		MaxQueued:            maxQueued,
		MaxQueuedBytes:       maxQueuedBytes,
		Accept:               s.Accept,
		KeepAlive:            keepAlive,
		PingWhenQuiet:        s.Stream,
		IdleTimeout:          s.IdleTimeout,
		HandshakeTimeout:     s.HandshakeTimeout,
		Linger:               s.Linger,
		RejectNewPeerSession: s.Stream,
		LargeFrames:          s.Stream,
		Overhead:             s.Overhead,
		// A stream's peer sends only reliable packets: frames far ahead
		// of a gap, out-of-order delivery and conflicting copies are
		// then a blind attacker's, not the peer's.
		ReliablePeer: s.Stream,
	})
}
