package main

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rudpkit/rudp"
	"github.com/rudpkit/rudp/internal/impair"
	"github.com/stretchr/testify/require"
)

// stderrWatcher collects a command's stderr and reports the address of
// its "listening on" line.
type stderrWatcher struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	once sync.Once
	addr chan string
}

var listeningRE = regexp.MustCompile(`listening on (\S+)\n`)

// newStderrWatcher returns an empty watcher.
func newStderrWatcher() *stderrWatcher { return &stderrWatcher{addr: make(chan string, 1)} }

// Write collects p and looks for the "listening on" line.
func (w *stderrWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := listeningRE.FindStringSubmatch(w.buf.String()); m != nil {
		w.once.Do(func() { w.addr <- m[1] })
	}
	return len(p), nil
}

// String returns what was written so far.
func (w *stderrWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// listenAddr waits for the watched command to listen.
func (w *stderrWatcher) listenAddr(t *testing.T) string {
	t.Helper()
	select {
	case a := <-w.addr:
		return a
	case <-time.After(10 * time.Second):
		t.Fatalf("the listener did not start; stderr: %s", w)
		return ""
	}
}

// start runs the command args in the background; the channel yields its
// exit status.
func start(c *cli, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() { done <- c.run(args) }()
	return done
}

// exitStatus waits for a command started by start.
func exitStatus(t *testing.T, done <-chan int, stderr fmt.Stringer) int {
	t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(60 * time.Second):
		t.Fatalf("the command did not finish; stderr: %s", stderr)
		return -1
	}
}

func TestSendRecv(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	data := make([]byte, 3<<20+123)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(data)
	require.NoError(t, os.WriteFile(in, data, 0o600))
	want := fmt.Sprintf("sha256 %x", sha256.Sum256(data))

	recvErr := newStderrWatcher()
	recvOut := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: recvErr}
	recvDone := start(recvOut, "recv", "--quiet", "--loss", "0.02", "--seed", "2", "-o", out, "127.0.0.1:0")
	addr := recvErr.listenAddr(t)

	var sendErr bytes.Buffer
	sender := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &sendErr}
	require.Equal(t, exitOK, sender.run([]string{"send", in, addr, "--quiet", "--loss", "0.02"}), sendErr.String())
	require.Equal(t, exitOK, exitStatus(t, recvDone, recvErr), recvErr.String())

	got, err := os.ReadFile(out)
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got), "the received file differs")
	require.Contains(t, sendErr.String(), "sent 3145851 bytes")
	require.Contains(t, sendErr.String(), want+" (confirmed by the receiver)")
	require.Contains(t, recvErr.String(), "received 3145851 bytes")
	require.Contains(t, recvErr.String(), want)
}

func TestSendStdinRecvStdout(t *testing.T) {
	recvErr := newStderrWatcher()
	var recvOut bytes.Buffer
	recv := &cli{stdin: strings.NewReader(""), stdout: &recvOut, stderr: recvErr}
	recvDone := start(recv, "recv", "127.0.0.1:0")
	addr := recvErr.listenAddr(t)

	var sendErr bytes.Buffer
	sender := &cli{stdin: strings.NewReader("hello over rudp\n"), stdout: io.Discard, stderr: &sendErr}
	require.Equal(t, exitOK, sender.run([]string{"send", "-", addr}), sendErr.String())
	require.Equal(t, exitOK, exitStatus(t, recvDone, recvErr), recvErr.String())
	require.Equal(t, "hello over rudp\n", recvOut.String())
	// Without --quiet, but stderr is no terminal: no bar frames in the logs.
	require.NotContains(t, sendErr.String(), "\r")
	require.NotContains(t, recvErr.String(), "\r")
}

func TestListenDial(t *testing.T) {
	lisErr := newStderrWatcher()
	var lisOut bytes.Buffer
	lis := &cli{stdin: strings.NewReader("from the listener\n"), stdout: &lisOut, stderr: lisErr}
	lisDone := start(lis, "listen", "--quiet", "127.0.0.1:0")
	addr := lisErr.listenAddr(t)

	var dialOut, dialErr bytes.Buffer
	dialer := &cli{stdin: strings.NewReader("from the dialer\n"), stdout: &dialOut, stderr: &dialErr}
	require.Equal(t, exitOK, dialer.run([]string{"dial", "--quiet", addr}), dialErr.String())
	require.Equal(t, exitOK, exitStatus(t, lisDone, lisErr), lisErr.String())
	require.Equal(t, "from the listener\n", dialOut.String())
	require.Equal(t, "from the dialer\n", lisOut.String())
}

