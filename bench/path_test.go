package bench

import (
	"context"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rudpkit/rudp"
)

// scenario is one emulated path: up carries the data (client → server),
// down the acknowledgements.
type scenario struct {
	name     string
	up, down Path
}

const (
	bottleneckRate  = 50_000_000 // bytes/s
	bottleneckQueue = 512 << 10  // bytes
)

// scenarios are the paths of BenchmarkPath.
var scenarios = []scenario{
	{"rtt20", Path{Delay: 10 * time.Millisecond}, Path{Delay: 10 * time.Millisecond}},
	{"rtt20-loss2", Path{Delay: 10 * time.Millisecond, Loss: 0.02}, Path{Delay: 10 * time.Millisecond, Loss: 0.02}},
	{"bottleneck", bottleneck(10*time.Millisecond, 0), Path{Delay: 10 * time.Millisecond}},
	{"bottleneck-loss1", bottleneck(10*time.Millisecond, 0.01), Path{Delay: 10 * time.Millisecond, Loss: 0.01}},
	{"rtt100-loss0.5-bottleneck", bottleneck(50*time.Millisecond, 0.005), Path{Delay: 50 * time.Millisecond, Loss: 0.005}},
}

// bottleneck is the 50 MB/s bottleneck with a 512 KiB drop-tail queue.
func bottleneck(delay time.Duration, loss float64) Path {
	return Path{Delay: delay, Loss: loss, Rate: bottleneckRate, Queue: bottleneckQueue}
}

// BenchmarkPath moves one stream one way through the relay for each
// scenario: every rudp protocol, kcp-go and quic-go, as BenchmarkStream
// does on loopback. Besides MB/s it reports the share of the data
// datagrams the bottleneck dropped (%dropped) and, for rudp, of the
// messages sent more than once (%resent). Run it with a -benchtime
// of several seconds: each sub-benchmark is one transfer, slow start
// included.
func BenchmarkPath(b *testing.B) {
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			for _, p := range rudp.Protocols() {
				b.Run("rudp/"+p.String(), func(b *testing.B) {
					r := &relayed{sc: sc}
					pr := rudpPair(b, p, r.via)
					measure(b, pr)
					r.report(b)
					reportResent(b, pr.W.(*rudp.Conn))
				})
			}
			b.Run("kcp-go", func(b *testing.B) {
				r := &relayed{sc: sc}
				measure(b, kcpPair(b, r.via))
				r.report(b)
			})
			b.Run("quic-go", func(b *testing.B) {
				r := &relayed{sc: sc}
				measure(b, quicPair(b, r.via))
				r.report(b)
			})
		})
	}
}

// relayed puts a relay for its scenario in front of the server.
type relayed struct {
	sc scenario
	r  *Relay
}

