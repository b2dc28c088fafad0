package porous

import (
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// BenchmarkSessionTransfer moves reliable packets from one session to
// another in memory, 100 µs of virtual time per exchange: the engines'
// cost per byte delivered, without sockets.
func BenchmarkSessionTransfer(b *testing.B) {
	for _, size := range []int{1200, 16 << 10, 64 << 10} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			msg := make([]byte, size)
			now := epoch
			tx := newSession(b, now, Config{Nonce: nonceA})
			rx := newSession(b, now, Config{Nonce: nonceB})
			buf := make([]byte, MaxFrameSize)
			exchange := func(from, to *Session) { deliverFrames(b, now, buf, from, to) }
			for range 10 {
				exchange(tx, rx)
				exchange(rx, tx)
			}
			require.Equal(b, engine.StateEstablished, tx.State())
			enginetest.BenchmarkTransfer(b, tx, rx, msg, engine.SendOptions{}, func() {
				now = now.Add(100 * time.Microsecond)
				exchange(tx, rx)
				exchange(rx, tx)
			})
		})
	}
}