func TestSendFailsOnWrongDigest(t *testing.T) {
	l, err := listenStream("127.0.0.1:0", nil, impair.Config{})
	require.NoError(t, err)
	go func() {
		conn, err := acceptOne(l)
		if err != nil {
			return
		}
		defer closeAndWait(conn)
		if _, err := io.Copy(io.Discard, conn); err == nil {
			_ = confirm(conn, sha256.Sum256([]byte("something else")))
		}
	}()

	var sendErr bytes.Buffer
	sender := &cli{stdin: strings.NewReader("payload"), stdout: io.Discard, stderr: &sendErr}
	require.Equal(t, exitFail, sender.run([]string{"send", "--quiet", "-", l.Addr().String()}))
	require.Contains(t, sendErr.String(), "SHA-256 mismatch")
}

// failingReader returns what it holds, then err.
type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestPipeStdinFailure: when stdin fails, pipe ends the stream at once
// and reports that failure; the peer reads what was sent, then io.EOF.
func TestPipeStdinFailure(t *testing.T) {
	l, err := listenStream("127.0.0.1:0", nil, impair.Config{})
	require.NoError(t, err)
	got := make(chan string, 1)
	go func() {
		s, err := acceptOne(l)
		if err != nil {
			got <- err.Error()
			return
		}
		b, err := io.ReadAll(s)
		if err != nil {
			b = append(b, err.Error()...)
		}
		closeAndWait(s)
		got <- string(b)
	}()
	conn, err := dialStream(context.Background(), l.Addr().(*net.UDPAddr), nil, impair.Config{})
	require.NoError(t, err)

	c := &cli{ctx: context.Background(), stdin: &failingReader{data: "partial", err: errors.New("disk on fire")}, stdout: io.Discard, stderr: io.Discard}
	done := make(chan error, 1)
	go func() { done <- c.pipe(conn) }()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "disk on fire")
	case <-time.After(30 * time.Second):
		t.Fatal("pipe did not end after stdin failed")
	}
	require.Equal(t, "partial", <-got)
}

func TestReadHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
		size   int64
		data   string // the bytes read that are data
	}{
		{"header", string(appendHeader(nil, 3<<30)) + "rest", 3 << 30, ""},
		{"unknown size", string(appendHeader(nil, -1)), -1, ""},
		{"size beyond int64", headerMagic + "\x80\x00\x00\x00\x00\x00\x00\x00", -1, ""},
		{"plain stream", "hello over rudp, long enough", -1, "h"},
		{"plain, short", "hi", -1, "h"},
		{"empty", "", -1, ""},
		{"magic's start, then data", "\x00rudx", -1, "\x00rudx"},
		{"magic's start, then the end", "\x00rud", -1, "\x00rud"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One byte a Read: readHeader stops at the first one that differs.
			size, data, err := readHeader(iotest.OneByteReader(strings.NewReader(tc.stream)))
			require.NoError(t, err)
			require.Equal(t, tc.size, size)
			require.Equal(t, tc.data, string(data))
		})
	}
	_, _, err := readHeader(iotest.ErrReader(net.ErrClosed))
	require.ErrorIs(t, err, net.ErrClosed)
}

// streamTo dials the listener at addr with cfg (nil: defaults).
func streamTo(t *testing.T, addr string, cfg *rudp.Config) *rudp.Conn {
	t.Helper()
	raddr, err := net.ResolveUDPAddr("udp", addr)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := dialStream(ctx, raddr, cfg, impair.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { closeAndWait(conn) })
	return conn
}

// TestRecvPlainStream: recv takes a stream without the transfer header,
// as rudpcat dial sends, as data from its first byte.
func TestRecvPlainStream(t *testing.T) {
	recvErr := newStderrWatcher()
	var recvOut bytes.Buffer
	recv := &cli{stdin: strings.NewReader(""), stdout: &recvOut, stderr: recvErr}
	recvDone := start(recv, "recv", "127.0.0.1:0")
	conn := streamTo(t, recvErr.listenAddr(t), nil)

	_, err := conn.Write([]byte("plain bytes"))
	require.NoError(t, err)
	require.NoError(t, conn.CloseWrite())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	sum, err := io.ReadAll(conn)
	require.NoError(t, err)
	want := sha256.Sum256([]byte("plain bytes"))
	require.Equal(t, want[:], sum)
	require.Equal(t, exitOK, exitStatus(t, recvDone, recvErr), recvErr.String())
	require.Equal(t, "plain bytes", recvOut.String())
}