// via implements the via type: it starts the relay.
func (x *relayed) via(b *testing.B, server net.Addr) string {
	r, err := NewRelay(server.(*net.UDPAddr), x.sc.up, x.sc.down, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	x.r = r
	return r.Addr().String()
}

// report adds the bottleneck's drop share to the benchmark's metrics.
func (x *relayed) report(b *testing.B) {
	up, _ := x.r.Stats()
	if x.sc.up.Rate > 0 && up.Datagrams > 0 {
		b.ReportMetric(100*float64(up.Dropped)/float64(up.Datagrams), "%dropped")
	}
}

// reportResent adds the share of the sender's messages that it sent more
// than once (%resent) to the benchmark's metrics: with random loss it
// should stay close to the loss rate, and at 0 on a path without loss.
func reportResent(b *testing.B, c *rudp.Conn) {
	st := c.Stats()
	b.ReportMetric(100*float64(st.Retransmits)/float64(max(st.MessagesSent, 1)), "%resent")
}

// shareTime is how long BenchmarkShare and BenchmarkShare100 run their
// streams, shares being measured over the second half: 10 s, or 2 s with
// -short (a check that it runs, as CI does).
func shareTime() time.Duration {
	if testing.Short() {
		return 2 * time.Second
	}
	return 10 * time.Second
}

// BenchmarkShare runs two rudp streams (the default protocol) through the
// 50 MB/s bottleneck at 20 ms RTT for 10 s, the second starting 100 ms
// after the first, and reports what each delivered from 5 s to 10 s as a
// percentage of the link (share-a, share-b) and the drops at the queue.
// Run it with -benchtime 1x: each iteration is the whole 10 s.
func BenchmarkShare(b *testing.B) {
	for b.Loop() {
		shares, dropped := share(b, 2, 100*time.Millisecond)
		b.ReportMetric(shares[0], "share-a")
		b.ReportMetric(shares[1], "share-b")
		b.ReportMetric(dropped, "%dropped")
	}
}

// BenchmarkShare100 runs 100 rudp streams (the default protocol, each
// with its own socket) through the same bottleneck for 10 s, one starting
// every 10 ms, and reports the smallest and largest share of the link a
// stream delivered from 5 s to 10 s (min-share, max-share: 1 % each is a
// fair share), the link used in all (total-share) and the drops at the
// queue. Run it with -benchtime 1x: each iteration is the whole 10 s.
func BenchmarkShare100(b *testing.B) {
	for b.Loop() {
		shares, dropped := share(b, 100, 10*time.Millisecond)
		b.ReportMetric(slices.Min(shares), "min-share")
		b.ReportMetric(slices.Max(shares), "max-share")
		total := 0.0
		for _, x := range shares {
			total += x
		}
		b.ReportMetric(total, "total-share")
		b.ReportMetric(dropped, "%dropped")
	}
}

// share runs n streams through the bottleneck for shareTime, stream i
// starting i × stagger after the first, and returns what each delivered
// over the second half as a percentage of the link, and the share of the
// datagrams dropped at the bottleneck's queue. n is at most 256.
func share(b *testing.B, n int, stagger time.Duration) (shares []float64, dropped float64) {
	ln, err := rudp.Listen("udp", loopback)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	sc := scenarios[2] // bottleneck
	r, err := NewRelay(ln.Addr().(*net.UDPAddr), sc.up, sc.down, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()

	got := make([]atomic.Int64, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the server reads every stream it accepts
		defer wg.Done()
		for range n {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(safety))
				buf := make([]byte, 64<<10)
				var id [1]byte
				if _, err := io.ReadFull(c, id[:]); err != nil {
					return
				}
				for {
					n, err := c.Read(buf)
					got[id[0]].Add(int64(n))
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	start := time.Now()
	stop := start.Add(shareTime())
	var writers sync.WaitGroup
	for id := range n {
		writers.Add(1)
		go func() {
			defer writers.Done()
			time.Sleep(time.Duration(id) * stagger)
			c, err := (&rudp.Dialer{}).DialContext(ctx, "udp", r.Addr().String())
			if err != nil {
				b.Error(err)
				return
			}
			defer c.Close()
			_ = c.SetWriteDeadline(stop)
			chunk := make([]byte, 64<<10)
			chunk[0] = byte(id)
			_, _ = c.Write(chunk[:1])
			for time.Now().Before(stop) {
				if _, err := c.Write(chunk); err != nil {
					return
				}
			}
		}()
	}
	load := func() []int64 {
		v := make([]int64, n)
		for i := range got {
			v[i] = got[i].Load()
		}
		return v
	}
	time.Sleep(time.Until(start.Add(shareTime() / 2)))
	before := load()
	time.Sleep(time.Until(stop))
	after := load()
	writers.Wait()
	ln.Close()
	up, _ := r.Stats()
	link := float64(bottleneckRate) * (shareTime() / 2).Seconds()
	for i := range n {
		shares = append(shares, 100*float64(after[i]-before[i])/link)
	}
	return shares, 100 * float64(up.Dropped) / float64(max(up.Datagrams, 1))
}
