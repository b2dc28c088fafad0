package porous

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestTrimWhileIdle: once a lossy transfer of messages of several
// fragments is over, Trim frees the buffer MessageBuffer lent, the
// transfer queue's slots and the congestion controller's model; the next
// transfer, over the same lossy link, is delivered exactly once, in
// order.
func TestTrimWhileIdle(t *testing.T) {
	cfg := Config{MaxPacket: 8 << 10}
	p := newPair(t, cfg, cfg, 15*time.Millisecond, 0.1, 7)
	transfer := func(round int) {
		var want, got [2][]string
		sent := [2]int{}
		// 0.26 s of virtual time when healthy.
		runWithin(p, 3*time.Second, 200_000, func() bool {
			for i, s := range []*Session{p.A, p.B} {
				for sent[i] < 100 {
					m := fmt.Sprintf("%d:%d:%d:%s", round, i, sent[i], strings.Repeat("x", sent[i]*80))
					if s.Send([]byte(m), engine.SendOptions{Delivery: engine.Reliable}) != nil {
						break
					}
					want[i] = append(want[i], m)
					sent[i]++
				}
			}
			for i, s := range []*Session{p.B, p.A} {
				for m, ok := s.Recv(); ok; m, ok = s.Recv() {
					got[i] = append(got[i], string(m.Data))
					s.Recycle(m.Data) // as a stream does
				}
			}
			return len(got[0]) == 100 && len(got[1]) == 100 && p.A.Pending() == 0 && p.B.Pending() == 0
		})
		require.Equal(t, want, got)
	}
	transfer(1)
	p.Advance(p.Now.Add(2 * time.Second)) // every acknowledgement in
	for _, s := range []*Session{p.A, p.B} {
		s.MessageBuffer(100)
		s.Trim()
		require.Nil(t, s.lent)
		require.Nil(t, s.ring.slots)
		require.Equal(t, "startup", s.cc.Stats().State, "the controller's model freed")
	}
	transfer(2)
}
