package congestion_test

import (
	"fmt"
	"slices"
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

// shareRun runs n BBR flows through the 50 MB/s bottleneck with a 512 KiB
// queue at 20 ms RTT for 10 s, one starting every 10 ms, as bench's
// BenchmarkShare100 does, with 1 ms of jitter on the acknowledgements. It
// returns each flow's share of the link from 5 s to 10 s, in percent.
func shareRun(n int) (*sim, []float64) {
	s := newSim(1, pathConfig{Rate: 50e6, Queue: 512 << 10, Delay: 10 * time.Millisecond, Jitter: time.Millisecond, Duration: 10*time.Second + time.Millisecond})
	fs := make([]*simFlow, n)
	for i := range fs {
		fs[i] = s.addFlow(congestion.BBR, time.Duration(i)*10*time.Millisecond)
	}
	s.run()
	shares := make([]float64, n)
	for i, f := range fs {
		shares[i] = 100 * f.between(5, 10) / 50e6
	}
	return s, shares
}

// TestBBRShare: 20 and 100 flows share the bottleneck of
// BenchmarkShare100; it reports the smallest and largest share of the
// link from 5 s to 10 s and the datagrams dropped at the queue, and
// checks that the flows keep the link busy.
func TestBBRShare(t *testing.T) {
	for _, n := range []int{20, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s, shares := shareRun(n)
			total := 0.0
			for _, x := range shares {
				total += x
			}
			t.Logf("%d flows, 5–10 s: smallest share %.3f%%, largest %.3f%%, link used %.1f%%; dropped at the queue %.2f%% (5–10 s: %.2f%%)",
				n, slices.Min(shares), slices.Max(shares), total, 100*s.dropRate(), 100*s.dropRateBetween(5, 10))
			assert.GreaterOrEqual(t, total, 95.0, "the flows keep the link busy")
		})
	}
}
