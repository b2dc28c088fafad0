package rudp

import (
	"log/slog"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEndpointMapShrinks: a listener's map of associations, which Go
// never shrinks, is made anew once its entries fall to a quarter of
// their peak, down to shrinkPeak: after 1,000 conns have ended it holds
// the room of 62 (250 at the first move, then a quarter of that), not
// of 1,000.
func TestEndpointMapShrinks(t *testing.T) {
	ep := newEndpoint(udpSocket(t, nil, 0), false, slog.New(slog.DiscardHandler))
	defer ep.release()
	as := make([]*assoc, 1000)
	for i := range as {
		as[i] = &assoc{ep: ep, key: keyOf(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 1 + i})}
		require.True(t, ep.add(as[i]))
	}
	require.Equal(t, 1000, ep.peak)
	for i, a := range as {
		ep.remove(a)
		switch n := len(as) - i - 1; n {
		case 251:
			require.Equal(t, 1000, ep.peak, "%d left", n)
		case 250:
			require.Equal(t, 250, ep.peak, "%d left: moved to a new map", n)
		case 63:
			require.Equal(t, 250, ep.peak, "%d left", n)
		case 62:
			require.Equal(t, 62, ep.peak, "%d left: moved again", n)
		}
		require.Len(t, ep.assocs, len(as)-i-1)
	}
	require.Equal(t, 62, ep.peak, "below shrinkPeak the map stays")
	ep.mu.Lock()
	require.Equal(t, 1, ep.refs, "each remove dropped its reference")
	ep.mu.Unlock()
}
