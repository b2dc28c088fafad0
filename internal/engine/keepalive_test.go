package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestKeepAliveAt: a keepalive is due every after the later of the last
// datagram received and the last keepalive sent; never with every ≤ 0.
func TestKeepAliveAt(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	at, ok := KeepAliveAt(20*time.Second, t0.Add(5*time.Second), t0)
	require.True(t, ok)
	require.Equal(t, t0.Add(25*time.Second), at, "heard from the peer after the last keepalive")
	at, ok = KeepAliveAt(20*time.Second, t0, t0.Add(7*time.Second))
	require.True(t, ok)
	require.Equal(t, t0.Add(27*time.Second), at, "a keepalive after the last datagram")
	_, ok = KeepAliveAt(0, t0, t0)
	require.False(t, ok)
	_, ok = KeepAliveAt(-time.Second, t0, t0)
	require.False(t, ok)
}
