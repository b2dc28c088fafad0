package lludp

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// t0 is the start of every test's virtual clock.
var t0 = time.Unix(1_000_000, 0)

// testCircuit is the circuit of the vectors' UseCircuitCode (P10).
var testCircuit = Circuit{
	Code:      123456,
	SessionID: [16]byte{0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4, 0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0x00, 0x00},
	AgentID:   [16]byte{0x1c, 0x8a, 0x77, 0x67, 0xe3, 0x7b, 0x42, 0x2e, 0xaf, 0xb3, 0x85, 0x09, 0x31, 0x97, 0xca, 0xd1},
}

// helloHex is P10: the UseCircuitCode of testCircuit, reliable, seq 1.
const helloHex = "400000000100ffff000340e20100550e8400e29b41d4a7164466554400001c8a7767e37b422eafb385093197cad1"

func newSession(t testing.TB, now time.Time, cfg Config) *Session {
	t.Helper()
	s, err := New(now, cfg)
	require.NoError(t, err)
	return s
}

// openServer returns a server that accepted helloHex at t0 and has
// acknowledged it.
func openServer(t testing.TB, cfgs ...Config) *Session {
	t.Helper()
	var cfg Config
	if len(cfgs) > 0 {
		cfg = cfgs[0]
	}
	cfg.Accept = true
	s := newSession(t, t0, cfg)
	require.NoError(t, s.HandleDatagram(t0, unhex(t, helloHex)))
	require.Equal(t, engine.StateEstablished, s.State())
	return s
}

// poll returns the hex of the next datagram s writes at now ("" for none).
func poll(_ testing.TB, s *Session, now time.Time) string {
	return enginetest.PollHex(s, now, DefaultMaxDatagram)
}

// drain returns the bodies of the messages s delivered, as strings.
func drain(s *Session) []string { return enginetest.Drain(s) }

// encode returns the wire form of p.
func encode(p Packet) []byte { return AppendPacket(nil, &p) }

// link is a one-way simulated link.
type link = enginetest.Link

// pair is a client A and a server B joined by two links, driven on a
// virtual clock.
type pair = enginetest.Pair[*Session]

func newPair(t testing.TB, cfgA, cfgB Config, delay time.Duration, loss float64, seed uint64) *pair {
	t.Helper()
	cfgA.Client, cfgA.Circuit = true, testCircuit
	cfgB.Accept = true
	p := enginetest.NewPair(t, t0, newSession(t, t0, cfgA), newSession(t, t0, cfgB), delay, loss, seed, DefaultMaxDatagram)
	p.Epoch = t0
	p.PollLimit = 100_000
	return p
}
