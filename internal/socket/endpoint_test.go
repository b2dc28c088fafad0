package socket

import (
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// keyPeer is a Peer that takes nothing, for the endpoint's table.
type keyPeer struct{ k Key }

func (p *keyPeer) Key() Key                                       { return p.k }
func (p *keyPeer) Input(time.Time, []byte, int) (int, bool, bool) { return 0, false, false }
func (p *keyPeer) Flush(time.Time, *Outbox)                       {}
func (p *keyPeer) Refused(time.Time)                              {}
func (p *keyPeer) Stopped()                                       {}
func (p *keyPeer) TakesLarge() bool                               { return false }

// TestEndpointMapShrinks: a listener's map of associations, which Go
// never shrinks, is made anew once its entries fall to a quarter of
// their peak, down to shrinkPeak: after 1,000 conns have ended it holds
// the room of 62 (250 at the first move, then a quarter of that), not
// of 1,000.
func TestEndpointMapShrinks(t *testing.T) {
	ep := NewEndpoint(udpSocket(t), false, MaxDatagram, slog.New(slog.DiscardHandler))
	defer ep.Release()
	ps := make([]*keyPeer, 1000)
	for i := range ps {
		ps[i] = &keyPeer{KeyOf(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 1 + i})}
		require.True(t, ep.Add(ps[i]))
	}
	require.Equal(t, 1000, ep.peers.peak)
	for i, p := range ps {
		ep.Remove(p)
		switch n := len(ps) - i - 1; n {
		case 251:
			require.Equal(t, 1000, ep.peers.peak, "%d left", n)
		case 250:
			require.Equal(t, 250, ep.peers.peak, "%d left: moved to a new map", n)
		case 63:
			require.Equal(t, 250, ep.peers.peak, "%d left", n)
		case 62:
			require.Equal(t, 62, ep.peers.peak, "%d left: moved again", n)
		}
		require.Equal(t, len(ps)-i-1, ep.peers.len())
	}
	require.Equal(t, 62, ep.peers.peak, "below shrinkPeak the map stays")
	ep.mu.Lock()
	require.Equal(t, 1, ep.refs, "each Remove dropped its reference")
	ep.mu.Unlock()
}
