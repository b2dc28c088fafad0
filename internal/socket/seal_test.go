package socket

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSeal: a sealed datagram unseals to itself; a flipped bit anywhere,
// a cut, or a datagram shorter than a seal does not.
func TestSeal(t *testing.T) {
	p := []byte("a datagram of some engine")
	b := Seal(append([]byte{}, p...))
	require.Len(t, b, len(p)+SealLen)
	got, ok := Unseal(b)
	require.True(t, ok)
	require.Equal(t, p, got)
	for i := range len(b) * 8 {
		c := append([]byte{}, b...)
		c[i/8] ^= 1 << (i % 8)
		_, ok := Unseal(c)
		require.False(t, ok, "bit %d", i)
	}
	for n := range len(b) {
		_, ok := Unseal(b[:n])
		require.False(t, ok, "cut to %d", n)
	}
}
