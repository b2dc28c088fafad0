package rudp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkBlindSweep's sizes and the attacker's pacing.
const (
	sweepDatagrams = 1 << 17                 // forged datagrams in a sweep
	sweepBatch     = 50                      // sent back to back, as TestHostileBlindSweep does
	sweepPause     = time.Millisecond        // between batches
	sweepChunk     = 64 << 10                // bytes per Write, each chunk numbered
	sweepWarm      = 4 << 20                 // bytes sent before the measured phases
	sweepPhase     = 32 << 20                // bytes of the phase before the sweep, and of the one after
	sweepChunks    = sweepPhase / sweepChunk // chunks in each of those phases
)

// BenchmarkBlindSweep runs each sweep of hostileProtocols at full size
// (2^17 forged datagrams) against a stream over loopback while it
// carries data, and reports what the sweep costs the transfer. It is
// meant to run one transfer per sub-benchmark:
//
//	go test -run '^$' -bench BlindSweep -benchtime 1x .
//
// Each transfer sends, from the client to the listener's stream, 64 KiB
// chunks that each start with their number, the rest of every chunk the
// same random bytes: 4 MiB to warm up, 32 MiB (the phase before the
// sweep), then chunks until the sweep has ended, then 32 MiB more (the
// phase after it), then the end of the stream. The sweep starts when the
// reader has the phase before it. The attacker sends the sweep's
// datagrams, sealed as stream datagrams and built beforehand, through
// the client's own socket, so that they carry the client's address and
// the listener keeps its own receive path (batched reads, a 4 MiB socket
// buffer); a relabelling PacketConn, as the tests use, would hide both.
// It sends 50 back to back then sleeps 1 ms, as TestHostileBlindSweep
// does, which keeps them well within the listener's socket buffer.
//
// Metrics, averaged over b.N transfers: before-MB/s and after-MB/s, the
// reader's rate (10^6 bytes a second) over each 32 MiB phase, from the
// arrival of the chunk before it to that of its last; during-MB/s, the
// chunks that arrived while the sweep ran over its duration; sweep-s and
// forged/s, the sweep's duration and datagrams a second; rejected/op and
// duplicates/op, the datagrams the listener's engine refused and those
// it dropped as duplicates over the transfer (the client's duplicates
// count too); ignored/op, the stream frames the listener's stream
// dropped; bad-seals/op, the datagrams the listener's association dropped
// for their seal (every forged one, once the stream is keyed); kernel-drops/op, the datagrams the kernel dropped at the
// listener's socket (Linux, from /proc/net/udp; absent elsewhere). The
// benchmark fails unless every chunk arrives exact and in order,
// followed by the end of the stream, neither end failed or was reset,
// and the listener's engine saw no peer restart.
func BenchmarkBlindSweep(b *testing.B) {
	block := randomBytes(sweepChunk, 17)
	for _, hp := range hostileProtocols {
		for _, sw := range hp.sweeps {
			b.Run(hp.String()+"/"+sw.name, func(b *testing.B) {
				forged := make([][]byte, sweepDatagrams)
				for i := range forged {
					forged[i] = seal(sw.datagram(i))
				}
				b.Logf("%d forged datagrams, %d back to back then a %v pause; %d MiB before and after the sweep",
					len(forged), sweepBatch, sweepPause, sweepPhase>>20)
				var sum sweepResult
				drops := true
				b.ResetTimer()
				for range b.N {
					r := runSweep(b, hp.Protocol, block, forged)
					sum.before += r.before
					sum.during += r.during
					sum.after += r.after
					sum.duration += r.duration
					sum.rate += r.rate
					sum.rejected += r.rejected
					sum.duplicates += r.duplicates
					sum.ignored += r.ignored
					sum.badSeals += r.badSeals
					sum.drops += r.drops
					drops = drops && r.hasDrops
				}
				n := float64(b.N)
				b.ReportMetric(sum.before/n, "before-MB/s")
				b.ReportMetric(sum.during/n, "during-MB/s")
				b.ReportMetric(sum.after/n, "after-MB/s")
				b.ReportMetric(sum.duration/n, "sweep-s")
				b.ReportMetric(sum.rate/n, "forged/s")
				b.ReportMetric(sum.rejected/n, "rejected/op")
				b.ReportMetric(sum.duplicates/n, "duplicates/op")
				b.ReportMetric(sum.ignored/n, "ignored/op")
				b.ReportMetric(sum.badSeals/n, "bad-seals/op")
				if drops {
					b.ReportMetric(sum.drops/n, "kernel-drops/op")
				}
			})
		}
	}
}

