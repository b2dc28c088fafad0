package wirefox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHistoryTrim: trim frees a history's bitmap only when every ID it
// covers was seen (or, for datagram IDs, when gaps may count as seen);
// afterwards every ID up to the newest counts as seen, and later IDs are
// tracked exactly again.
func TestHistoryTrim(t *testing.T) {
	var h history
	for id := uint32(1000); id < 1100; id++ {
		if id != 1050 {
			h.add(id)
		}
	}
	h.trim(false)
	require.NotNil(t, h.bits, "1050 is missing: a packet ID that may come again")
	require.False(t, h.has(1050))
	h.add(1050)
	h.trim(false)
	require.Nil(t, h.bits)
	require.True(t, h.has(1000))
	require.True(t, h.has(1099))
	require.False(t, h.has(1100))

	h.add(1102)
	require.NotNil(t, h.bits)
	require.True(t, h.has(1099), "seen before the trim")
	require.False(t, h.has(1100))
	require.False(t, h.has(1101))
	require.True(t, h.has(1102))

	h.trim(true)
	require.Nil(t, h.bits, "a datagram history takes its gaps as seen")
	require.True(t, h.has(1101))
	require.False(t, h.has(1103))
}
