package netsim_test

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/avara"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/netsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// avTransfer is a simulation of an Avara client (A) and server (B)
// sending each other n messages, fed only while Pending is below
// MaxQueued, checking that each side receives them in order.
type avTransfer struct {
	*duplex[*avara.Session]
	disorder [2]int // deliveries out of order
}

// avOptions sends message i with a game command and parameters from i.
func avOptions(i int) engine.SendOptions {
	return engine.SendOptions{Params: engine.Params{Command: int8(i % 37), P1: int8(i), P2: int16(i * 3), P3: int32(i * 70001)}}
}

func newAvTransfer(t *testing.T, seed uint64, n int, link netsim.LinkConfig, cfg avara.Config) *avTransfer {
	client, server := cfg, cfg
	client.Client, client.Seed = true, 0x12345
	server.Accept, server.ClientID = true, 1
	a, err := avara.New(netsim.Epoch(), client)
	require.NoError(t, err)
	b, err := avara.New(netsim.Epoch(), server)
	require.NoError(t, err)
	x := &avTransfer{}
	next := [2]int{}
	x.duplex = newDuplex(t, seed, n, link, a, b, llMessage, avOptions,
		func(from netsim.Side, m engine.Message) int {
			i := llIndex(from, m.Data)
			if i < 0 || !m.Reliable || m.Params != avOptions(i).Params {
				return -1
			}
			to := 1 - from
			if i != next[to] {
				x.disorder[to]++
			}
			next[to] = i + 1
			return i
		})
	return x
}

func (x *avTransfer) check() {
	t := x.t
	for side, s := range x.sessions {
		name := netsim.Side(side)
		x.checkDelivered(name)
		assert.Zero(t, x.disorder[side], "%v: deliveries out of order", name)
		assert.Zero(t, s.Pending(), "%v", name)
		assert.NoError(t, s.Err(), "%v", name)
		assert.Equal(t, engine.StateEstablished, s.State(), "%v", name)
		assert.Equal(t, uint64(x.n), s.Stats().MessagesRecv, "%v", name)
		assert.Equal(t, uint64(x.n), s.Stats().MessagesSent, "%v", name)
	}
}

func (x *avTransfer) log(seed uint64) {
	st := x.sim.Stats()
	a, b := x.sessions[netsim.A].Stats(), x.sessions[netsim.B].Stats()
	x.t.Logf("seed %d: %v virtual, %d steps; received A %d B %d", seed, st.Elapsed, st.Steps, x.received[netsim.A], x.received[netsim.B])
	x.t.Logf("A: %d datagrams, %d retransmits, %d duplicates, SRTT %v, RTO %v", a.PacketsSent, a.Retransmits, a.Duplicates, a.SRTT, a.RTO)
	x.t.Logf("B: %d datagrams, %d retransmits, %d duplicates, SRTT %v, RTO %v", b.PacketsSent, b.Retransmits, b.Duplicates, b.SRTT, b.RTO)
}

// avStream is the configuration rudp's streams use between rudp peers:
// resends timed from the acknowledgements.
var avStream = avara.Config{AckRTT: true, HandshakeTimeout: time.Minute, AckDelay: 2 * time.Millisecond}

func TestAvaraTransfer(t *testing.T) {
	const n = 10_000
	for _, tc := range []struct {
		name  string
		seed  uint64
		link  netsim.LinkConfig
		limit time.Duration
	}{
		{"clean", 1, netsim.LinkConfig{Delay: 10 * time.Millisecond}, time.Minute},
		{"loss10", 2, llImpaired(0.1), 30 * time.Minute},
		{"loss30", 3, llImpaired(0.3), 60 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newAvTransfer(t, tc.seed, n, tc.link, avStream)
			err := x.sim.RunUntil(x.step, tc.limit)
			x.log(tc.seed)
			require.NoError(t, err, "seed %d", tc.seed)
			x.check()
			if tc.link.Loss > 0 {
				assert.NotZero(t, x.sessions[netsim.A].Stats().Retransmits)
				assert.NotZero(t, x.sessions[netsim.B].Stats().Duplicates)
			}
		})
	}
}

// TestAvaraReferenceTiming: with the reference's estimator (it learns
// from commands 17 and 31 only, and starts at 2 s) the transfer is slow
// but exact.
func TestAvaraReferenceTiming(t *testing.T) {
	x := newAvTransfer(t, 5, 2000, llImpaired(0.1), avara.Config{})
	err := x.sim.RunUntil(x.step, time.Hour)
	x.log(5)
	require.NoError(t, err)
	x.check()
}

// TestAvaraSerialWrap sends enough messages that the 16-bit serials wrap
// (32,768 messages per wrap) both ways.
func TestAvaraSerialWrap(t *testing.T) {
	x := newAvTransfer(t, 4, 34_000, netsim.LinkConfig{Delay: 5 * time.Millisecond, Loss: 0.02}, avStream)
	err := x.sim.RunUntil(x.step, 30*time.Minute)
	x.log(4)
	require.NoError(t, err)
	x.check()
}