// TestRecvProgressTotal: the receiver's bar shows the size the sender
// announced.
func TestRecvProgressTotal(t *testing.T) {
	l, err := listenStream("127.0.0.1:0", nil, impair.Config{})
	require.NoError(t, err)
	sender := streamTo(t, l.Addr().String(), nil)
	sent := make(chan error, 1)
	go func() {
		_, err := sendStream(sender, bytes.NewReader(make([]byte, 3<<20)), 3<<20, newProgress(io.Discard, "", false))
		sent <- err
	}()
	conn, err := acceptOne(l)
	require.NoError(t, err)
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))

	var bar bytes.Buffer
	r, err := receive(conn, io.Discard, newProgress(&bar, "recv", true))
	require.NoError(t, err)
	require.NoError(t, confirm(conn, r.sum))
	closeAndWait(conn)
	require.NoError(t, <-sent)
	require.Equal(t, int64(3<<20), r.bytes, "the header is no data")
	require.Contains(t, bar.String(), "0 B/3.1 MB", "the first frame shows the total")
}

// bytesWatcher is a Writer that reports when it has been written n bytes.
type bytesWatcher struct {
	n, got  int
	reached chan struct{}
}

func (w *bytesWatcher) Write(p []byte) (int, error) {
	w.got += len(p)
	if w.got >= w.n && w.reached != nil {
		close(w.reached)
		w.reached = nil
	}
	return len(p), nil
}

// TestRecvInterrupted: Ctrl-C (here a cancelled context) resets the
// stream, so that the sender fails at once rather than after its idle
// timeout, and recv exits with a one-line message saying what it got.
func TestRecvInterrupted(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	recvErr := newStderrWatcher()
	out := &bytesWatcher{n: 1000, reached: make(chan struct{})}
	reached := out.reached
	recv := &cli{ctx: ctx, stdin: strings.NewReader(""), stdout: out, stderr: recvErr}
	recvDone := start(recv, "recv", "--quiet", "127.0.0.1:0")
	conn := streamTo(t, recvErr.listenAddr(t), &rudp.Config{IdleTimeout: time.Minute})

	_, err := conn.Write(append(appendHeader(nil, 1<<20), make([]byte, 1000)...))
	require.NoError(t, err)
	select {
	case <-reached:
	case <-time.After(10 * time.Second):
		t.Fatal("recv did not write the data")
	}
	interrupt()

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, rudp.ErrReset)
	select {
	case code := <-recvDone:
		require.Equal(t, exitFail, code)
	case <-time.After(10 * time.Second):
		t.Fatal("recv did not exit")
	}
	lines := strings.Split(strings.TrimSuffix(recvErr.String(), "\n"), "\n")
	require.Equal(t, "rudpcat recv: interrupted after receiving 1000 bytes; the stream was reset", lines[len(lines)-1])
	require.Len(t, lines, 2, "listening on, then the message")
}

// TestListenInterrupted: Ctrl-C before a peer came ends the wait.
func TestListenInterrupted(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	lisErr := newStderrWatcher()
	lis := &cli{ctx: ctx, stdin: strings.NewReader(""), stdout: io.Discard, stderr: lisErr}
	done := start(lis, "listen", "127.0.0.1:0")
	lisErr.listenAddr(t)
	interrupt()
	select {
	case code := <-done:
		require.Equal(t, exitFail, code)
	case <-time.After(10 * time.Second):
		t.Fatal("listen did not exit")
	}
	require.True(t, strings.HasSuffix(lisErr.String(), "\nrudpcat listen: interrupted\n"), lisErr.String())
}

// TestRecvBindFailureKeepsFile: recv -o FILE creates FILE only once its
// socket is bound, so a taken port leaves an existing FILE alone.
func TestRecvBindFailureKeepsFile(t *testing.T) {
	taken, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	dir := t.TempDir()
	old, fresh := filepath.Join(dir, "old"), filepath.Join(dir, "fresh")
	require.NoError(t, os.WriteFile(old, []byte("precious"), 0o600))

	for _, out := range []string{old, fresh} {
		var errOut bytes.Buffer
		c := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &errOut}
		require.Equal(t, exitFail, c.run([]string{"recv", "-o", out, taken.LocalAddr().String()}))
		require.Contains(t, errOut.String(), "address already in use")
	}
	got, err := os.ReadFile(old)
	require.NoError(t, err)
	require.Equal(t, "precious", string(got))
	_, err = os.Stat(fresh)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestHandshakeTimeoutHint: a dialer whose handshake times out, as it does
