package porous

import (
	"encoding/hex"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
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

// TestRefusal: the listener's answer to an incompatible Connect is its
// own Connect then a Disconnect; a connecting dialer with another channel
// count ends with engine.ErrIncompatible on the first, whatever follows.
func TestRefusal(t *testing.T) {
	r := Refusal(3)
	require.Equal(t, []string{"000002ffffffff00000000", disconnectHex}, []string{hex.EncodeToString(r[0]), hex.EncodeToString(r[1])})
	d := newSession(t, epoch, Config{Nonce: nonceA, Channels: 2})
	require.Equal(t, []string{"000001ffffffff0a0a0a0a"}, pollHex(t, d, at(0)))
	feedHex(t, d, at(1), hex.EncodeToString(r[0]))
	require.Equal(t, engine.StateClosed, d.State())
	require.ErrorIs(t, d.Err(), engine.ErrIncompatible)
	require.EqualError(t, d.Err(), "peer parameters incompatible: porous: peer speaks version 0 with 3 channels, we version 0 with 2")
	require.ErrorIs(t, d.HandleDatagram(at(1), r[1]), engine.ErrClosed)
}
