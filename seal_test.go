package rudp

import (
	"testing"

	"github.com/rudpkit/rudp/internal/socket"

	"github.com/stretchr/testify/require"
)

// TestStreamKeyedSeal: once a stream of any protocol has moved data both
// ways, both ends seal under the same key, derived from both starts, and
// each has seen the other do so; from then on a datagram under the plain
// seal is dropped unless it is the protocol's opening.
func TestStreamKeyedSeal(t *testing.T) {
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			c, s, _ := streamPair(t, &Config{Protocol: p}, links[0])
			streamThrough(t, c, s, 64<<10)
			streamThrough(t, s, c, 64<<10)
			var keys []uint32
			for _, x := range []*Conn{c, s} {
				x.a.mu.Lock()
				keys = append(keys, x.a.txKey, x.a.rxKey)
				require.True(t, x.a.peerKeyed, "%v saw the peer's keyed seal", x.LocalAddr())
				x.a.mu.Unlock()
			}
			require.NotZero(t, keys[0])
			require.Equal(t, []uint32{keys[0], keys[0], keys[0], keys[0]}, keys)

			a := s.a
			a.mu.Lock()
			defer a.mu.Unlock()
			other := []byte{0, 0, 0, 0, 0, 0, 0, 0}
			require.False(t, a.isOpening(other))
			_, ok, late := a.unseal(seal(other))
			require.Equal(t, []bool{false, true}, []bool{ok, late}, "plain seal after the key")
			_, ok, late = a.unseal(socket.Seal(other, a.rxKey))
			require.Equal(t, []bool{true, false}, []bool{ok, late}, "the keyed seal")
			_, ok, late = a.unseal(socket.Seal(other, a.rxKey+1))
			require.Equal(t, []bool{false, false}, []bool{ok, late}, "another key")
			_, ok, late = a.unseal(openingOf(t, p))
			require.Equal(t, []bool{true, false}, []bool{ok, late}, "an opening under the plain seal still reaches the engine")
		})
	}
}
