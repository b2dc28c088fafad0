package bench

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/rudpkit/rudp"
	"github.com/rudpkit/rudp/internal/streambench"
	"github.com/xtaci/kcp-go/v5"
)

const (
	// safety bounds a whole sub-benchmark: deadlines on the conns and
	// contexts on handshakes and accepts, so that a broken transport fails
	// the benchmark instead of hanging it.
	safety = streambench.Safety
	// loopback is where every listener binds.
	loopback = "127.0.0.1:0"
)

// BenchmarkStream measures one-way bulk throughput over loopback, every
// transport in the same process with the same harness: the client writes
// 64 KiB chunks for as long as b.Loop asks, ends the stream, and the
// measurement stops when the server's reader has received every byte.
func BenchmarkStream(b *testing.B) {
	for _, p := range rudp.Protocols() {
		b.Run("rudp/"+p.String(), func(b *testing.B) { measure(b, rudpPair(b, p, direct)) })
	}
	b.Run("tcp", func(b *testing.B) { measure(b, tcpPair(b)) })
	b.Run("quic-go", func(b *testing.B) { measure(b, quicPair(b, direct)) })
	b.Run("kcp-go", func(b *testing.B) { measure(b, kcpPair(b, direct)) })
	if floor != nil {
		b.Run("udp-floor", func(b *testing.B) { measure(b, floor(b)) })
	}
}

// pair is one connected transport under test.
type pair = streambench.Pair

// measure runs the benchmark loop over p: see package streambench.
func measure(b *testing.B, p pair) { streambench.Measure(b, p) }

// via maps a server's address to the one its client dials: the server
// itself (direct) or a relay in front of it.
type via func(b *testing.B, server net.Addr) string

// direct dials the server itself.
func direct(_ *testing.B, server net.Addr) string { return server.String() }

// rudpPair connects a rudp stream over protocol p with its defaults,
// dialing the address via gives.
func rudpPair(b *testing.B, p rudp.Protocol, v via) pair {
	cfg := &rudp.Config{Protocol: p}
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	b.Cleanup(cancel)
	lc := rudp.ListenConfig{Config: cfg}
	ln, err := lc.Listen(ctx, "udp", loopback)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	d := rudp.Dialer{Config: cfg}
	nc, err := d.DialContext(ctx, "udp", v(b, ln.Addr()))
	if err != nil {
		b.Fatal(err)
	}
	c := nc.(*rudp.Conn)
	var server atomic.Pointer[rudp.Conn]
	b.Cleanup(func() {
		b.Logf("sender: %+v", c.Stats())
		closeRUDP(c)
		if s := server.Load(); s != nil {
			b.Logf("receiver: %+v", s.Stats())
			closeRUDP(s)
		}
	})
	if err := c.SetDeadline(time.Now().Add(safety)); err != nil {
		b.Fatal(err)
	}
	return pair{
		W:   c,
		End: func(int64) error { return c.CloseWrite() },
		Drain: func() (int64, error) {
			nc, err := ln.Accept()
			if err != nil {
				return 0, err
			}
			s := nc.(*rudp.Conn)
			server.Store(s)
			defer s.Close()
			if err := s.SetDeadline(time.Now().Add(safety)); err != nil {
				return 0, err
			}
			return io.Copy(io.Discard, s)
		},
	}
}

// closeRUDP closes c and waits, for a bounded time, until its association
// has ended (after Airhook's TIME-WAIT), so that the next sub-benchmark
// does not share the machine with it. It runs after the measurement.
func closeRUDP(c *rudp.Conn) {
	c.Close()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-c.Done():
	case <-t.C:
	}
}

// tcpPair connects a kernel TCP stream with Go's defaults.
func tcpPair(b *testing.B) pair {
	ln, err := net.Listen("tcp", loopback)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	d := net.Dialer{Timeout: safety}
	nc, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c := nc.(*net.TCPConn)
	b.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(safety)); err != nil {
		b.Fatal(err)
	}
	return pair{
		W:   c,
		End: func(int64) error { return c.CloseWrite() },
		Drain: func() (int64, error) {
			s, err := ln.Accept()
			if err != nil {
				return 0, err
			}
			defer s.Close()
			if err := s.SetDeadline(time.Now().Add(safety)); err != nil {
				return 0, err
			}
			return io.Copy(io.Discard, s)
		},
	}
}

