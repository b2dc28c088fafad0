package avara

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIsOpening: a checksummed Login at serial 0 opens a connection at a
// listener; another version, another message, an AckMap, a punch
// datagram or a cut datagram do not; the check allocates nothing.
func TestIsOpening(t *testing.T) {
	v := loadVectors(t)
	v1 := unhex(t, v.Vectors[0].Hex)
	require.True(t, IsOpening(v1, DefaultVersion))
	require.False(t, IsOpening(v1, DefaultVersion+1))
	require.False(t, IsOpening(v1[:8], DefaultVersion))
	for _, h := range allVectorHex(v)[1:] {
		require.False(t, IsOpening(unhex(t, h), DefaultVersion))
	}
	require.False(t, IsOpening(datagram(Datagram{Ack: NothingReceived, Messages: []Message{{Serial: 2, Command: CommandLogin}}}), DefaultVersion))
	require.False(t, IsOpening(datagram(Datagram{Ack: NothingReceived, HasAckMap: true, Messages: []Message{{Command: CommandLogin}}}), DefaultVersion))
	require.True(t, IsOpening(datagram(Datagram{Ack: NothingReceived, Messages: []Message{{Command: CommandLogin}}}), DefaultVersion))
	require.Zero(t, testing.AllocsPerRun(100, func() { IsOpening(v1, DefaultVersion) }))
}
