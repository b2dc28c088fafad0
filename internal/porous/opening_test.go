package porous

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIsOpening: a Connect opens a session at a listener, whatever its
// version or channels; no other frame does, nor a cut or padded Connect;
// the check allocates nothing.
func TestIsOpening(t *testing.T) {
	connect := (&Frame{Type: FrameConnect, Version: Version + 1, Channels: 7, Nonce: 1}).AppendTo(nil)
	require.True(t, IsOpening(connect))
	require.False(t, IsOpening(connect[:len(connect)-1]))
	require.False(t, IsOpening(append(connect, 0)))
	for _, f := range []Frame{{Type: FrameConnectAck, Nonce: 1}, {Type: FramePing}, {Type: FrameDisconnect}, {Type: FrameDataAck, Acks: []uint32{1, 2}}} {
		require.False(t, IsOpening(f.AppendTo(nil)), "%v", f.Type)
	}
	require.False(t, IsOpening(nil))
	require.Zero(t, testing.AllocsPerRun(100, func() { IsOpening(connect) }))
}
