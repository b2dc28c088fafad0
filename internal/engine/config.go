package engine

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Defaults of the settings every engine's Config has; each Config says
// which it takes.
const (
	// DefaultLinger bounds StateClosing (Config.Linger).
	DefaultLinger = 5 * time.Second
	// DefaultMaxQueued bounds Pending (Config.MaxQueued): Send returns
	// ErrQueueFull at the bound.
	DefaultMaxQueued = 1024
)

// ErrConfig is wrapped by the error an engine's New returns for a Config
// holding a value it cannot honour.
var ErrConfig = errors.New("invalid config")

// ConfigError returns an error wrapping ErrConfig that names the protocol
// and what is wrong: "lludp: invalid config: AckDelay -1s".
func ConfigError(protocol, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", protocol, ErrConfig, fmt.Sprintf(format, args...))
}

// CheckConfig returns the ConfigError of the settings every engine's
// Config has that cannot be honoured: Client and Accept both set (false
// for an engine without them), a negative MaxQueued, or a negative timer
// among timers (Linger, the handshake, idle and keepalive timers...). It
// returns nil when there is none.
func CheckConfig(protocol string, client, accept bool, maxQueued int, timers ...time.Duration) error {
	switch {
	case client && accept:
		return ConfigError(protocol, "Client and Accept both set")
	case maxQueued < 0:
		return ConfigError(protocol, "MaxQueued %d", maxQueued)
	}
	for _, t := range timers {
		if t < 0 {
			return ConfigError(protocol, "negative timer")
		}
	}
	return nil
}

// DrawID sets *id, when it is 0, to random bytes read from r
// (crypto/rand when nil), big-endian, as many as *id holds: the session
// IDs and nonces an engine draws from its Config.Rand. The error is r's;
// *id is then unchanged.
func DrawID[T uint32 | uint64](r io.Reader, id *T) error {
	if *id != 0 {
		return nil
	}
	if r == nil {
		r = rand.Reader
	}
	var b [8]byte
	n := binary.Size(*id)
	if _, err := io.ReadFull(r, b[8-n:]); err != nil {
		return err
	}
	*id = T(binary.BigEndian.Uint64(b[:]))
	return nil
}
