package congestion_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/stretchr/testify/assert"
)

// The scenarios of the path benchmarks in bench/, on virtual time: one
// BBR flow through each path, and two sharing a bottleneck. The figures
// are exact for a seed, so these tests assert them.

func TestBBRPaths(t *testing.T) {
	for _, tc := range []struct {
		name     string
		path     pathConfig
		minShare float64 // goodput / bottleneck rate
		maxDrops float64 // datagrams dropped at the queue / datagrams sent
	}{
		// 20 ms RTT, 2 % random loss each way, no bottleneck but the
		// link's rate: random loss must not lower the rate.
		{"random loss", pathConfig{Rate: 50e6, Queue: 4 << 20, Delay: 10 * time.Millisecond, Loss: 0.02, AckLoss: 0.02, Duration: 5 * time.Second}, 0.90, 0},
		// 50 MB/s with a 512 KiB drop-tail queue, 20 ms RTT.
		{"bottleneck", pathConfig{Rate: 50e6, Queue: 512 << 10, Delay: 10 * time.Millisecond, Duration: 5 * time.Second}, 0.90, 0.01},
		{"bottleneck and 1 % loss", pathConfig{Rate: 50e6, Queue: 512 << 10, Delay: 10 * time.Millisecond, Loss: 0.01, AckLoss: 0.01, Duration: 5 * time.Second}, 0.80, 0.01},
		// 100 ms RTT with 0.5 % loss through the bottleneck.
		{"long path", pathConfig{Rate: 50e6, Queue: 512 << 10, Delay: 50 * time.Millisecond, Loss: 0.005, AckLoss: 0.005, Duration: 5 * time.Second}, 0.78, 0.025},
		// A bottleneck with a queue of six datagrams.
		{"shallow queue", pathConfig{Rate: 1e6, Queue: 6 * simMSS, Delay: 10 * time.Millisecond, Duration: 20 * time.Second}, 0.90, 0.02},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(1, tc.path)
			f := s.addFlow(congestion.BBR, 0)
			s.run()
			share := s.goodput(f) / float64(tc.path.Rate)
			st := f.cc.Stats()
			t.Logf("goodput %.1f%% of the link, %.2f%% dropped at the queue, %.2f%% lost; %+v",
				100*share, 100*s.dropRate(), 100*float64(f.lost)/float64(f.sent), st)
			assert.GreaterOrEqual(t, share, tc.minShare)
			assert.LessOrEqual(t, s.dropRate(), tc.maxDrops)
		})
	}
}

// TestBBRFairness: two flows through the 50 MB/s bottleneck, the second
// starting 100 ms after the first (in the middle of its Startup), or one
// second after (when the first is in steady state): from 5 s on, each
// has 40 to 60 % of what the two deliver.
func TestBBRFairness(t *testing.T) {
	for _, offset := range []time.Duration{100 * time.Millisecond, time.Second} {
		t.Run(fmt.Sprint(offset), func(t *testing.T) {
			s := newSim(1, pathConfig{Rate: 50e6, Queue: 512 << 10, Delay: 10 * time.Millisecond, Duration: 10*time.Second + time.Millisecond})
			a := s.addFlow(congestion.BBR, 0)
			b := s.addFlow(congestion.BBR, offset)
			s.run()
			ga, gb := a.between(5, 10), b.between(5, 10)
			t.Logf("5–10 s: %.1f and %.1f MB/s; %.2f%% dropped at the queue", ga/1e6, gb/1e6, 100*s.dropRate())
			assert.InDelta(t, 0.5, ga/(ga+gb), 0.1)
			assert.GreaterOrEqual(t, (ga+gb)/50e6, 0.9, "the two keep the link busy")
		})
	}
}
