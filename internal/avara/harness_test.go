package avara

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

// v1Seed is the seed of vector V1's Login.
const v1Seed = 0x00012345

func newSession(t testing.TB, now time.Time, cfg Config) *Session {
	t.Helper()
	s, err := New(now, cfg)
	require.NoError(t, err)
	return s
}

// openServer returns a server session for client 1 that took vector V1's
// Login (empty password) at t0: its TOC and Control are due, and it is
// established once the TOC is acknowledged.
func openServer(t testing.TB, cfg Config) *Session {
	t.Helper()
	cfg.Accept, cfg.ClientID = true, 1
	s := newSession(t, t0, cfg)
	require.NoError(t, s.HandleDatagram(t0, unhex(t, loadVectors(t).Vectors[0].Hex)))
	require.True(t, s.login)
	require.Equal(t, engine.StateHandshake, s.State())
	return s
}

// poll returns the hex of the next datagram s writes at now ("" for none).
func poll(_ testing.TB, s *Session, now time.Time) string {
	return enginetest.PollHex(s, now, MaxDatagram)
}

// datagram encodes d for version 18.
func datagram(d Datagram) []byte { return AppendDatagram(nil, &d, DefaultVersion) }

// drain returns the data of the messages s delivered, as strings.
func drain(s *Session) []string { return enginetest.Drain(s) }

// pair is a client A and a server B joined by two links, driven on a
// virtual clock.
type pair = enginetest.Pair[*Session]

func newPair(t testing.TB, cfgA, cfgB Config, delay time.Duration, loss float64, seed uint64) *pair {
	t.Helper()
	cfgA.Client, cfgA.Seed = true, v1Seed
	cfgB.Accept, cfgB.ClientID = true, 1
	p := enginetest.NewPair(t, t0, newSession(t, t0, cfgA), newSession(t, t0, cfgB), delay, loss, seed, MaxDatagram)
	p.Epoch = t0
	p.PollLimit = 100_000
	return p
}

// established returns a pair whose client has its id, over 5 ms links.
func established(t testing.TB, cfg Config) *pair {
	p := newPair(t, cfg, cfg, 5*ms, 0, 1)
	p.RunUntil(1000, func() bool {
		return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished
	})
	return p
}
