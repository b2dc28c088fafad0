package netsim_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/lludp"
	"github.com/rudpkit/rudp/internal/netsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// llNumbers are the message numbers the simulated messages cycle through:
// High, Medium, Low and Fixed, known to the template or not.
var llNumbers = []uint32{4, 12, 0xFF06, 0xFFF0, lludp.TestMessage, 0xFFFF0183, lludp.StreamMessage, 0xFFFFFFFA}

// llCircuit is the circuit the simulated client opens.
var llCircuit = lludp.Circuit{Code: 123456, SessionID: [16]byte{1, 2, 3}, AgentID: [16]byte{4, 5, 6}}

// llMessage is message i from side from: its side and index in the first
// four bytes, then 0..599 bytes that alternate runs of zeros (so that
// zerocoding is exercised) and bytes following from i. The length and the
// content name the message.
func llMessage(from netsim.Side, i int) []byte {
	p := make([]byte, 4+(i*37)%600)
	p[0], p[1], p[2], p[3] = byte(from), byte(i>>16), byte(i>>8), byte(i)
	for j := 4; j < len(p); j++ {
		if j/16%2 == 1 {
			p[j] = byte(i*31+j) | 1
		}
	}
	return p
}

// llIndex is the index of message p from side from, or -1 if p is no such
// message.
func llIndex(from netsim.Side, p []byte) int {
	if len(p) < 4 || p[0] != byte(from) {
		return -1
	}
	i := int(p[1])<<16 | int(p[2])<<8 | int(p[3])
	if !bytes.Equal(p, llMessage(from, i)) {
		return -1
	}
	return i
}

func newLLUDP(t *testing.T, cfg lludp.Config) *lludp.Session {
	t.Helper()
	s, err := lludp.New(netsim.Epoch(), cfg)
	require.NoError(t, err)
	return s
}

// llTransfer is a simulation of an LLUDP client (A) and server (B) sending
// each other n reliable messages, fed only while Pending is below
// MaxQueued.
type llTransfer struct{ *duplex[*lludp.Session] }

func newLLTransfer(t *testing.T, seed uint64, n int, link netsim.LinkConfig, cfg lludp.Config) *llTransfer {
	client, server := cfg, cfg
	client.Client, client.Circuit = true, llCircuit
	server.Accept = true
	a, b := newLLUDP(t, client), newLLUDP(t, server)
	return &llTransfer{newDuplex(t, seed, n, link, a, b, llMessage,
		func(i int) engine.SendOptions {
			return engine.SendOptions{MessageNumber: llNumbers[i%len(llNumbers)]}
		},
		func(from netsim.Side, m engine.Message) int {
			// A message with the wrong number or delivery counts as bad.
			i := llIndex(from, m.Data)
			if i < 0 || !m.Reliable || m.MessageNumber != llNumbers[i%len(llNumbers)] {
				return -1
			}
			return i
		})}
}

func (x *llTransfer) check() {
	t := x.t
	for side, s := range x.sessions {
		name := netsim.Side(side)
		x.checkDelivered(name)
		assert.Zero(t, s.Pending(), "%v", name)
		assert.NoError(t, s.Err(), "%v", name)
		assert.Equal(t, engine.StateEstablished, s.State(), "%v", name)
		assert.Equal(t, uint64(x.n), s.Stats().MessagesRecv, "%v", name)
		assert.Equal(t, uint64(x.n), s.Stats().MessagesSent, "%v", name)
	}
}

// llImpaired is a lossy path with delay, jitter, reordering and
// duplication.
func llImpaired(loss float64) netsim.LinkConfig {
	return netsim.LinkConfig{
		Loss: loss, Delay: 20 * time.Millisecond, Jitter: 10 * time.Millisecond,
		Reorder: 0.05, ReorderDelay: 30 * time.Millisecond, Duplicate: 0.02,
	}
}

// llUnlimited lets reliable datagrams be resent until acknowledged, as
// OpenSim does; with the viewer's 3 resends a 30 % loss would end the
// circuit.
var llUnlimited = lludp.Config{ResendLimit: -1}

