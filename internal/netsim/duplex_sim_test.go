package netsim_test

import (
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/netsim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// duplex is a simulation of two sessions sending each other n messages,
// fed only while Pending is below MaxQueued, that counts how often each
// message is delivered.
type duplex[S engine.Engine] struct {
	t        *testing.T
	sim      *netsim.Sim
	sessions [2]S
	n        int
	message  func(from netsim.Side, i int) []byte // message i from side from
	options  func(i int) engine.SendOptions       // how message i is sent
	sent     [2]int
	got      [2][]int // got[to][i]: deliveries of message i
	received [2]int   // distinct messages received
	bad      [2]int   // deliveries not matching any message
	maxPend  [2]int   // largest Pending seen
	maxQ     [2]int   // most datagrams seen in flight on each side's link
}

// newDuplex simulates a and b over link. index names the message m
// delivered from side from, or is -1 if m is no message that was sent.
func newDuplex[S engine.Engine](t *testing.T, seed uint64, n int, link netsim.LinkConfig, a, b S,
	message func(from netsim.Side, i int) []byte, options func(i int) engine.SendOptions,
	index func(from netsim.Side, m engine.Message) int,
) *duplex[S] {
	x := &duplex[S]{t: t, n: n, sessions: [2]S{a, b}, message: message, options: options}
	x.got = [2][]int{make([]int, n), make([]int, n)}
	x.sim = netsim.New(seed, a, b, link, link)
	for _, to := range []netsim.Side{netsim.A, netsim.B} {
		x.sim.OnDeliver(to, func(m engine.Message) {
			i := index(1-to, m)
			if i < 0 || i >= n {
				x.bad[to]++
				return
			}
			if x.got[to][i]++; x.got[to][i] == 1 {
				x.received[to]++
			}
		})
	}
	return x
}

// step feeds both sessions and reports whether the transfer is complete.
func (x *duplex[S]) step() bool {
	for side, s := range x.sessions {
		limit := s.Capabilities().MaxQueued
		for x.sent[side] < x.n && s.Pending() < limit {
			i := x.sent[side]
			require.NoError(x.t, s.Send(x.message(netsim.Side(side), i), x.options(i)))
			x.sent[side]++
		}
		x.maxPend[side] = max(x.maxPend[side], s.Pending())
		x.maxQ[side] = max(x.maxQ[side], x.sim.Link(netsim.Side(side)).InFlight())
	}
	return x.received == [2]int{x.n, x.n} && x.sessions[0].Pending() == 0 && x.sessions[1].Pending() == 0
}

// checkDelivered asserts that side received every message exactly once
// and nothing else.
func (x *duplex[S]) checkDelivered(side netsim.Side) {
	t := x.t
	assert.Zero(t, x.bad[side], "%v received messages that were never sent", side)
	for i, c := range x.got[side] {
		if c != 1 {
			assert.Failf(t, "not exactly once", "%v received message %d from %v %d times", side, i, 1-side, c)
			break
		}
	}
}