// quicPair opens one bidirectional quic-go stream, with quic-go's default
// Config, over TLS 1.3 with a self-signed certificate for 127.0.0.1,
// dialing the address via gives.
func quicPair(b *testing.B, v via) pair {
	serverTLS, clientTLS := selfSigned(b)
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	b.Cleanup(cancel)
	ln, err := quic.ListenAddr(loopback, serverTLS, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	conn, err := quic.DialAddr(ctx, v(b, ln.Addr()), clientTLS, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.CloseWithError(0, "") })
	st, err := conn.OpenStreamSync(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.SetDeadline(time.Now().Add(safety)); err != nil {
		b.Fatal(err)
	}
	return pair{
		W: st,
		// Close ends the stream's write side only (a FIN); the read
		// side stays open.
		End: func(int64) error { return st.Close() },
		Drain: func() (int64, error) {
			sc, err := ln.Accept(ctx)
			if err != nil {
				return 0, err
			}
			defer sc.CloseWithError(0, "")
			// The peer's stream is announced by its first STREAM frame.
			ss, err := sc.AcceptStream(ctx)
			if err != nil {
				return 0, err
			}
			if err := ss.SetDeadline(time.Now().Add(safety)); err != nil {
				return 0, err
			}
			return io.Copy(io.Discard, ss)
		},
	}
}

// selfSigned is SelfSigned, failing b on an error.
func selfSigned(b *testing.B) (server, client *tls.Config) {
	server, client, err := SelfSigned()
	if err != nil {
		b.Fatal(err)
	}
	return server, client
}

// kcpPair connects plain KCP sessions (no block cipher, no FEC) with the
// settings kcp-go documents for fast bulk transfer, on both ends:
//
//	SetNoDelay(1, 10, 2, 1)    nodelay on, 10 ms update interval, fast
//	                           resend after 2 duplicate ACKs, no
//	                           congestion window
//	SetWindowSize(1024, 1024)  send and receive windows, in segments
//	SetStreamMode(true)        a byte stream: writes are coalesced into
//	                           full segments
//	SetWriteDelay(false)       a Write is flushed at once, not at the
//	                           next update
//
// and 4 MiB socket buffers, as rudp asks for on its own sockets. The
// client dials the address via gives.
func kcpPair(b *testing.B, v via) pair {
	ln, err := kcp.ListenWithOptions(loopback, nil, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	_ = ln.SetReadBuffer(socketBuffer)
	_ = ln.SetWriteBuffer(socketBuffer)
	c, err := kcp.DialWithOptions(v(b, ln.Addr()), nil, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	_ = c.SetReadBuffer(socketBuffer)
	_ = c.SetWriteBuffer(socketBuffer)
	kcpFast(c)
	if err := c.SetDeadline(time.Now().Add(safety)); err != nil {
		b.Fatal(err)
	}
	// KCP has no half-close: the reader counts what it drains and stops
	// once it has as many bytes as the writer says it sent.
	cr := &countingReader{}
	return pair{
		W: c,
		End: func(sent int64) error {
			cr.expect(sent)
			return nil
		},
		Drain: func() (int64, error) {
			// The server's session exists once the first segment arrives.
			s, err := ln.AcceptKCP()
			if err != nil {
				return 0, err
			}
			defer s.Close()
			kcpFast(s)
			if err := s.SetDeadline(time.Now().Add(safety)); err != nil {
				return 0, err
			}
			cr.s.Store(s)
			_, err = io.Copy(io.Discard, cr)
			if cr.reached() {
				return cr.n.Load(), nil
			}
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return cr.n.Load(), err
		},
	}
}

const socketBuffer = 4 << 20

func kcpFast(s *kcp.UDPSession) {
	s.SetNoDelay(1, 10, 2, 1)
	s.SetWindowSize(1024, 1024)
	s.SetStreamMode(true)
	s.SetWriteDelay(false)
}

// countingReader reads the server's KCP session and counts the bytes.
// Once the count reaches the total the writer sent, it closes the session,
// which ends the reader's io.Copy.
type countingReader struct {
	s       atomic.Pointer[kcp.UDPSession]
	n, want atomic.Int64
	once    sync.Once
	done    atomic.Bool
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.s.Load().Read(p)
	r.check(r.n.Add(int64(n)), r.want.Load())
	return n, err
}

// expect sets the total; the reader may already have all of it, and be
// blocked in Read for more.
func (r *countingReader) expect(want int64) {
	r.want.Store(want)
	r.check(r.n.Load(), want)
}

// check closes the session once n has reached a known total. Read adds to
// n before it loads want, and expect stores want before it loads n, so at
// least one of them sees both. The session is set before the first Read
// adds to n, so it is there whenever n is not zero.
func (r *countingReader) check(n, want int64) {
	if want > 0 && n >= want {
		r.once.Do(func() {
			r.done.Store(true)
			r.s.Load().Close()
		})
	}
}

func (r *countingReader) reached() bool { return r.done.Load() }
