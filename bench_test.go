package rudp

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/streambench"
	"github.com/rudpkit/rudp/qlog"
	"github.com/rudpkit/rudp/trace"
)

// BenchmarkStream measures one-way stream throughput over loopback, rudp
// beside TCP in the same process: each op writes 64 KiB, and the timer
// stops when the reader has every byte (see package streambench; the
// module in bench/ compares other transports with the same harness).
func BenchmarkStream(b *testing.B) {
	for _, p := range Protocols() {
		b.Run(p.String(), func(b *testing.B) {
			c, s, _ := streamPair(b, &Config{Protocol: p}, links[0])
			benchStream(b, c, s)
		})
	}
	b.Run("tcp", func(b *testing.B) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		benchStream(b, c.(*net.TCPConn), s)
	})
}

// BenchmarkStreamQlog is BenchmarkStream's POROUS case with a qlog
// tracer on both ends writing to io.Discard: the cost of tracing every
// datagram, loss and metrics update.
func BenchmarkStreamQlog(b *testing.B) {
	cfg := &Config{Tracer: func(info trace.ConnInfo) *trace.ConnTracer {
		return qlog.NewConnTracer(nopCloser{io.Discard}, info)
	}}
	c, s, _ := streamPair(b, cfg, links[0])
	benchStream(b, c, s)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// benchStream measures c's writes until s has read them all.
func benchStream(b *testing.B, c interface {
	net.Conn
	CloseWrite() error
}, s net.Conn) {
	for _, x := range []net.Conn{c, s} {
		if err := x.SetDeadline(time.Now().Add(streambench.Safety)); err != nil {
			b.Fatal(err)
		}
	}
	streambench.Measure(b, streambench.Pair{
		W:     c,
		End:   func(int64) error { return c.CloseWrite() },
		Drain: func() (int64, error) { return io.Copy(io.Discard, s) },
	})
}
