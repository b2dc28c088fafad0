package wirefox

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// t0 is the start of every test's virtual clock.
var t0 = time.Unix(1_000_000, 0)

const ms = time.Millisecond

// The PeerIDs of the vectors' handshake (W1, W2).
const (
	clientID = 0x3efe7d4f2231ac25
	serverID = 0x777db20b2616d322
)

// testChannels is the channel table of the captures: 1 ORDERED,
// 2 SEQUENCED.
var testChannels = []ChannelMode{Ordered, Sequenced}

func newSession(t testing.TB, now time.Time, cfg Config) *Session {
	t.Helper()
	s, err := New(now, cfg)
	require.NoError(t, err)
	return s
}

// poll returns the hex of the next datagram s writes at now ("" for none).
func poll(_ testing.TB, s *Session, now time.Time) string {
	return enginetest.PollHex(s, now, MTU)
}

// drain returns the blobs s delivered, as strings.
func drain(s *Session) []string { return enginetest.Drain(s) }

type pair = enginetest.Pair[*Session]

// newPair returns client A and server B joined by links of delay and loss.
func newPair(t testing.TB, cfgA, cfgB Config, delay time.Duration, loss float64, seed uint64) *pair {
	t.Helper()
	cfgA.Client, cfgB.Accept = true, true
	if cfgA.PeerID == 0 {
		cfgA.PeerID = clientID
	}
	cfgB.PeerID = serverID
	if cfgA.Channels == nil {
		cfgA.Channels = testChannels
	}
	if cfgB.Channels == nil {
		cfgB.Channels = testChannels
	}
	p := enginetest.NewPair(t, t0, newSession(t, t0, cfgA), newSession(t, t0, cfgB), delay, loss, seed, MTU)
	p.Epoch = t0
	p.PollLimit = 100_000
	return p
}

// connect runs p until both ends are established.
func connect(t testing.TB, p *pair) {
	t.Helper()
	p.RunUntil(10_000, func() bool {
		return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished
	})
}

// fromZero numbers s's datagrams from 0, as the reference does and the
// captures show, instead of from a random first ID (firstDgramID).
func fromZero(s *Session) *Session {
	s.nextDgram = 0
	return s
}

// proveFake completes the proof of server s, which numbers its datagrams
// from 2^32 − 1, so that its first after the probe is the captures' 0:
// s sends its probe (ID 2^32 − 1) and takes the client's ACK of it in an
// ack-only datagram of ID 2^32 − 1, so that the client's next, from the
// captures, is 0 in order.
func proveFake(t testing.TB, s *Session, now time.Time) {
	t.Helper()
	require.Equal(t, engine.StateHandshake, s.State())
	require.Equal(t, "c0ffffffff00020000", poll(t, s, now), "the probe: a keepalive")
	ack := AppendDatagram(nil, &Datagram{Flags: FlagLNK, ID: 1<<32 - 1, Acks: []uint32{1<<32 - 1}})
	require.NoError(t, s.HandleDatagram(now, ack))
	require.Equal(t, engine.StateEstablished, s.State())
}

// prove completes the proof of server s by client c: s's probe, c's ACK.
func prove(t testing.TB, c, s *Session, now time.Time) {
	t.Helper()
	require.Equal(t, engine.StateHandshake, s.State())
	probe := poll(t, s, now)
	require.NotEmpty(t, probe)
	require.NoError(t, c.HandleDatagram(now, unhex(t, probe)))
	for now := now; s.State() == engine.StateHandshake; now = now.Add(ackDelay) {
		if b := poll(t, c, now); b != "" {
			require.NoError(t, s.HandleDatagram(now, unhex(t, b)))
		}
		require.False(t, now.After(t0.Add(time.Minute)), "no proof")
	}
	require.Equal(t, engine.StateEstablished, s.State())
}
