package rudp

import (
	"io"
	"net"
	"testing"
)

// BenchmarkStream measures one-way stream throughput over loopback, rudp
// beside TCP in the same process: each op writes 64 KiB.
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
		s, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		benchStream(b, c, s)
	})
}

func benchStream(b *testing.B, c, s net.Conn) {
	chunk := randomBytes(64<<10, 5)
	done := make(chan int64)
	go func() {
		n, _ := io.Copy(io.Discard, s)
		done <- n
	}()
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	n := <-done
	b.StopTimer()
	if n%int64(len(chunk)) != 0 {
		b.Fatalf("received %d bytes", n)
	}
	c.Close()
}
