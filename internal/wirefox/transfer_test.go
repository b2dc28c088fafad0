package wirefox

import (
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// onChannel1 sends every message on the ORDERED channel 1.
func onChannel1(int) engine.SendOptions { return engine.SendOptions{Channel: 1} }

func TestLossyTransferExactlyOnce(t *testing.T) {
	const total = 2000
	cfg := Config{MaxMessage: 4000, SendLimit: -1}
	p := newPair(t, cfg, cfg, 15*ms, 0.3, 2026)
	ab, ba := enginetest.NewFlow("ab", total, 1), enginetest.NewFlow("ba", total, 2)
	p.RunFlows(2_000_000, ab, ba, onChannel1)
	for _, s := range []*Session{p.A, p.B} {
		st := s.Stats()
		require.Equal(t, engine.StateEstablished, s.State())
		require.Equal(t, uint64(total), st.MessagesSent)
		require.Equal(t, uint64(total), st.MessagesRecv)
		require.NotZero(t, st.Retransmits)
	}
	t.Logf("virtual time %v, a: %+v", p.Now.Sub(t0), p.A.Stats())
}
