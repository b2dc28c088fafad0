package toy

import "github.com/rudpkit/rudp/internal/engine"

// Protocol describes toy to the package above the engines. It has no
// options, no refusal, no message header and no listener state; a
// stream's frames are its messages as they are.
var Protocol = engine.Protocol{
	Name:      "toy",
	IsOpening: func(p []byte, _ any) bool { return IsOpening(p) },
	Validate:  func(*engine.Setup) error { return nil },
	New: func(s *engine.Setup) (engine.Engine, error) {
		e, err := New(s)
		if err != nil {
			return nil, err // not a typed nil
		}
		return e, nil
	},
	Describe: Describe,
	Handshake: func(_ any, what string) (string, string, string) {
		return "toy " + what + " handshake", "another protocol", ""
	},
}