// against a listener of another protocol, suggests --protocol.
func TestHandshakeTimeoutHint(t *testing.T) {
	ps := rudp.Protocols()
	l, err := listenStream("127.0.0.1:0", &rudp.Config{Protocol: ps[0]}, impair.Config{})
	require.NoError(t, err)
	defer l.Close()
	cfg := &rudp.Config{Protocol: ps[1], HandshakeTimeout: 200 * time.Millisecond}
	_, err = dialStream(context.Background(), l.Addr().(*net.UDPAddr), cfg, impair.Config{})
	require.ErrorIs(t, err, rudp.ErrHandshakeTimeout)
	require.ErrorContains(t, err, "with the same --protocol?")
}

// TestSendRefused: send to a port where nothing listens fails with the
// kernel's refusal, which a connected socket reports within a round trip,
// not with the handshake timeout (10 s). The port is one just closed.
func TestSendRefused(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := pc.LocalAddr().String()
	require.NoError(t, pc.Close())
	in := filepath.Join(t.TempDir(), "in")
	require.NoError(t, os.WriteFile(in, []byte("to nobody"), 0o600))

	var errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &errOut}
	require.Equal(t, exitFail, c.run([]string{"send", "--quiet", in, addr}))
	require.Contains(t, errOut.String(), "connection refused")
	require.NotContains(t, errOut.String(), "timeout")
}

// TestSendStdinInterrupted: Ctrl-C (a cancelled context) ends "send -"
// while it waits for stdin (here a pipe nobody writes, as a terminal's
// stdin waits for a line): the command exits, saying it was interrupted.
func TestSendStdinInterrupted(t *testing.T) {
	recvErr := newStderrWatcher()
	recv := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: recvErr}
	start(recv, "recv", "--quiet", "127.0.0.1:0")
	addr := recvErr.listenAddr(t)

	stdin, w := io.Pipe()
	defer w.Close()
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var sendErr bytes.Buffer
	sender := &cli{ctx: ctx, stdin: stdin, stdout: io.Discard, stderr: &sendErr}
	done := make(chan int, 1)
	go func() { done <- sender.run([]string{"send", "--quiet", "-", addr}) }()
	time.Sleep(200 * time.Millisecond) // let it block on stdin
	interrupt()
	select {
	case code := <-done:
		require.Equal(t, exitFail, code)
		require.Contains(t, sendErr.String(), "interrupted")
	case <-time.After(20 * time.Second):
		t.Fatal("send stayed blocked on stdin after the interrupt")
	}
}

// TestSendRecvWirefoxIdentity: recv with --encrypt and --identity prints
// its public key; send with --encrypt and that --server-key transfers and
// verifies the file, while send with another key fails the handshake on
// the server's identity; --handshake-timeout bounds a dial that gets no
// answer.
func TestSendRecvWirefoxIdentity(t *testing.T) {
	dir := t.TempDir()
	in, keyFile := filepath.Join(dir, "in"), filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(in, []byte("sealed and proven"), 0o600))
	secret := bytes.Repeat([]byte{7}, 32)
	require.NoError(t, os.WriteFile(keyFile, []byte(hex.EncodeToString(secret)+"\n"), 0o600))
	priv, err := ecdh.X25519().NewPrivateKey(secret)
	require.NoError(t, err)
	pub := hex.EncodeToString(priv.PublicKey().Bytes())

	for _, tc := range []struct {
		key  string
		want int
		text string
	}{
		{pub, exitOK, "confirmed by the receiver"},
		{strings.Repeat("11", 32), exitFail, "identity"},
	} {
		recvErr := newStderrWatcher()
		recv := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: recvErr}
		recvDone := start(recv, "recv", "--quiet", "--protocol", "wirefox", "--encrypt", "--identity", keyFile, "-o", filepath.Join(dir, "out"), "127.0.0.1:0")
		addr := recvErr.listenAddr(t)
		var sendErr bytes.Buffer
		sender := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &sendErr}
		require.Equal(t, tc.want, sender.run([]string{"send", "--quiet", "--protocol", "wirefox", "--encrypt", "--server-key", tc.key, "--handshake-timeout", "5s", in, addr}), sendErr.String())
		require.Contains(t, sendErr.String(), tc.text)
		if tc.want == exitOK {
			require.Equal(t, exitOK, exitStatus(t, recvDone, recvErr), recvErr.String())
			require.Contains(t, recvErr.String(), "identity public key "+pub)
		}
	}

	var errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &errOut}
	require.Equal(t, exitUsage, c.run([]string{"send", "--server-key", pub, in, "127.0.0.1:1"}))
	require.Contains(t, errOut.String(), "need --encrypt")
}
