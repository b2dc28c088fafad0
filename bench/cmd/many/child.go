package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/rudpkit/rudp"
)

// result is what a child process measures, printed as one JSON line.
// Times are from the start of the first dial, in nanoseconds.
type result struct {
	Transport string `json:"transport"`
	N         int    `json:"n"`
	Size      int    `json:"size"`
	// Dial is when the last of the N dials returned.
	Dial time.Duration `json:"dial_ns"`
	// Median, P99 and Max are of the times at which the server had
	// received and checked each stream to its end; Max is the end of
	// the whole transfer.
	Median time.Duration `json:"median_ns"`
	P99    time.Duration `json:"p99_ns"`
	Max    time.Duration `json:"max_ns"`
	// SockMem is the most memory the kernel held for the namespace's TCP
	// and UDP sockets during the measurement, above what it held before,
	// in bytes; -1 where it cannot be read (see sockMem).
	SockMem int64 `json:"sock_mem"`
}

// The streams' contents: stream i carries the bytes of an endless
// repetition of pattern[:period] from offset (i × stride) mod period.
// pattern repeats its first bytes after period, so that any chunk of up
// to maxChunk bytes from an offset below period is one slice of it:
// clients write from it and the server compares with it, without
// generating anything per stream.
const (
	period   = 65537 // a prime, so that strides give distinct offsets
	stride   = 7919
	maxChunk = 64 << 10 // the clients' writes, and the largest -readbuf
)

var pattern = func() []byte {
	p := make([]byte, period+maxChunk)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range period {
		x ^= x << 13 // xorshift64
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x >> 56)
	}
	for i := period; i < len(p); i++ {
		p[i] = p[i-period]
	}
	return p
}()

// acceptors is how many goroutines accept connections. quic-go refuses
// a handshaken connection when 32 are already waiting for Accept
// (protocol.MaxAcceptQueueSize, v0.65.0), which one goroutine, busy
// starting the streams' goroutines on a loaded machine, does not always
// prevent with 64 dials in flight.
const acceptors = 8

// offset is where stream i starts in the pattern.
func offset(i int) int { return int(uint64(i) * stride % period) }

// runChild measures one transport with n streams in this process and
// prints the result on standard output. A stream that fails, or a
// measurement not done within timeout, ends the process with status 1
// and the reason on standard error.
func runChild(name string, n int, o options) {
	die := func(err error) {
		fmt.Fprintf(os.Stderr, "many: %s, N=%d: %v\n", name, n, err)
		os.Exit(1)
	}
	time.AfterFunc(o.timeout+10*time.Second, func() {
		die(fmt.Errorf("not done %v after the time limit (%v)", 10*time.Second, o.timeout))
	})
	raiseNoFile(name, n)
	s, err := parseSpec(name)
	if err != nil {
		die(err)
	}
	tr, err := s.open(o.handshake, o.sockets)
	if err != nil {
		die(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	srv, err := tr.listen(ctx)
	if err != nil {
		die(fmt.Errorf("listen: %w", err))
	}
	suffix := fmt.Sprintf(".%s.%d", strings.ReplaceAll(name, "/", "-"), n)
	if o.memProfile != "" {
		stop := profilePeak(o.memProfile+suffix, die)
		defer stop()
	}
	if o.cpuProfile != "" {
		stop := profileCPU(o.cpuProfile+suffix, die)
		defer stop()
	}
	stopSockMem := sockMem()
	res, err := measure(ctx, tr, srv, n, o)
	sock := stopSockMem()
	if err != nil {
		if st, ok := srv.(interface{ stats() string }); ok {
			err = fmt.Errorf("%w; listener: %s", err, st.stats())
		}
		var te *quic.TransportError
		if errors.As(err, &te) && te.Remote && te.ErrorCode == quic.ConnectionRefused && o.dials > 32 {
			err = fmt.Errorf("%w; quic-go refuses a handshaken connection while 32 wait for Accept: try -dials 32", err)
		}
		if errors.Is(err, rudp.ErrHandshakeTimeout) {
			err = fmt.Errorf("%w; -handshake sets rudp's Config.HandshakeTimeout", err)
		}
		die(err)
	}
	res.Transport = name
	res.SockMem = sock
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		die(err)
	}
}

// raiseNoFile raises this process's limit on open files to the hard
// limit, and warns when it is below what n streams may need (two
// descriptors each for TCP, one for each side's socket, plus a margin).
func raiseNoFile(name string, n int) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		fmt.Fprintf(os.Stderr, "many: %s, N=%d: open-file limit: %v\n", name, n, err)
		return
	}
	if rl.Cur < rl.Max {
		want := rl
		want.Cur = want.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			fmt.Fprintf(os.Stderr, "many: %s, N=%d: raising the open-file limit to %d: %v\n", name, n, want.Max, err)
		} else {
			rl = want
		}
	}
	if need := uint64(2*n + 100); rl.Cur < need {
		fmt.Fprintf(os.Stderr, "many: %s, N=%d: warning: open-file limit %d is below 2N+100 = %d\n", name, n, rl.Cur, need)
	}
}

