package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/rudpkit/rudp"
)

// latencyTime is how long each BenchmarkLatency run lasts: 10 s, or 1 s
// with -short (a check that it runs, as CI does; its figures then carry
// less weight).
func latencyTime() time.Duration {
	if testing.Short() {
		return time.Second
	}
	return 10 * time.Second
}

const (
	smallSize    = 100 // bytes of each small message
	smallEvery   = 10 * time.Millisecond
	bulkMessage  = 16 << 10  // bytes of each bulk message
	latencyQueue = 256 << 10 // the bottleneck's queue in BenchmarkLatency
)

// latencyPaths are the paths of BenchmarkLatency, 20 ms RTT each.
var latencyPaths = []scenario{
	{"clean", Path{Delay: 10 * time.Millisecond}, Path{Delay: 10 * time.Millisecond}},
	{"bottleneck", Path{Delay: 10 * time.Millisecond, Rate: bottleneckRate, Queue: latencyQueue}, Path{Delay: 10 * time.Millisecond}},
	{"loss1", Path{Delay: 10 * time.Millisecond, Loss: 0.01}, Path{Delay: 10 * time.Millisecond, Loss: 0.01}},
}

// BenchmarkLatency measures how long small messages wait behind bulk data
// on the same association: a writer keeps channel 0 (a stream, for
// quic-go) busy with 16 KiB messages while another sends a 100-byte
// message stamped with its send time every 10 ms on channel 1 (a second
// stream of the same quic-go connection), for 10 s through the relay.
// It reports the small messages' one-way delay (p50-ms, p99-ms, max-ms),
// the share of them delivered by the end (delivered-%, unreliable ones
// may be dropped), and the bulk throughput (bulk-MB/s). Run it with
// -benchtime 1x: each iteration is the whole run.
//
// Variants: rudp/reliable (both channels reliable, POROUS),
// rudp/unreliable (small messages unreliable), rudp/low-priority-bulk
// (channel 0 in Config.LowPriorityChannels), rudp/bulk-alone (no small
// messages: the bulk throughput to compare with), and quic-go.
func BenchmarkLatency(b *testing.B) {
	for _, sc := range latencyPaths {
		b.Run(sc.name, func(b *testing.B) {
			for _, v := range []struct {
				name  string
				cfg   rudp.Config
				small rudp.Delivery
				none  bool
			}{
				{name: "rudp/reliable", cfg: rudp.Config{Channels: 2}},
				{name: "rudp/unreliable", cfg: rudp.Config{Channels: 2}, small: rudp.Unreliable},
				{name: "rudp/low-priority-bulk", cfg: rudp.Config{Channels: 2, LowPriorityChannels: []uint8{0}}},
				{name: "rudp/bulk-alone", cfg: rudp.Config{Channels: 2}, none: true},
			} {
				b.Run(v.name, func(b *testing.B) {
					for b.Loop() {
						report(b, rudpLatency(b, sc, &v.cfg, v.small, v.none))
					}
				})
			}
			b.Run("quic-go", func(b *testing.B) {
				for b.Loop() {
					report(b, quicLatency(b, sc))
				}
			})
		})
	}
}

// latencyResult is what one run measured.
type latencyResult struct {
	delays    []time.Duration // of the small messages delivered
	sent      int             // small messages sent
	bulkBytes int64           // bulk bytes received
	elapsed   time.Duration
}

func report(b *testing.B, r latencyResult) {
	slices.Sort(r.delays)
	pct := func(p float64) float64 {
		if len(r.delays) == 0 {
			return 0
		}
		return float64(r.delays[min(len(r.delays)-1, int(p*float64(len(r.delays))))]) / 1e6
	}
	if r.sent > 0 {
		b.ReportMetric(pct(0.5), "p50-ms")
		b.ReportMetric(pct(0.99), "p99-ms")
		b.ReportMetric(pct(1), "max-ms")
		b.ReportMetric(100*float64(len(r.delays))/float64(r.sent), "delivered-%")
	}
	b.ReportMetric(float64(r.bulkBytes)/r.elapsed.Seconds()/1e6, "bulk-MB/s")
}

// stamp writes the send time into a small message; delay reads it back.
func stamp(p []byte) { binary.BigEndian.PutUint64(p, uint64(time.Now().UnixNano())) }
func delay(p []byte) time.Duration {
	return time.Duration(time.Now().UnixNano() - int64(binary.BigEndian.Uint64(p)))
}

// collector gathers the receiver's figures.
type collector struct {
	mu     sync.Mutex
	delays []time.Duration
	bulk   atomic.Int64
}

