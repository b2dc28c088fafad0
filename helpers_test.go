package rudp

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/impair"
	"github.com/stretchr/testify/require"
)

// link describes the path between the two ends of a test pair: loopback
// sockets, or a virtual path (see vpath). A nil *impair.Config is a clean
// path.
type link struct {
	name string
	imp  *impair.Config
}

var links = []link{
	{name: "clean"},
	{name: "impaired", imp: &impair.Config{Loss: 0.05, Duplicate: 0.02, Delay: time.Millisecond,
		Reorder: 0.02, ReorderDelay: 2 * time.Millisecond}},
}

// udpSocket opens a loopback UDP socket, impaired in its sending direction
// when imp is not nil.
func udpSocket(t testing.TB, imp *impair.Config, seed uint64) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	if imp == nil {
		return pc
	}
	cfg := *imp
	cfg.Seed = seed
	return impair.New(pc, cfg)
}

// streamPair returns a dialed and an accepted stream conn over real UDP
// sockets, and the listener. Everything is closed at the end of the test.
func streamPair(t testing.TB, cfg *Config, l link) (client, server *Conn, ln *Listener) {
	t.Helper()
	ln = Server(udpSocket(t, l.imp, 1), cfg)
	client = Client(udpSocket(t, l.imp, 2), ln.Addr(), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, client.Handshake(ctx))
	sc := accept(t, ln)
	t.Cleanup(func() {
		client.Close()
		sc.Close()
		ln.Close()
	})
	bound(t, client, sc)
	return client, sc.(*Conn), ln
}

// ioBound bounds every Read and Write on the conns of a test pair, so that
// a regression fails in seconds instead of hanging.
const ioBound = 30 * time.Second

// accept returns the listener's next conn, failing the test if none comes
// within ioBound (the listener is then closed).
func accept(t testing.TB, ln net.Listener) net.Conn {
	t.Helper()
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	select {
	case a := <-ch:
		require.NoError(t, a.err)
		return a.c
	case <-time.After(ioBound):
		ln.Close()
		t.Fatalf("nothing to accept after %v", ioBound)
		return nil
	}
}

// bound sets the conns' deadlines ioBound from now.
func bound(t testing.TB, conns ...net.Conn) {
	t.Helper()
	for _, c := range conns {
		require.NoError(t, c.SetDeadline(time.Now().Add(ioBound)))
	}
}

// rawPeer is a bare UDP socket that speaks a protocol's bytes by hand to a
// rudp listener, for wire-level tests.
type rawPeer struct {
	t   *testing.T
	pc  net.PacketConn
	to  net.Addr
	buf []byte
}

func newRawPeer(t *testing.T, to net.Addr) *rawPeer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	return &rawPeer{t: t, pc: pc, to: to, buf: make([]byte, 2048)}
}

// send sends one datagram.
func (r *rawPeer) send(p []byte) {
	r.t.Helper()
	_, err := r.pc.WriteTo(p, r.to)
	require.NoError(r.t, err)
}

// recv returns the next datagram, failing after 5 s.
func (r *rawPeer) recv() []byte {
	r.t.Helper()
	require.NoError(r.t, r.pc.SetReadDeadline(time.Now().Add(5*time.Second)))
	n, _, err := r.pc.ReadFrom(r.buf)
	require.NoError(r.t, err)
	return append([]byte{}, r.buf[:n]...)
}

// requireClosedByPeer checks that s, whose peer c closed, reads io.EOF
// once its messages are read, and that c finishes.
func requireClosedByPeer(t *testing.T, s, c *MessageConn) {
	t.Helper()
	_, err := s.ReadMessage()
	require.ErrorIs(t, err, io.EOF)
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the closed conn never finished")
	}
}

// logBuffer collects what a Config.Logger writes at Debug level, safe for
// the conns' goroutines to write while the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logger returns a debug logger writing to b.
func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// writeThenCloseWrite writes data to c and then closes its writing side,
// in its own goroutine, and sends the first error (or nil) to errc.
func writeThenCloseWrite(c interface {
	Write([]byte) (int, error)
	CloseWrite() error
}, data []byte, errc chan<- error) {
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.CloseWrite()
		}
		errc <- err
	}()
}