func (x *llTransfer) log(seed uint64) {
	st := x.sim.Stats()
	a, b := x.sessions[netsim.A].Stats(), x.sessions[netsim.B].Stats()
	x.t.Logf("seed %d: %v virtual, %d steps; received A %d B %d", seed, st.Elapsed, st.Steps, x.received[netsim.A], x.received[netsim.B])
	x.t.Logf("A: %d datagrams, %d retransmits, %d duplicates, averaged ping %v, RTO %v", a.PacketsSent, a.Retransmits, a.Duplicates, a.SRTT, a.RTO)
	x.t.Logf("B: %d datagrams, %d retransmits, %d duplicates, averaged ping %v, RTO %v", b.PacketsSent, b.Retransmits, b.Duplicates, b.SRTT, b.RTO)
	x.t.Logf("A→B %+v, errors at B %d", st.A.Out, st.B.Errors)
	x.t.Logf("B→A %+v, errors at A %d", st.B.Out, st.A.Errors)
}

func TestLLUDPTransfer(t *testing.T) {
	const n = 10_000
	for _, tc := range []struct {
		name  string
		seed  uint64
		link  netsim.LinkConfig
		limit time.Duration
	}{
		{"clean", 1, netsim.LinkConfig{Delay: 10 * time.Millisecond}, time.Minute},
		{"loss10", 2, llImpaired(0.1), 10 * time.Minute},
		{"loss30", 3, llImpaired(0.3), 20 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newLLTransfer(t, tc.seed, n, tc.link, llUnlimited)
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

// TestLLUDPSequenceWrap starts both ends 3000 datagrams before the 2^24
// wrap, so that the transfer crosses it: sequence numbers go from 0xFFFFFF
// to 0 and the duplicate windows follow.
func TestLLUDPSequenceWrap(t *testing.T) {
	cfg := llUnlimited
	cfg.InitialSeq = lludp.SeqWrap - 3000
	x := newLLTransfer(t, 4, 5000, llImpaired(0.1), cfg)
	err := x.sim.RunUntil(x.step, 10*time.Minute)
	x.log(4)
	require.NoError(t, err)
	x.check()
	for _, s := range x.sessions {
		require.Greater(t, s.Stats().PacketsSent, uint64(3000), "past the wrap")
	}
}

func TestLLUDPDeterministic(t *testing.T) {
	run := func() (netsim.Stats, [2]engine.Stats) {
		x := newLLTransfer(t, 9, 2000, llImpaired(0.2), llUnlimited)
		require.NoError(t, x.sim.RunUntil(x.step, 10*time.Minute))
		x.check()
		return x.sim.Stats(), [2]engine.Stats{x.sessions[0].Stats(), x.sessions[1].Stats()}
	}
	sim1, eng1 := run()
	sim2, eng2 := run()
	assert.Equal(t, sim1, sim2)
	assert.Equal(t, eng1, eng2)
}

// TestLLUDPCloseAfterTransfer: A closes with messages still queued; they
// are delivered, then its CloseCircuit ends B too, both without error.
func TestLLUDPCloseAfterTransfer(t *testing.T) {
	cfg := llUnlimited
	cfg.Linger = time.Minute
	x := newLLTransfer(t, 5, 500, llImpaired(0.1), cfg)
	x.sent[netsim.B], x.received[netsim.A] = x.n, x.n // one way: A to B
	x.step()
	a, b := x.sessions[netsim.A], x.sessions[netsim.B]
	require.Equal(t, 500, a.Pending())
	a.Close(x.sim.Now())
	closed := func() bool { return a.State() == engine.StateClosed && b.State() == engine.StateClosed }
	require.NoError(t, x.sim.RunUntil(closed, time.Minute))
	t.Logf("closed after %v", x.sim.Stats().Elapsed)
	assert.NoError(t, a.Err())
	assert.NoError(t, b.Err())
	assert.Equal(t, x.n, x.received[netsim.B])
	for i, c := range x.got[netsim.B] {
		require.Equal(t, 1, c, "message %d", i)
	}
}
