package lludp

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOpeningID: a client's UseCircuitCode and its resend 5 s later, whose
// header differs by the RESENT flag, both carry the circuit code, as does
// one with an extra header; the server's ack, an unreliable
// UseCircuitCode and a short one carry none.
func TestOpeningID(t *testing.T) {
	c := newSession(t, t0, Config{Client: true, Circuit: testCircuit})
	first := poll(t, c, t0)
	require.Equal(t, helloHex, first)
	require.Equal(t, t0.Add(5*time.Second), c.Deadline())
	again := poll(t, c, t0.Add(5*time.Second))
	require.Equal(t, "60"+helloHex[2:], again, "RESENT")
	body := appendCircuit(nil, testCircuit)
	withExtra := encode(Packet{Flags: FlagReliable, Seq: 1, Message: UseCircuitCode, Extra: []byte{9, 9, 9}, Body: body})
	for _, p := range [][]byte{unhex(t, first), unhex(t, again), withExtra} {
		id, ok := Protocol.OpeningID(p)
		require.True(t, ok, "%x", p)
		require.Equal(t, uint64(testCircuit.Code), id, "%x", p)
	}

	s := newSession(t, t0, Config{Accept: true})
	require.NoError(t, s.HandleDatagram(t0, unhex(t, first)))
	ack := poll(t, s, t0.Add(100*ms))
	require.Equal(t, "000000000100fffffffb0101000000", ack)
	for _, p := range [][]byte{
		unhex(t, ack),
		encode(Packet{Seq: 1, Message: UseCircuitCode, Body: body}),
		unhex(t, first)[:len(first)/2-1],
		nil,
	} {
		id, ok := Protocol.OpeningID(p)
		require.False(t, ok, "%x", p)
		require.Zero(t, id, "%x", p)
	}
	hello := unhex(t, first)
	require.Zero(t, testing.AllocsPerRun(100, func() { Protocol.OpeningID(hello) }))
}
