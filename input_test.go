package rudp

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInputJoined: the datagrams GRO joined go to their association in
// one input call, each checked on its own: three whose seals do not match
// are all consumed and counted, and none is taken; once the association
// is over, input consumes one datagram and stops, so that the rest are
// looked up again.
func TestInputJoined(t *testing.T) {
	c, _, _ := streamPair(t, nil, links[0])
	const seg = 100
	joined := bytes.Repeat([]byte{0xff}, 3*seg-10) // the last one shorter

	n, took, restarted := c.a.Input(time.Now(), joined, seg)
	require.Equal(t, len(joined), n)
	require.False(t, took)
	require.False(t, restarted)
	c.a.mu.Lock()
	require.Equal(t, uint64(3), c.a.badSeals)
	c.a.mu.Unlock()

	c.a.abandon(ErrReset)
	n, took, restarted = c.a.Input(time.Now(), joined, seg)
	require.Equal(t, seg, n)
	require.False(t, took)
	require.False(t, restarted)
}
