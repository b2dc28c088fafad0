package rudp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTrimKeepsHeldFrame: an idle conn trims its engine, but not while a
// frame the engine refused waits in the engine's own buffer (see
// Conn.frameBuffer): the frame would be lost.
func TestTrimKeepsHeldFrame(t *testing.T) {
	c, _, _ := streamPair(t, nil, links[0])
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	require.NotNil(t, c.build, "the engine builds frames in place")
	const frame = "a refused frame"
	copy(c.build.MessageBuffer(len(frame)), frame) // as frameBuffer asks for such a frame
	c.held = len(frame)
	c.settled(c.active.Add(2 * trimAfter))
	require.Equal(t, frame, string(c.frameBuffer()[:c.held]))
	c.held = 0 // not a frame to send
}
