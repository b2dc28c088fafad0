// Command many measures N concurrent streams over loopback (127.0.0.1),
// one transport at a time, each in a child process of its own, so that
// the peak resident memory and the CPU time it reports are that
// transport's alone.
//
// A child listens on 127.0.0.1 and dials N streams to itself, at most
// -dials dials in flight at once; each client, once dialed, sends a
// 4-byte stream index and -size bytes of a pattern that depends on the
// index, then ends its writing side; the server reads each stream to its
// end, checks every byte, and notes the time. The child prints those
// times as one JSON line; the parent takes the child's peak RSS and its
// user plus system CPU time from the process's resource usage.
//
// The "sock MiB" column is the most memory the kernel held for TCP and
// UDP sockets during the measurement (/proc/net/sockstat, Linux): kernel
// TCP keeps its send and receive buffers there, outside the RSS, while a
// transport over UDP keeps its own in the RSS and only its sockets'
// queues there. It counts every socket of the network namespace, so run
// the command in one of its own (unshare -n) for an exact figure.
//
// Transports: tcp (kernel TCP, Go's defaults), quic-go (one bidirectional
// stream per QUIC connection, TLS 1.3 with a self-signed certificate,
// quic-go's defaults), rudp/<protocol> (a rudp stream with the default
// Config, but for -handshake and -sockets). Each client has a socket of
// its own; the server side is one listener.
//
// Each run measures every transport for one N, then the next N. Per run
// and N it prints a table; with -runs above 1, then the median of each
// figure over the runs.
//
//	go run ./cmd/many [-transports tcp,quic-go,rudp/porous] [-n 100,1000] [-size 1048576]
//	    [-dials 64] [-runs 1] [-timeout 5m] [-readbuf 16384] [-handshake 0] [-sockets 0] [-memprofile file] [-cpuprofile file]
//
// With -memprofile, each child writes a heap profile (go tool pprof) to
// file.<transport>.<N>, taken when its live heap was largest, sampled
// every 100 ms; the last run's profile replaces the earlier ones. With
// -cpuprofile, each child writes its CPU profile of the whole measurement
// to file.<transport>.<N> in the same way.
//
// For 10,000 streams, use smaller ones (-n 10000 -size 65536): the child
// raises its open-file limit to the hard limit and warns when that is
// below 2N+100.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	transports := flag.String("transports", "tcp,quic-go,rudp/porous", "transports, comma-separated: tcp, quic-go, rudp/<protocol>")
	ns := flag.String("n", "100,1000", "numbers of concurrent streams, comma-separated")
	size := flag.Int("size", 1<<20, "bytes each stream carries")
	dials := flag.Int("dials", 64, "dials in flight at once, at most")
	runs := flag.Int("runs", 1, "runs, each of every N and transport")
	timeout := flag.Duration("timeout", 5*time.Minute, "time limit of one measurement (one child process)")
	readBuf := flag.Int("readbuf", 16<<10, "the server's read buffer per stream, in bytes (at most 65536)")
	handshake := flag.Duration("handshake", 0, "rudp's Config.HandshakeTimeout (0: its default, 10 s)")
	sockets := flag.Int("sockets", 0, "rudp's ListenConfig.Sockets: the listener's sockets (0: its default)")
	memProfile := flag.String("memprofile", "", "write each child's heap profile at its peak live heap to this file, suffixed .<transport>.<N>")
	cpuProfile := flag.String("cpuprofile", "", "write each child's CPU profile to this file, suffixed .<transport>.<N>")
	child := flag.String("child", "", "internal: measure this transport with one -n in this process, and print the result as JSON")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("many: ")
	if *size < 1 || *dials < 1 || *runs < 1 || *timeout <= 0 || *readBuf < 1 || *readBuf > maxChunk || *handshake < 0 || *sockets < 0 {
		log.Fatal("-size, -dials, -runs, -timeout and -readbuf must be positive, -readbuf at most 65536, -handshake and -sockets not negative")
	}
	opts := options{size: *size, dials: *dials, readBuf: *readBuf, timeout: *timeout, handshake: *handshake, sockets: *sockets, memProfile: *memProfile, cpuProfile: *cpuProfile}
	var counts []int
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			log.Fatalf("-n: %q is not a positive number", s)
		}
		counts = append(counts, n)
	}
	if *child != "" {
		if len(counts) != 1 {
			log.Fatal("-child takes one -n")
		}
		runChild(*child, counts[0], opts)
		return
	}
	names := strings.Split(*transports, ",")
	for _, name := range names {
		if _, err := parseSpec(name); err != nil {
			log.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}

	all := make(map[key][]figures) // every run's figures, failed ones left out
	failures := 0
	for run := 1; run <= *runs; run++ {
		for _, n := range counts {
			rows := make([]figures, len(names))
			for i, name := range names {
				f, err := measureChild(exe, name, n, opts)
				if err != nil {
					log.Printf("%s, N=%d, run %d: %v", name, n, run, err)
					failures++
				}
				rows[i] = f
			}
			setRatios(names, rows)
			for i, name := range names {
				if rows[i].ok {
					all[key{n, name}] = append(all[key{n, name}], rows[i])
				}
			}
			fmt.Printf("\nrun %d of %d: N = %d streams of %d bytes (%.1f MB in all), %d dials in flight at most\n",
				run, *runs, n, *size, float64(n)*float64(*size)/1e6, *dials)
			printTable(names, rows)
		}
	}
	if *runs > 1 {
		for _, n := range counts {
			rows := make([]figures, len(names))
			got := make([]int, len(names))
			for i, name := range names {
				rows[i], got[i] = medianFigures(all[key{n, name}])
			}
			fmt.Printf("\nmedians over %d runs: N = %d streams of %d bytes", *runs, n, *size)
			for i, name := range names {
				if got[i] < *runs {
					fmt.Printf("; %s: %d runs succeeded", name, got[i])
				}
			}
			fmt.Println()
			printTable(names, rows)
		}
	}
	if failures > 0 {
		log.Fatalf("%d measurements failed", failures)
	}
}

