package main

import (
	"bytes"
	"context"
	"crypto/sha256"
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
	"time"

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

	c := &cli{stdin: &failingReader{data: "partial", err: errors.New("disk on fire")}, stdout: io.Discard, stderr: io.Discard}
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