// sweepResult is what one transfer of BenchmarkBlindSweep measured.
type sweepResult struct {
	before, during, after float64 // MB/s
	duration              float64 // the sweep's, in seconds
	rate                  float64 // forged datagrams a second
	rejected, duplicates  float64 // by the listener's engine
	ignored               float64 // by the listener's stream
	badSeals              float64 // by the listener's association, for their seal
	drops                 float64 // at the listener's socket, if hasDrops
	hasDrops              bool
}

// sweepTimes is when the attacker's sweep started and ended, or why it
// did not complete.
type sweepTimes struct {
	start, end time.Time
	err        error
}

// sweepWrites is what the writer of a sweep's transfer did: chunks
// written, of which mark before it saw the sweep's end.
type sweepWrites struct {
	chunks, mark int
	err          error
}

// runSweep runs one transfer of protocol p while forged is sent to the
// listener from the client's socket, checks it, and returns its figures.
// The timer runs over the transfer only.
func runSweep(b *testing.B, p Protocol, block []byte, forged [][]byte) sweepResult {
	b.StopTimer()
	cfg := &Config{Protocol: p}
	lnSock, cpc := udpSocket(b, nil, 0), udpSocket(b, nil, 0)
	defer lnSock.Close()
	defer cpc.Close()
	ln := Server(lnSock, cfg)
	defer ln.Close()
	c := Client(cpc, ln.Addr(), cfg)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := c.Handshake(ctx); err != nil {
		b.Fatalf("handshake: %v", err)
	}
	s := accept(b, ln).(*Conn)
	defer s.Close()
	for _, x := range []*Conn{c, s} {
		if err := x.SetDeadline(time.Now().Add(hangGuard)); err != nil {
			b.Fatal(err)
		}
	}
	target := lnSock.LocalAddr()
	dropsBefore, hasDrops := udpDrops(target)
	before := engineStats(s)

	start := make(chan struct{}) // the reader has the phase before the sweep
	abort := make(chan struct{}) // the reader is done
	var sweepDone atomic.Bool
	swc := make(chan sweepTimes, 1)
	wc := make(chan sweepWrites, 1)
	b.StartTimer()

	go func() { // the attacker
		defer sweepDone.Store(true)
		select {
		case <-start:
		case <-abort:
			swc <- sweepTimes{err: errors.New("the sweep did not start")}
			return
		}
		t := sweepTimes{start: time.Now()}
		for i, d := range forged {
			if _, err := cpc.WriteTo(d, target); err != nil {
				swc <- sweepTimes{err: fmt.Errorf("forged datagram %d: %w", i, err)}
				return
			}
			if i%sweepBatch == sweepBatch-1 {
				select {
				case <-abort:
					swc <- sweepTimes{err: fmt.Errorf("stopped after %d forged datagrams", i+1)}
					return
				default:
				}
				time.Sleep(sweepPause) // within the socket buffer
			}
		}
		t.end = time.Now()
		swc <- t
	}()

	go func() { // the writer
		buf := bytes.Clone(block)
		w := sweepWrites{mark: -1}
		end := -1
		for ; end < 0 || w.chunks < end; w.chunks++ {
			if end < 0 && sweepDone.Load() {
				w.mark, end = w.chunks, w.chunks+sweepChunks
			}
			binary.BigEndian.PutUint64(buf, uint64(w.chunks))
			if _, w.err = c.Write(buf); w.err != nil {
				break
			}
		}
		if w.err == nil {
			w.err = c.CloseWrite()
		}
		wc <- w
	}()

	// The reader: every chunk, exact and in order, then the end.
	startAt := (sweepWarm + sweepPhase) / sweepChunk
	arrivals := make([]time.Time, 0, 4*startAt)
	buf := make([]byte, sweepChunk)
	var rerr error
	for n := 0; ; n++ {
		if _, err := io.ReadFull(s, buf); err != nil {
			if err != io.EOF {
				rerr = fmt.Errorf("chunk %d: %w", n, err)
			}
			break
		}
		if got := binary.BigEndian.Uint64(buf); got != uint64(n) || !bytes.Equal(buf[8:], block[8:]) {
			rerr = fmt.Errorf("chunk %d (bytes %d to %d) differs from what was written (numbered %d)",
				n, n*sweepChunk, (n+1)*sweepChunk, got)
			break
		}
		arrivals = append(arrivals, time.Now())
		if n+1 == startAt {
			close(start)
		}
	}
	b.StopTimer()
	close(abort) // a sweep that has not ended stops
	if rerr != nil {
		c.Close() // the writer's Write returns
	}
	w, sw := <-wc, <-swc
	if rerr != nil {
		b.Fatalf("read: %v (writer: %d chunks, %v; sweep: %v)", rerr, w.chunks, w.err, sw.err)
	}
	if w.err != nil {
		b.Fatalf("write: %v", w.err)
	}
	if sw.err != nil {
		b.Fatalf("sweep: %v", sw.err)
	}
	if w.chunks != len(arrivals) {
		b.Fatalf("%d chunks written, %d read before the end of the stream", w.chunks, len(arrivals))
	}
	for _, x := range []*Conn{c, s} {
		x.a.mu.Lock()
		err := x.st.Err()
		if err == nil {
			err = x.err
		}
		x.a.mu.Unlock()
		if err != nil {
			b.Fatalf("a stream failed: %v", err)
		}
		select {
		case <-x.Done():
			b.Fatalf("a stream ended: %v", x.failure())
		default:
		}
	}
	st := engineStats(s)
	if st.PeerRestarts != 0 {
		b.Fatalf("the listener's engine saw %d peer restarts", st.PeerRestarts)
	}

	r := sweepResult{rejected: float64(st.PacketsRejected - before.PacketsRejected),
		duplicates: float64(st.Duplicates - before.Duplicates)}
	s.a.mu.Lock()
	r.ignored = float64(s.st.Ignored())
	r.badSeals = float64(s.a.badSeals)
	s.a.mu.Unlock()
	if drops, ok := udpDrops(target); ok && hasDrops {
		r.drops, r.hasDrops = float64(drops-dropsBefore), true
	}
	warmEnd := arrivals[sweepWarm/sweepChunk-1]
	r.before = mbps(sweepPhase, arrivals[startAt-1].Sub(warmEnd))
	d := sw.end.Sub(sw.start)
	during := 0
	for _, t := range arrivals {
		if !t.Before(sw.start) && !t.After(sw.end) {
			during++
		}
	}
	r.during = mbps(during*sweepChunk, d)
	r.after = mbps((len(arrivals)-w.mark)*sweepChunk, arrivals[len(arrivals)-1].Sub(arrivals[w.mark-1]))
	r.duration = d.Seconds()
	r.rate = float64(len(forged)) / d.Seconds()
	return r
}

// mbps is n bytes over d in 10^6 bytes a second.
func mbps(n int, d time.Duration) float64 { return float64(n) / d.Seconds() / 1e6 }

// udpDrops returns the datagrams the kernel dropped at the IPv4 UDP
// socket bound to addr, as /proc/net/udp counts them, and false where
// that file is absent or does not list it.
func udpDrops(addr net.Addr) (uint64, bool) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, false
	}
	f, err := os.Open("/proc/net/udp")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	port := fmt.Sprintf(":%04X", ua.Port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 13 || !strings.HasSuffix(fields[1], port) {
			continue
		}
		drops, err := strconv.ParseUint(fields[len(fields)-1], 10, 64)
		return drops, err == nil
	}
	return 0, false
}
