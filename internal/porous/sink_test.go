package porous

import (
	"bytes"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestSink: with a sink set, the packets of one fragment that arrive in
// order go to the sink during HandleDatagram, the others (several
// fragments, or behind a loss) through Recv, and together they are
// exactly the packets sent, in order; the packets given to the sink still
// move the sender's window (their WindowAcks are sent), and count in
// Stats.MessagesRecv.
func TestSink(t *testing.T) {
	const n = 2 * WindowAckSpacing
	p := newPair(t, Config{}, Config{}, 5*time.Millisecond, 0.05, 5)
	var got [][]byte
	sunk := 0
	p.B.SetSink(func(now time.Time, m engine.Message) {
		require.Equal(t, p.Now, now)
		got = append(got, bytes.Clone(m.Data))
		sunk++
	})
	sent := 0
	// 0.17 s of virtual time when healthy.
	runWithin(p, 2*time.Second, 1_000_000, func() bool {
		for sent < n {
			if err := p.A.Send(testPacket(0, sent, 2*FragmentSize+100), engine.SendOptions{}); err != nil {
				require.ErrorIs(t, err, engine.ErrQueueFull)
				break
			}
			sent++
		}
		for _, m := range recvAll(p.B) {
			got = append(got, m.Data)
		}
		return len(got) == n && p.A.Pending() == 0
	})
	for i := range got {
		require.Equal(t, testPacket(0, i, 2*FragmentSize+100), got[i], "packet %d", i)
	}
	require.NotZero(t, sunk, "packets went to the sink")
	require.Less(t, sunk, n, "packets went through Recv")
	require.Equal(t, uint32(n), p.A.txch[0].base, "the WindowAcks moved the send window")
	require.Equal(t, uint64(n), p.B.Stats().MessagesRecv)
}
