package airhook

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOpeningID: a new session's first packet and its header repeat one
// RTOInitial later both carry the session's ID, Config.Session; the
// peer's answer, which names the observed session, and datagrams that are
// no opening carry none.
func TestOpeningID(t *testing.T) {
	const session = 0x0a0a0a0a
	t0 := time.Unix(1_000_000, 0)
	c, err := New(t0, Config{Session: session})
	require.NoError(t, err)
	buf := make([]byte, DefaultMaxDatagram)
	first := append([]byte{}, buf[:c.Poll(t0, buf)]...)
	require.Zero(t, c.Poll(t0.Add(DefaultRTOInitial-time.Millisecond), buf))
	require.Equal(t, t0.Add(DefaultRTOInitial), c.Deadline())
	again := append([]byte{}, buf[:c.Poll(t0.Add(DefaultRTOInitial), buf)]...)
	require.Equal(t, first, again, "a header repeat")
	for _, p := range [][]byte{first, again} {
		id, ok := Protocol.OpeningID(p)
		require.True(t, ok)
		require.Equal(t, uint64(session), id)
	}

	s, err := New(t0, Config{Session: 0x0b0b0b0b})
	require.NoError(t, err)
	require.NoError(t, s.HandleDatagram(t0, first))
	answer := buf[:s.Poll(t0, buf)]
	require.Equal(t, "18010002"+"0a0a0a0a"+"0b0b0b0b", hex.EncodeToString(answer))
	zero := (&Packet{Seq: 1}).AppendTo(nil)
	zero[0] |= flagSession
	zero = append(zero, 0, 0, 0, 0)
	oob := append([]byte{}, first...)
	oob[0] |= flagOutOfBand
	for _, p := range [][]byte{answer, zero, oob, first[:headerLen+3], nil} {
		id, ok := Protocol.OpeningID(p)
		require.False(t, ok, "%x", p)
		require.Zero(t, id, "%x", p)
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { Protocol.OpeningID(first) }))
}
