package porous

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpeningID: a dialer's Connect and its resend a ConnectInterval later
// carry the same identifier, the dialer's nonce; the listener's
// ConnectAck, a refusal (nonce 0), a cut Connect and garbage carry none.
func TestOpeningID(t *testing.T) {
	d := newSession(t, epoch, Config{Nonce: nonceA})
	first := pollHex(t, d, at(0))
	require.Empty(t, pollHex(t, d, at(int(ConnectInterval.Milliseconds())-1)))
	again := pollHex(t, d, at(int(ConnectInterval.Milliseconds())))
	require.Equal(t, []string{connectHex(nonceA)}, first)
	require.Equal(t, first, again)
	for _, h := range []string{first[0], again[0]} {
		id, ok := Protocol.OpeningID(unhex(t, h))
		require.True(t, ok)
		require.Equal(t, uint64(nonceA), id)
	}

	l := newSession(t, epoch, Config{Nonce: nonceB, Accept: true})
	feedHex(t, l, at(1), first[0])
	answer := pollHex(t, l, at(1))
	require.Contains(t, answer, ackHex(nonceA))
	for _, p := range [][]byte{unhex(t, ackHex(nonceA)), Refusal(1)[0], unhex(t, first[0])[:10], {0xff, 1, 2}, nil} {
		id, ok := Protocol.OpeningID(p)
		require.False(t, ok, "%x", p)
		require.Zero(t, id, "%x", p)
	}
	connect := unhex(t, first[0])
	require.Zero(t, testing.AllocsPerRun(100, func() { Protocol.OpeningID(connect) }))
}