func (c *collector) small(p []byte) {
	d := delay(p)
	c.mu.Lock()
	c.delays = append(c.delays, d)
	c.mu.Unlock()
}

func rudpLatency(b *testing.B, sc scenario, cfg *rudp.Config, small rudp.Delivery, none bool) latencyResult {
	ln, err := rudp.ListenMessages("udp", loopback, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	r, err := NewRelay(ln.Addr().(*net.UDPAddr), sc.up, sc.down, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	c, err := rudp.DialMessages(ctx, "udp", r.Addr().String(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	s, err := ln.AcceptMessages()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	var col collector
	stop := time.Now().Add(latencyTime())
	_ = s.SetReadDeadline(stop.Add(2 * time.Second))
	go func() {
		for {
			m, err := s.ReadMessage()
			if err != nil {
				return
			}
			if m.Channel == 1 {
				col.small(m.Data)
			} else {
				col.bulk.Add(int64(len(m.Data)))
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // bulk
		defer wg.Done()
		_ = c.SetWriteDeadline(stop)
		msg := make([]byte, bulkMessage)
		for time.Now().Before(stop) {
			if c.WriteMessage(rudp.Message{Data: msg, Channel: 0}) != nil {
				return
			}
		}
	}()
	sent := 0
	if !none {
		t := time.NewTicker(smallEvery)
		for now := range t.C {
			if now.After(stop) {
				break
			}
			p := make([]byte, smallSize)
			stamp(p)
			if err := c.WriteMessage(rudp.Message{Data: p, Channel: 1, Delivery: small}); err != nil && !errors.Is(err, net.ErrClosed) {
				b.Error(err)
				break
			}
			sent++
		}
		t.Stop()
	}
	wg.Wait()
	elapsed := time.Since(start)
	time.Sleep(time.Second) // what is in flight arrives
	col.mu.Lock()
	defer col.mu.Unlock()
	b.Logf("sender: %+v", c.Stats())
	return latencyResult{delays: col.delays, sent: sent, bulkBytes: col.bulk.Load(), elapsed: elapsed}
}

func quicLatency(b *testing.B, sc scenario) latencyResult {
	serverTLS, clientTLS := selfSigned(b)
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	ln, err := quic.ListenAddr(loopback, serverTLS, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	r, err := NewRelay(ln.Addr().(*net.UDPAddr), sc.up, sc.down, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	conn, err := quic.DialAddr(ctx, r.Addr().String(), clientTLS, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.CloseWithError(0, "")
	bulk, err := conn.OpenStreamSync(ctx)
	if err != nil {
		b.Fatal(err)
	}
	smallSt, err := conn.OpenStreamSync(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// Each stream is announced by its first byte: 0 bulk, 1 small.
	if _, err := bulk.Write([]byte{0}); err != nil {
		b.Fatal(err)
	}
	if _, err := smallSt.Write([]byte{1}); err != nil {
		b.Fatal(err)
	}
	sc2, err := ln.Accept(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer sc2.CloseWithError(0, "")

	var col collector
	stop := time.Now().Add(latencyTime())
	for range 2 {
		st, err := sc2.AcceptStream(ctx)
		if err != nil {
			b.Fatal(err)
		}
		_ = st.SetReadDeadline(stop.Add(2 * time.Second))
		go func() {
			var kind [1]byte
			if _, err := io.ReadFull(st, kind[:]); err != nil {
				return
			}
			if kind[0] == 0 {
				buf := make([]byte, 64<<10)
				for {
					n, err := st.Read(buf)
					col.bulk.Add(int64(n))
					if err != nil {
						return
					}
				}
			}
			p := make([]byte, smallSize)
			for {
				if _, err := io.ReadFull(st, p); err != nil {
					return
				}
				col.small(p)
			}
		}()
	}
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = bulk.SetWriteDeadline(stop)
		msg := make([]byte, bulkMessage)
		for time.Now().Before(stop) {
			if _, err := bulk.Write(msg); err != nil {
				return
			}
		}
	}()
	sent := 0
	t := time.NewTicker(smallEvery)
	for now := range t.C {
		if now.After(stop) {
			break
		}
		p := make([]byte, smallSize)
		stamp(p)
		if _, err := smallSt.Write(p); err != nil {
			b.Error(err)
			break
		}
		sent++
	}
	t.Stop()
	wg.Wait()
	elapsed := time.Since(start)
	time.Sleep(time.Second)
	col.mu.Lock()
	defer col.mu.Unlock()
	return latencyResult{delays: col.delays, sent: sent, bulkBytes: col.bulk.Load(), elapsed: elapsed}
}