// measure dials n streams to srv, at most o.dials at once, writes
// o.size bytes on each, and returns when the server has received and checked
// every stream to its end and every client has seen the server's end.
func measure(ctx context.Context, tr *transport, srv server, n int, o options) (*result, error) {
	deadline, _ := ctx.Deadline()
	var (
		dialed    = make([]time.Duration, n)
		completed = make([]time.Duration, n)
		seen      = make([]atomic.Bool, n)
		left      atomic.Int64 // streams not yet received
		dialCount atomic.Int64 // dials that succeeded
		allIn     = make(chan struct{})
		failOnce  sync.Once
		failed    = make(chan struct{})
		failure   error
	)
	left.Store(int64(n))
	fail := func(err error) {
		failOnce.Do(func() { failure = err; close(failed) })
	}

	start := time.Now()
	for range acceptors { // the server
		go func() {
			for {
				open, err := srv.accept(ctx)
				if err != nil {
					fail(fmt.Errorf("accept: %w", err))
					return
				}
				go func() {
					c, err := open(ctx)
					if err != nil {
						fail(fmt.Errorf("accept a stream: %w", err))
						return
					}
					i, err := receive(c, n, o.size, o.readBuf, seen, deadline)
					if err != nil {
						fail(err)
						return
					}
					completed[i] = time.Since(start)
					if err := c.Close(); err != nil {
						fail(fmt.Errorf("stream %d: server's close: %w", i, err))
						return
					}
					if left.Add(-1) == 0 {
						close(allIn)
					}
				}()
			}
		}()
	}

	clientsDone := make(chan struct{})
	go func() { // the clients
		var clients sync.WaitGroup
		defer func() { clients.Wait(); close(clientsDone) }()
		sem := make(chan struct{}, o.dials)
		for i := range n {
			select {
			case sem <- struct{}{}:
			case <-failed:
				return
			}
			clients.Go(func() {
				c, err := tr.dial(ctx, srv.addr())
				dialed[i] = time.Since(start)
				<-sem
				if err == nil {
					dialCount.Add(1)
				}
				if err != nil {
					fail(fmt.Errorf("stream %d: dial: %w", i, err))
					return
				}
				if err := send(c, i, o.size, deadline); err != nil {
					fail(fmt.Errorf("stream %d: %w", i, err))
				}
			})
		}
	}()

	progress := func(err error) error {
		return fmt.Errorf("%w (after %v: %d streams dialed, %d of %d received)",
			err, time.Since(start).Round(time.Millisecond), dialCount.Load(), int64(n)-left.Load(), n)
	}
	for _, done := range []chan struct{}{allIn, clientsDone} {
		select {
		case <-done:
		case <-failed:
			return nil, progress(failure)
		case <-ctx.Done():
			return nil, progress(fmt.Errorf("time limit: %w", ctx.Err()))
		}
	}
	select { // a client that failed after its stream was received
	case <-failed:
		return nil, progress(failure)
	default:
	}
	slices.Sort(completed)
	return &result{
		N:      n,
		Size:   o.size,
		Dial:   slices.Max(dialed),
		Median: median(completed),
		P99:    completed[(99*n+99)/100-1], // the ⌈0.99 n⌉th
		Max:    completed[n-1],
	}, nil
}

// median returns the median of sorted, non-empty d.
func median(d []time.Duration) time.Duration {
	if len(d)%2 == 1 {
		return d[len(d)/2]
	}
	return (d[len(d)/2-1] + d[len(d)/2]) / 2
}

// send is a client: it sends stream i's index (4 bytes, big-endian) and
// size bytes of its pattern, ends its writing side, and waits for the
// server's end.
func send(c conn, i, size int, deadline time.Time) error {
	defer c.Close()
	if err := c.SetDeadline(deadline); err != nil {
		return err
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(i))
	if _, err := c.Write(hdr[:]); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	pos := offset(i)
	for left := size; left > 0; {
		k := min(left, maxChunk)
		if _, err := c.Write(pattern[pos : pos+k]); err != nil {
			return fmt.Errorf("write at byte %d: %w", size-left, err)
		}
		pos = (pos + k) % period
		left -= k
	}
	if err := c.CloseWrite(); err != nil {
		return fmt.Errorf("close write: %w", err)
	}
	got, err := io.Copy(io.Discard, c)
	if err != nil {
		return fmt.Errorf("read the server's end: %w", err)
	}
	if got != 0 {
		return fmt.Errorf("the server sent %d bytes", got)
	}
	return nil
}

// receive is the server's side of one stream: it reads the stream's
// index, then reads to io.EOF with a buffer of readBuf bytes, checking
// every byte against the stream's pattern, and returns the index.
func receive(c conn, n, size, readBuf int, seen []atomic.Bool, deadline time.Time) (int, error) {
	if err := c.SetDeadline(deadline); err != nil {
		return 0, err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return 0, fmt.Errorf("a stream's index: %w", err)
	}
	i := int(binary.BigEndian.Uint32(hdr[:]))
	if i >= n {
		return 0, fmt.Errorf("stream index %d out of range", i)
	}
	if seen[i].Swap(true) {
		return 0, fmt.Errorf("stream %d opened twice", i)
	}
	buf := make([]byte, readBuf)
	pos, got := offset(i), 0
	for {
		k, err := c.Read(buf)
		if got+k > size {
			return 0, fmt.Errorf("stream %d: %d bytes received, more than the %d sent", i, got+k, size)
		}
		if want := pattern[pos : pos+k]; !bytes.Equal(buf[:k], want) {
			j := 0
			for buf[j] == want[j] {
				j++
			}
			return 0, fmt.Errorf("stream %d: byte %d is %#02x, not %#02x", i, got+j, buf[j], want[j])
		}
		pos = (pos + k) % period
		got += k
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("stream %d: read at byte %d: %w", i, got, err)
		}
	}
	if got != size {
		return 0, fmt.Errorf("stream %d: %d bytes received, not %d", i, got, size)
	}
	return i, nil
}
