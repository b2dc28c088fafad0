package airhook

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// established returns a pair whose handshake has completed, with 5 ms
// links.
func established(t *testing.T) *pair {
	p := newPair(t, Config{Session: 0x11111111}, Config{Session: 0x22222222}, 5*time.Millisecond, 0, 1)
	p.RunUntil(1000, func() bool {
		return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished
	})
	return p
}

// TestRefusedMessagesResent: while B takes no new messages, the packets
// of A that carry them still confirm B's message, and A's message is not
// confirmed but reported missed, so A sends it again; once B is open
// again it arrives, once.
func TestRefusedMessagesResent(t *testing.T) {
	p := established(t)
	p.B.SetRecvOpen(false)
	require.NoError(t, p.A.Send([]byte("from A"), engine.SendOptions{}))
	require.NoError(t, p.B.Send([]byte("from B"), engine.SendOptions{}))
	p.Advance(p.Now.Add(200 * time.Millisecond))
	require.Zero(t, p.B.Pending(), "A's confirmation reached B")
	require.Equal(t, []string{"from B"}, drain(p.A))
	require.Empty(t, drain(p.B))
	require.Equal(t, 1, p.A.Pending(), "A's message is not confirmed")
	require.NotZero(t, p.A.Stats().Retransmits, "it was reported missed")
	sent := p.A.Stats().MessagesSent + p.A.Stats().Retransmits
	require.InDelta(t, sent, p.B.Stats().Refused, 1, "every copy refused (the last may be on its way)")

	p.B.SetRecvOpen(true)
	p.Advance(p.Now.Add(200 * time.Millisecond))
	require.Equal(t, []string{"from A"}, drain(p.B))
	require.Zero(t, p.A.Pending())
}

// TestCloseRefusesData: after Close, a session closed to new messages, as
// a message conn is by its Close, never confirms a message that arrives,
// and ends once Linger runs out (the peer keeps sending it, so its
// TIME-WAIT never sees quiet) with nothing of its own unconfirmed.
func TestCloseRefusesData(t *testing.T) {
	p := established(t)
	p.B.SetRecvOpen(false)
	p.B.Close(p.Now)
	closed := p.Now
	require.NoError(t, p.A.Send([]byte("late"), engine.SendOptions{}))
	p.RunUntil(100_000, func() bool {
		require.Equal(t, 1, p.A.Pending(), "never confirmed")
		return p.B.State() == engine.StateClosed
	})
	require.Equal(t, closed.Add(engine.DefaultLinger), p.Now)
	require.NoError(t, p.B.Err())
	require.Empty(t, drain(p.B))
	require.NotZero(t, p.B.Stats().Refused)
}

// TestRefusingExactlyOnce: both sides close and open themselves to new
// messages at random while messages flow both ways, with loss; every
// message is still delivered exactly once. (Not confirming refused
// packets, rather than reporting their messages missed, fails this: the
// peer's missed entries outlive a wrap of the message numbers.)
func TestRefusingExactlyOnce(t *testing.T) {
	const total = 3000
	p := newPair(t, Config{Session: 0x11111111}, Config{Session: 0x22222222}, 5*time.Millisecond, 0.05, 7)
	rng := rand.New(rand.NewPCG(7, 7))
	ab, ba := enginetest.NewFlow("ab", total, 1), enginetest.NewFlow("ba", total, 2)
	p.RunUntil(400_000, func() bool {
		ab.Feed(t, p.A, nil)
		ba.Feed(t, p.B, nil)
		p.A.SetRecvOpen(rng.IntN(3) == 0)
		p.B.SetRecvOpen(rng.IntN(3) == 0)
		ab.Collect(t, p.B)
		ba.Collect(t, p.A)
		return ab.Done() && ba.Done() && p.A.Pending() == 0 && p.B.Pending() == 0
	})
	require.Equal(t, ab.Want, ab.Got)
	require.Equal(t, ba.Want, ba.Got)
	require.NotZero(t, p.A.Stats().Refused)
	require.NotZero(t, p.B.Stats().Refused)
}
