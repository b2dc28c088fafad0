package lludp

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestChallengeDuration pins how long the challenge of a CloseCircuit
// lasts, to the nanosecond: two round trips plus 10 ms, at least
// engine.ChallengeMin (1 s), with engine.ChallengeProbes (4)
// StartPingChecks evenly over it (doc.go, Challenges; RFC 5961 §3's
// reason). Before any ping is answered the round trip is the initial
// averaged ping, 1 s (docs/protocols/lludp.md §3.4), so the challenge
// lasts 2.01 s; once a ping answered within 100 ms has set the averaged
// ping to its 100 ms floor, two round trips are 210 ms and the challenge
// lasts the 1 s minimum. The close is taken at the last instant, not a
// nanosecond before.
func TestChallengeDuration(t *testing.T) {
	s := openServer(t)
	require.Equal(t, time.Second, s.Stats().SRTT, "the initial averaged ping")

	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Seq: 0, Message: CloseCircuit})))
	var pk Packet
	require.NoError(t, ParsePacket(unhex(t, poll(t, s, t0)), &pk, nil))
	require.Equal(t, StartPingCheck, pk.Message, "the first probe, at once")
	until := t0.Add(2010 * ms)
	require.Equal(t, t0.Add(502500*time.Microsecond), s.Deadline(), "the second probe a quarter of 2.01 s later")
	requireProbes(t, s, t0, until)
	require.Empty(t, poll(t, s, until.Add(-time.Nanosecond)))
	require.Equal(t, engine.StateEstablished, s.State(), "1 ns before the challenge ends")
	require.Empty(t, poll(t, s, until))
	require.Equal(t, engine.StateClosed, s.State(), "unanswered: the close is taken")

	// The same with an averaged ping of 100 ms: the 1 s minimum.
	s = openServer(t)
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Seq: 0, Message: CloseCircuit})))
	require.NoError(t, ParsePacket(unhex(t, poll(t, s, t0)), &pk, nil))
	require.Equal(t, StartPingCheck, pk.Message)
	require.NoError(t, s.HandleDatagram(t0.Add(30*ms), encode(Packet{Seq: 1, Message: CompletePingCheck, Body: []byte{pk.Body[0]}})))
	require.Equal(t, uint64(1), s.Stats().SpoofsRefused)
	require.Equal(t, 100*ms, s.Stats().SRTT, "a 30 ms sample, raised to the 100 ms floor")
	start := t0.Add(40 * ms)
	require.NoError(t, s.HandleDatagram(start, encode(Packet{Seq: 2, Message: CloseCircuit})))
	require.NoError(t, ParsePacket(unhex(t, poll(t, s, start)), &pk, nil))
	require.Equal(t, StartPingCheck, pk.Message)
	until = start.Add(time.Second)
	require.Equal(t, start.Add(250*ms), s.Deadline())
	requireProbes(t, s, start, until)
	require.Empty(t, poll(t, s, until.Add(-time.Nanosecond)))
	require.Equal(t, engine.StateEstablished, s.State())
	require.Empty(t, poll(t, s, until))
	require.Equal(t, engine.StateClosed, s.State())
	require.Equal(t, uint64(2), s.Stats().Challenges)
}