// options are the settings of every measurement.
type options struct {
	size, dials, readBuf int
	sockets              int // rudp's ListenConfig.Sockets
	timeout, handshake   time.Duration
	memProfile           string // see -memprofile; empty: none
	cpuProfile           string // see -cpuprofile; empty: none
}

// args are the flags that pass o to a child process.
func (o options) args() []string {
	return []string{"-size", strconv.Itoa(o.size), "-dials", strconv.Itoa(o.dials), "-readbuf", strconv.Itoa(o.readBuf),
		"-timeout", o.timeout.String(), "-handshake", o.handshake.String(), "-sockets", strconv.Itoa(o.sockets),
		"-memprofile", o.memProfile, "-cpuprofile", o.cpuProfile}
}

// key names one transport at one N.
type key struct {
	n         int
	transport string
}

// figures are what the tables show of one measurement (or the medians
// of several).
type figures struct {
	ok        bool
	rate      float64 // aggregate MB/s (1e6 bytes)
	ratio     float64 // rate ÷ tcp's in the same run; NaN without tcp
	dial      float64 // ms until every dial had returned
	med, p99  float64 // ms, of the streams' completion times
	max       float64 // ms: the last stream's completion, the transfer's end
	spread    float64 // max ÷ med
	rss       float64 // peak RSS of the child, MiB
	sock      float64 // peak kernel socket memory of the namespace, MiB; NaN if unknown
	cpu       float64 // user plus system CPU time of the child, s
	cpuPerMB  float64 // cpu per MB carried, ms
	errString string
}

