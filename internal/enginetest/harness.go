package enginetest

import (
	"encoding/hex"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Drain returns the data of every message s's Recv hands out, as strings;
// nil when there is none.
func Drain(s engine.Engine) []string {
	var out []string
	for {
		m, ok := s.Recv()
		if !ok {
			return out
		}
		out = append(out, string(m.Data))
	}
}

// PollHex returns the hex of the next datagram s writes at now into a
// buffer of size bytes, or "" when nothing is due.
func PollHex(s engine.Engine, now time.Time, size int) string {
	buf := make([]byte, size)
	n := s.Poll(now, buf)
	return hex.EncodeToString(buf[:n])
}
