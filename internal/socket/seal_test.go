package socket

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSeal: a sealed datagram unseals to itself under its key, and under
// no other; a flipped bit anywhere, a cut, or a datagram shorter than a
// seal does not unseal.
func TestSeal(t *testing.T) {
	p := []byte("a datagram of some engine")
	for _, key := range []uint32{0, SealKey(1, 2), 0xdeadbeef} {
		b := Seal(append([]byte{}, p...), key)
		require.Len(t, b, len(p)+SealLen)
		got, ok := Unseal(b, key)
		require.True(t, ok)
		require.Equal(t, p, got)
		_, ok = Unseal(b, key+1)
		require.False(t, ok, "another key")
		for i := range len(b) * 8 {
			c := append([]byte{}, b...)
			c[i/8] ^= 1 << (i % 8)
			_, ok := Unseal(c, key)
			require.False(t, ok, "bit %d", i)
		}
		for n := range len(b) {
			_, ok := Unseal(b[:n], key)
			require.False(t, ok, "cut to %d", n)
		}
	}
	// The plain seal is the CRC-32C of the datagram, as a peer computes it.
	b := Seal(append([]byte{}, p...), 0)
	require.Equal(t, crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)), binary.BigEndian.Uint32(b[len(p):]))
}

// TestSealKey: both ends derive the same key whichever start is whose;
// a change in either start changes it; it is never 0 (the plain seal).
func TestSealKey(t *testing.T) {
	a, b := uint64(0x0123456789abcdef), uint64(0xfedcba9876543210)
	require.Equal(t, SealKey(a, b), SealKey(b, a))
	require.NotEqual(t, SealKey(a, b), SealKey(a^1, b))
	require.NotEqual(t, SealKey(a, b), SealKey(a, b^1<<63))
	require.NotZero(t, SealKey(a, a))
}