// measureChild runs one measurement in a child process and returns its
// figures; on failure, figures whose errString says why, and the error.
func measureChild(exe, name string, n int, o options) (figures, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append([]string{"-child", name, "-n", strconv.Itoa(n)}, o.args()...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return figures{errString: "failed: " + err.Error()}, err
	}
	var r result
	if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
		return figures{errString: "bad output"}, fmt.Errorf("the child's output %q: %w", out, err)
	}
	ps := cmd.ProcessState
	var rss float64
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		rss = float64(ru.Maxrss) / 1024 // KiB on Linux
		if runtime.GOOS == "darwin" {
			rss /= 1024 // bytes
		}
	}
	sock := math.NaN()
	if r.SockMem >= 0 {
		sock = float64(r.SockMem) / (1 << 20)
	}
	mb := float64(n) * float64(o.size) / 1e6
	cpu := (ps.UserTime() + ps.SystemTime()).Seconds()
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return figures{
		ok:       true,
		rate:     mb / r.Max.Seconds(),
		ratio:    math.NaN(),
		dial:     ms(r.Dial),
		med:      ms(r.Median),
		p99:      ms(r.P99),
		max:      ms(r.Max),
		spread:   float64(r.Max) / float64(r.Median),
		rss:      rss,
		sock:     sock,
		cpu:      cpu,
		cpuPerMB: cpu * 1e3 / mb,
	}, nil
}

// setRatios sets each row's rate as a ratio to tcp's row, if there is
// one that succeeded.
func setRatios(names []string, rows []figures) {
	t := slices.Index(names, "tcp")
	if t < 0 || !rows[t].ok {
		return
	}
	for i := range rows {
		if rows[i].ok {
			rows[i].ratio = rows[i].rate / rows[t].rate
		}
	}
}

// medianFigures returns the median of each figure over runs (NaN ratios
// left out), and how many runs there were.
func medianFigures(runs []figures) (figures, int) {
	if len(runs) == 0 {
		return figures{errString: "no run succeeded"}, 0
	}
	med := func(get func(figures) float64) float64 {
		var s []float64
		for _, f := range runs {
			if v := get(f); !math.IsNaN(v) {
				s = append(s, v)
			}
		}
		if len(s) == 0 {
			return math.NaN()
		}
		slices.Sort(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return figures{
		ok:       true,
		rate:     med(func(f figures) float64 { return f.rate }),
		ratio:    med(func(f figures) float64 { return f.ratio }),
		dial:     med(func(f figures) float64 { return f.dial }),
		med:      med(func(f figures) float64 { return f.med }),
		p99:      med(func(f figures) float64 { return f.p99 }),
		max:      med(func(f figures) float64 { return f.max }),
		spread:   med(func(f figures) float64 { return f.spread }),
		rss:      med(func(f figures) float64 { return f.rss }),
		sock:     med(func(f figures) float64 { return f.sock }),
		cpu:      med(func(f figures) float64 { return f.cpu }),
		cpuPerMB: med(func(f figures) float64 { return f.cpuPerMB }),
	}, len(runs)
}

// printTable prints one row per transport.
func printTable(names []string, rows []figures) {
	w := 12
	for _, name := range names {
		w = max(w, len(name))
	}
	fmt.Printf("%-*s %9s %6s %9s %9s %9s %9s %7s %8s %8s %7s %9s\n", w, "transport",
		"MB/s", "vs tcp", "dial ms", "med ms", "p99 ms", "max ms", "max/med", "RSS MiB", "sock MiB", "CPU s", "CPU ms/MB")
	for i, name := range names {
		f := rows[i]
		if !f.ok {
			fmt.Printf("%-*s %s\n", w, name, f.errString)
			continue
		}
		ratio := "-"
		if !math.IsNaN(f.ratio) {
			ratio = fmt.Sprintf("%.2f", f.ratio)
		}
		fmt.Printf("%-*s %9.1f %6s %9.1f %9.1f %9.1f %9.1f %7.2f %8.1f %8.1f %7.2f %9.2f\n", w, name,
			f.rate, ratio, f.dial, f.med, f.p99, f.max, f.spread, f.rss, f.sock, f.cpu, f.cpuPerMB)
	}
}
