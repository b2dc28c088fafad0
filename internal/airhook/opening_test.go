package airhook

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIsOpening: a packet with the sender's session and no observed one
// opens a session at a listener; one that names an observed session, one
// without a session, an out-of-band datagram and a short one do not; the
// check allocates nothing.
func TestIsOpening(t *testing.T) {
	first := (&Packet{Seq: 1, Session: 0x11223344}).AppendTo(nil)
	require.True(t, IsOpening(first))
	require.False(t, IsOpening((&Packet{Seq: 2, Session: 1, ObservedSession: 2}).AppendTo(nil)))
	require.False(t, IsOpening((&Packet{Seq: 2}).AppendTo(nil)))
	oob := append([]byte{}, first...)
	oob[0] |= flagOutOfBand
	require.False(t, IsOpening(oob))
	require.False(t, IsOpening(first[:headerLen+3]))
	require.Zero(t, testing.AllocsPerRun(100, func() { IsOpening(first) }))
}
