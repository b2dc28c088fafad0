package rudp

import (
	"net"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/socket"
)

// setup returns what the protocol's engine of one association is built
// from (see engine.Setup). stream selects rudp's stream semantics, where
// a restarted peer ends the association instead of being adopted
// silently; accept, that the association is a listener's, created by a
// datagram from an unknown address. What the engine logs names peer; tr,
// when not nil, receives its events.
func (c *Config) setup(now time.Time, peer net.Addr, tr *connTrace, stream, accept bool) *engine.Setup {
	s := &engine.Setup{
		Now:              now,
		Peer:             peer,
		Stream:           stream,
		Accept:           accept,
		Rand:             c.Rand,
		Congestion:       congestion.Algorithm(c.Congestion),
		Logger:           c.Logger.With("peer", peer),
		Tracer:           tr.tracer(),
		MTU:              c.MTU,
		KeepAlive:        c.KeepAlive,
		IdleTimeout:      c.IdleTimeout,
		HandshakeTimeout: c.HandshakeTimeout,
		Linger:           c.Linger,
		MaxMessage:       c.MaxMessage,
		MaxRecvWindow:    c.MaxRecvWindow,
		ResendLimit:      c.ResendLimit,
		Options:          c.opts,
		Listener:         c.roster,
	}
	if stream {
		s.Overhead = socket.SealLen // see socket.Seal
		s.Listener = nil
	}
	return s
}

// newEngine builds the protocol engine for one association (see setup).
func (c *Config) newEngine(now time.Time, peer net.Addr, tr *connTrace, stream, accept bool) (engine.Engine, error) {
	return c.proto.New(c.setup(now, peer, tr, stream, accept))
}

// random64 draws 64 random bits from Config.Rand, or from crypto/rand
// when it is nil or fails.
func (c *Config) random64() uint64 { return engine.Random64(c.Rand) }
