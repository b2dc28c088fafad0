package avara

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// streamConfig is a stream's configuration as the root sets it, with
// ChallengeClose as given.
func streamConfig(challenge bool) Config {
	return Config{AckRTT: true, AckDelay: 2 * ms, KeepAlive: time.Second, ChallengeClose: challenge}
}

// spoofLogout returns a Logout from client 1 with serial, as a blind
// attacker sending from the client's address forges it.
func spoofLogout(serial uint16) []byte {
	return datagram(Datagram{Ack: NothingReceived, Messages: []Message{{Serial: serial, Command: CommandLogout, P1: 1, Sender: 1, HasSender: true}}})
}

// TestChallengeSpoofedLogout: with ChallengeClose a Logout forged at the
// next serial, or ahead of it, does not close the session: it is dropped
// unacknowledged, the probe it starts is acknowledged by the live peer
// (a spoof refused), and the peer's own message at that serial is
// delivered. Without ChallengeClose the forged Logout closes it.
func TestChallengeSpoofedLogout(t *testing.T) {
	for _, challenge := range []bool{false, true} {
		cfg := streamConfig(challenge)
		cfg.KeepAlive = 0 // no pokes: the peer's next messages are a, b and c
		p := established(t, cfg)
		p.Advance(p.Now.Add(100 * ms))
		next := p.B.expected
		require.NoError(t, p.B.HandleDatagram(p.Now, spoofLogout(next+4)))
		require.NoError(t, p.B.HandleDatagram(p.Now, spoofLogout(next)))
		p.Advance(p.Now.Add(10 * ms))
		if !challenge {
			require.Equal(t, engine.StateClosed, p.B.State(), "a blind spoof closes it")
			continue
		}
		p.Advance(p.Now.Add(2 * engine.ChallengeMin))
		require.Equal(t, engine.StateEstablished, p.B.State())
		st := p.B.Stats()
		require.Equal(t, uint64(1), st.Challenges)
		require.Equal(t, uint64(1), st.SpoofsRefused)
		for _, m := range []string{"a", "b", "c"} {
			require.NoError(t, p.A.Send([]byte(m), game))
		}
		p.Advance(p.Now.Add(100 * ms))
		require.Equal(t, []string{"a", "b", "c"}, drain(p.B), "the serials the spoofs used are the peer's")
		require.Zero(t, p.A.Pending())
		require.Zero(t, p.B.nHeld)
	}
}

// TestChallengeGenuineClose: with ChallengeClose on both ends a genuine
// close is taken once the challenge ran out (the closing end does not
// acknowledge the probe and sends its Logout again), one at both ends at
// once without a challenge; both end without error, well before Linger.
func TestChallengeGenuineClose(t *testing.T) {
	for _, both := range []bool{false, true} {
		p := newPair(t, streamConfig(true), streamConfig(true), 5*ms, 0.1, 7)
		p.RunUntil(1000, func() bool {
			return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished
		})
		require.NoError(t, p.A.Send([]byte("last"), game))
		p.RunUntil(10_000, func() bool { drain(p.B); return p.A.Pending() == 0 })
		start := p.Now
		p.A.Close(p.Now)
		if both {
			p.B.Close(p.Now)
		}
		p.RunUntil(100_000, func() bool {
			return p.A.State() == engine.StateClosed && p.B.State() == engine.StateClosed
		})
		require.NoError(t, p.A.Err())
		require.NoError(t, p.B.Err())
		require.Zero(t, p.B.Stats().SpoofsRefused)
		took := p.Now.Sub(start)
		if both {
			require.Zero(t, p.B.Stats().Challenges)
			require.Less(t, took, engine.ChallengeMin, "no challenge")
		} else {
			require.Equal(t, uint64(1), p.B.Stats().Challenges)
			require.GreaterOrEqual(t, took, engine.ChallengeMin)
			require.Less(t, took, 2*engine.ChallengeMin)
		}
		t.Logf("both %v: closed in %v", both, took)
	}
}
