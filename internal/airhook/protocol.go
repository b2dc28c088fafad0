package airhook

import (
	"encoding/binary"

	"github.com/rudpkit/rudp/internal/engine"
)

// Protocol describes Airhook to the package above the engines. Airhook
// has no options of its own; a stream's frames are its messages as they
// are.
var Protocol = engine.Protocol{
	Name:      "airhook",
	IsOpening: func(p []byte, _ any) bool { return IsOpening(p) },
	OpeningID: openingID,
	Validate:  func(*engine.Setup) error { return nil },
	New:       newFromSetup,
	Describe:  Describe,
	Handshake: func(_ any, what string) (string, string, string) {
		return "airhook " + what + " handshake", "another protocol", ""
	},
}

// openingID returns the sender's session ID in opening packet p
// (IsOpening), which every packet of the session carries until the peer
// observes it (docs/protocols/airhook.md §3.2); false for any other
// datagram and for the reserved ID 0. It reads p in place.
func openingID(p []byte) (uint64, bool) {
	if !IsOpening(p) {
		return 0, false
	}
	id := binary.BigEndian.Uint32(p[headerLen:]) // no observed session before it
	return uint64(id), id != 0
}

// newFromSetup builds an Airhook session of one association.
func newFromSetup(s *engine.Setup) (engine.Engine, error) {
	maxDatagram, keepAlive := s.MTU, s.KeepAlive
	if s.Stream {
		maxDatagram -= s.Overhead
		keepAlive = s.StreamKeepAlive()
	}
	return New(s.Now, Config{
		Rand:                 s.Rand,
		Congestion:           s.Congestion,
		Logger:               s.Logger,
		Tracer:               s.Tracer,
		MaxDatagram:          maxDatagram,
		KeepAlive:            keepAlive,
		IdleTimeout:          s.IdleTimeout,
		HandshakeTimeout:     s.HandshakeTimeout,
		Linger:               s.Linger,
		RejectNewPeerSession: s.Stream,
	})
}
