package airhook

import (
	"github.com/rudpkit/rudp/internal/engine"
)

// Protocol describes Airhook to the package above the engines. Airhook
// has no options of its own; a stream's frames are its messages as they
// are.
var Protocol = engine.Protocol{
	Name:      "airhook",
	IsOpening: func(p []byte, _ any) bool { return IsOpening(p) },
	Validate:  func(*engine.Setup) error { return nil },
	New:       newFromSetup,
	Describe:  Describe,
	Handshake: func(_ any, what string) (string, string, string) {
		return "airhook " + what + " handshake", "another protocol", ""
	},
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
