package netsim_test

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/netsim"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPorousSmallBehindBulk is bench/'s BenchmarkLatency on virtual time:
// channel 0 kept busy with reliable 16 KiB packets, a 100-byte packet on
// channel 1 every 10 ms for 5 s, through a 50 MB/s link with a 256 KiB
// queue and 10 ms each way. Every small packet
// arrives, and its one-way delay stays close to the path's: at the 99th
// percentile within 25 ms on a clean path and 45 ms with 1 % loss each
// way (a loss costs a round trip and a bit), while the bulk keeps the
// link as busy as it would alone.
func TestPorousSmallBehindBulk(t *testing.T) {
	for _, tc := range []struct {
		name string
		loss float64
		p99  time.Duration
	}{
		{"clean", 0, 25 * time.Millisecond},
		{"loss 1 %", 0.01, 45 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := netsim.LinkConfig{Delay: 10 * time.Millisecond, Loss: tc.loss, Rate: 50_000_000, QueueLimit: 256 << 10}
			a := newPorous(t, porous.Config{Nonce: poNonceA, Channels: 2})
			b := newPorous(t, porous.Config{Nonce: poNonceB, Channels: 2})
			sim := netsim.New(11, a, b, link, link)
			const run = 5 * time.Second
			const n = int(run / (10 * time.Millisecond))
			sentAt := make([]time.Time, n)
			var delays []time.Duration
			var bulk int64
			sim.OnDeliver(netsim.B, func(m engine.Message) {
				if m.Channel == 1 {
					delays = append(delays, sim.Now().Sub(sentAt[binary.BigEndian.Uint32(m.Data)]))
				} else {
					bulk += int64(len(m.Data))
				}
			})
			big := make([]byte, 16<<10)
			sent := 0
			err := sim.RunUntil(func() bool {
				now := sim.Now().Sub(netsim.Epoch())
				for sent < n && now >= time.Duration(sent)*10*time.Millisecond {
					p := make([]byte, 100)
					binary.BigEndian.PutUint32(p, uint32(sent))
					require.NoError(t, a.Send(p, engine.SendOptions{Channel: 1}))
					sentAt[sent] = sim.Now()
					sent++
				}
				for now < run && a.Send(big, engine.SendOptions{Channel: 0}) == nil {
				}
				return now >= run && len(delays) == n
			}, 2*run)
			require.NoError(t, err)
			slices.Sort(delays)
			p50, p99 := delays[n/2], delays[n*99/100]
			goodput := float64(bulk) / run.Seconds()
			t.Logf("small: p50 %v p99 %v max %v; bulk %.1f MB/s; A %+v", p50, p99, delays[n-1], goodput/1e6, a.Stats())
			assert.LessOrEqual(t, p99, tc.p99)
			assert.GreaterOrEqual(t, goodput, 0.8*50e6, "bulk keeps the link busy")
		})
	}
}
