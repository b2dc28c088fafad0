package lludp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestIsOpening: a reliable UseCircuitCode with its 36-byte body opens a
// circuit at a listener, with or without an extra header; an unreliable
// or zerocoded one, a short body, and other messages do not; the check
// allocates nothing.
func TestIsOpening(t *testing.T) {
	body := appendCircuit(nil, Circuit{Code: 7})
	open := AppendPacket(nil, &Packet{Flags: FlagReliable, Seq: 1, Message: UseCircuitCode, Body: body})
	require.True(t, IsOpening(open))
	withExtra := AppendPacket(nil, &Packet{Flags: FlagReliable, Seq: 1, Message: UseCircuitCode, Extra: []byte{9, 9}, Body: body})
	require.True(t, IsOpening(withExtra))
	require.False(t, IsOpening(AppendPacket(nil, &Packet{Seq: 1, Message: UseCircuitCode, Body: body})), "unreliable")
	require.False(t, IsOpening(AppendPacket(nil, &Packet{Flags: FlagReliable, Seq: 1, Message: UseCircuitCode, Body: body[:35]})))
	require.False(t, IsOpening(AppendPacket(nil, &Packet{Flags: FlagReliable, Seq: 1, Message: StartPingCheck, Body: body})))
	zc := append([]byte{}, open...)
	zc[0] |= FlagZerocoded
	require.False(t, IsOpening(zc))
	require.False(t, IsOpening(open[:10]))
	require.Zero(t, testing.AllocsPerRun(100, func() { IsOpening(open) }))
}
