// Package streambench measures one-way bulk stream throughput the same
// way for every transport: the benchmark writes fixed-size chunks for as
// long as b.Loop asks, ends the stream, and the timer stops only when the
// reader has received every byte, so data still buffered in the sender
// or in flight when the loop ends counts towards the time. Besides the
// rate it reports cpu-ns/op: the CPU time the whole process (writer,
// reader, the transport's goroutines and system calls) spent per op,
// which varies less than the rate on a machine shared with other work.
// It serves the root package's BenchmarkStream and the comparative
// benchmarks of module github.com/rudpkit/rudp/bench.
package streambench

import (
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

const (
	// ChunkSize is the size of every Write, and the bytes counted per op.
	ChunkSize = 64 << 10
	// Safety bounds the wait for the reader after the last Write, so that
	// a broken transport fails the benchmark instead of hanging it. The
	// caller bounds the Writes (a deadline on its conn).
	Safety = 2 * time.Minute
)

// Pair is one connected transport under test.
type Pair struct {
	// W is the client's side of the stream, written by the benchmark.
	W io.Writer
	// End is called after the last Write with the number of bytes
	// written; it ends the stream (a half-close where the transport has
	// one).
	End func(sent int64) error
	// Drain runs in the reader goroutine: it reads the server's side of
	// the stream (accepting it first, if need be) to the end and returns
	// how many bytes it read.
	Drain func() (int64, error)
}

type result struct {
	n   int64
	err error
}

// Measure runs the benchmark loop over p. The timer runs from the first
// Write until the reader has seen the end of the stream; the benchmark
// fails unless the reader got exactly the bytes written.
func Measure(b *testing.B, p Pair) {
	chunk := make([]byte, ChunkSize)
	_, _ = rand.NewChaCha8([32]byte{'r', 'u', 'd', 'p'}).Read(chunk)

	got := make(chan result, 1)
	go func() {
		n, err := p.Drain()
		got <- result{n, err}
	}()

	b.SetBytes(ChunkSize)
	b.ReportAllocs()
	cpu0, cpuOK := cpuTime()
	var sent int64
	for b.Loop() {
		n, err := p.W.Write(chunk)
		sent += int64(n)
		if err != nil {
			b.Fatalf("write after %d bytes: %v", sent, err)
		}
	}
	// b.Loop stopped the timer; the drain belongs to the transfer.
	b.StartTimer()
	if err := p.End(sent); err != nil {
		b.Fatalf("ending the stream: %v", err)
	}
	timeout := time.NewTimer(Safety)
	defer timeout.Stop()
	var r result
	select {
	case r = <-got:
	case <-timeout.C:
		b.Fatalf("the reader did not finish within %v", Safety)
	}
	b.StopTimer()
	if cpu1, ok := cpuTime(); cpuOK && ok {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
	if r.err != nil {
		b.Fatalf("reader: %v after %d of %d bytes", r.err, r.n, sent)
	}
	if r.n != sent {
		b.Fatalf("reader received %d bytes, sent %d", r.n, sent)
	}
}
