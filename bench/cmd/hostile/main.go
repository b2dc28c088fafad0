// Command hostile runs the attacks of rudp's hostile tests at full size
// against a listener on 127.0.0.1 and prints what they cost it: blind
// sources that send a valid opening and never answer (heap, backlog,
// accepted conns), a flood of openings during a legitimate dial and echo,
// and idle streams (heap per stream, CPU seconds per second). Attackers
// are UDP sockets on 127.0.0.1, each port a distinct source; the idle
// streams' clients run in a child process, so that the listener's
// process holds only the listener's side, and dial at -dialrate streams
// a second: 10,000 at 500 a second spread their keepalives evenly over
// the default 20 s KeepAlive, as clients that connect at random times
// would. The floor phase (Linux only) measures what a bare echo loop
// spends per probe and answer under the idle phase's load: the floor
// under the idle phase's figure on the same machine. With both phases,
// the floor runs before each protocol's idle phase, which then prints
// its CPU per datagram as a ratio to that floor's; -pairs repeats the
// two.
//
//	go run ./cmd/hostile [-protocols porous,airhook,lludp,wirefox,avara] [-phases flood,dial,idle,floor]
//	    [-sources 20000] [-rate 1000] [-idle 10000] [-dialrate 500] [-window 30s] [-pairs 1]
//	    [-keepalive d] [-heapprofile file] [-cpuprofile file]
package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rudpkit/rudp"
)

var (
	heapProfile, cpuProfile *string
	keepAlive               *time.Duration
	echoLoop                *string
)

func main() {
	protocols := flag.String("protocols", "porous,airhook,lludp,wirefox,avara", "protocols to attack, comma-separated")
	phases := flag.String("phases", "flood,dial,idle", "phases to run, comma-separated: flood (blind sources), dial (a dial during a flood), idle (idle streams), floor (a bare echo loop under the idle streams' probes)")
	sources := flag.Int("sources", 20000, "blind sources, one opening each")
	rate := flag.Int("rate", 1000, "openings per second during the legitimate dial")
	idle := flag.Int("idle", 10000, "idle streams")
	dialRate := flag.Int("dialrate", 500, "idle streams dialed per second (0: as fast as they open)")
	window := flag.Duration("window", 30*time.Second, "how long idle streams are watched for CPU use")
	pairs := flag.Int("pairs", 1, "runs of the floor and idle phases, alternated, per protocol")
	heapProfile = flag.String("heapprofile", "", "write heap profiles of the idle streams' listener, sampling every allocation, to this file suffixed with the protocol: while idle, and (suffixed .ended) once every stream has ended")
	cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of the idle streams' listener over the window to this file (suffixed with the protocol)")
	echoLoop = flag.String("echo", "raw", "the floor phase's echo loop: raw (recvfrom and sendto system calls) or net (the net package's ReadFromUDPAddrPort and WriteToUDPAddrPort)")
	keepAlive = flag.Duration("keepalive", 0, "Config.KeepAlive of the idle streams, with an IdleTimeout three times as long (0: the defaults)")
	clients := flag.String("clients", "", "internal: run as the idle streams' client process, dialing this address")
	echoClients := flag.String("echoclients", "", "internal: run as the floor phase's client process, probing this address")
	flag.Parse()
	if *heapProfile != "" {
		runtime.MemProfileRate = 1
	}
	interval := cmp.Or(*keepAlive, rudp.DefaultKeepAlive)
	if *clients != "" {
		runClients(*clients, *protocols, *idle, *dialRate)
		return
	}
	if *echoClients != "" {
		runEchoClients(*echoClients, *idle, interval)
		return
	}
	if run(*phases, "floor") && !run(*phases, "idle") {
		for range *pairs {
			echoFloor(*idle, interval, *window)
		}
	}
	for _, name := range strings.Split(*protocols, ",") {
		p, err := rudp.ParseProtocol(name)
		if err != nil {
			log.Fatal(err)
		}
		if run(*phases, "flood") {
			blindFlood(p, *sources)
		}
		if run(*phases, "dial") {
			floodDial(p, *rate)
		}
		if !run(*phases, "idle") {
			continue
		}
		var ratios []float64
		for range *pairs {
			var floor time.Duration
			if run(*phases, "floor") {
				floor = echoFloor(*idle, interval, *window)
			}
			perProbe := idleStreams(p, *idle, *dialRate, *window)
			if floor > 0 {
				ratios = append(ratios, float64(perProbe)/float64(floor))
				fmt.Printf("%-8s idle listener's CPU per datagram received: %.2f × the floor's before it\n", p, ratios[len(ratios)-1])
			}
		}
		if len(ratios) > 1 {
			slices.Sort(ratios)
			fmt.Printf("%-8s ratios to the floor over %d pairs: %.2f, median %.2f\n", p, len(ratios), ratios, median(ratios))
		}
	}
}

// median returns the median of sorted, non-empty s.
func median(s []float64) float64 {
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// run reports whether the comma-separated phases name phase.
func run(phases, phase string) bool {
	return slices.Contains(strings.Split(phases, ","), phase)
}

// heapAlloc returns the live heap after garbage collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// cpuTime returns the user and system CPU time of this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func listen(cfg *rudp.Config) *rudp.Listener {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	return rudp.Server(pc, cfg)
}

// opening returns the first datagram a stream client of p sends: what a
// blind attacker replays.
func opening(p rudp.Protocol) []byte {
	sink, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer sink.Close()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	c := rudp.Client(pc, sink.LocalAddr(), &rudp.Config{Protocol: p})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = c.Handshake(ctx) }()
	defer func() { cancel(); c.Close() }()
	buf := make([]byte, 2048)
	_ = sink.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _, err := sink.ReadFrom(buf)
	if err != nil {
		log.Fatal(err)
	}
	return buf[:n]
}

// dealt counts the openings ln has dealt with, given that sent were sent
// and its backlog holds backlog half-open peers when full.
func dealt(ln *rudp.Listener, sent, backlog int) int {
	st := ln.Stats()
	return int(st.Evicted+st.UnknownDrops+st.BacklogDrops) + min(sent, backlog)
}

// acceptAll counts the conns ln accepts until it closes.
func acceptAll(ln *rudp.Listener) *int64Counter {
	var n int64Counter
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.add(1)
			c.Close()
		}
	}()
	return &n
}

type int64Counter struct {
	mu sync.Mutex
	n  int64
}

func (c *int64Counter) add(d int64) { c.mu.Lock(); c.n += d; c.mu.Unlock() }
func (c *int64Counter) get() int64  { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// blindFlood sends one opening from each of n sources, never answering,
// in batches the listener has dealt with before the next (so that the
// socket buffer drops none), and reports the listener's heap growth.
func blindFlood(p rudp.Protocol, n int) {
	open := opening(p)
	ln := listen(&rudp.Config{Protocol: p})
	defer ln.Close()
	accepted := acceptAll(ln)
	before := heapAlloc()
	start := time.Now()
	const batch = 200
	// The newest sources stay open, so that no new one reuses the port of
	// a source the backlog still holds: each is a new address.
	recent := make([]net.PacketConn, 8*rudp.DefaultBacklog)
	defer func() {
		for _, pc := range recent {
			if pc != nil {
				pc.Close()
			}
		}
	}()
	for i := 0; i < n; i += batch {
		for j := i; j < min(i+batch, n); j++ {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				log.Fatal(err)
			}
			if _, err := pc.WriteTo(open, ln.Addr()); err != nil {
				log.Fatal(err)
			}
			if old := recent[j%len(recent)]; old != nil {
				old.Close()
			}
			recent[j%len(recent)] = pc
		}
		sent := min(i+batch, n)
		for deadline := time.Now().Add(10 * time.Second); dealt(ln, sent, rudp.DefaultBacklog) < sent; {
			if time.Now().After(deadline) {
				log.Fatalf("%v: the listener dealt with %d of %d openings", p, dealt(ln, sent, rudp.DefaultBacklog), sent)
			}
			time.Sleep(time.Millisecond)
		}
	}
	took := time.Since(start)
	growth := int64(heapAlloc()) - int64(before)
	st := ln.Stats()
	fmt.Printf("%-8s blind flood: %d sources in %v (%.0f/s): heap +%.2f MiB (%.0f B/source), evicted %d, refused %d, dropped %d, accepted %d\n",
		p, n, took.Round(time.Millisecond), float64(n)/took.Seconds(), float64(growth)/(1<<20), float64(growth)/float64(n),
		st.Evicted, st.UnknownDrops, st.BacklogDrops, accepted.get())
}

// floodDial dials and echoes 1 MiB, ten times, while sources send rate
// openings a second, and reports the handshake and echo times.
func floodDial(p rudp.Protocol, rate int) {
	open := opening(p)
	cfg := &rudp.Config{Protocol: p}
	ln := listen(cfg)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
				_ = c.(*rudp.Conn).CloseWrite()
			}()
		}
	}()
	attackers := make([]net.PacketConn, 1000)
	for i := range attackers {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		defer pc.Close()
		attackers[i] = pc
	}
	stop := make(chan struct{})
	var sent int64Counter
	go func() {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := attackers[i%len(attackers)].WriteTo(open, ln.Addr()); err == nil {
					sent.add(1)
				}
			}
		}
	}()
	time.Sleep(time.Second) // the backlog is full of half-open peers
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	var hs, echo []time.Duration
	failed := 0
	for range 10 {
		h, e, err := dialEcho(ln.Addr(), cfg, data)
		if err != nil {
			failed++
			log.Printf("%v: dial during the flood: %v", p, err)
			continue
		}
		hs, echo = append(hs, h), append(echo, e)
	}
	close(stop)
	st := ln.Stats()
	fmt.Printf("%-8s flood of %d openings/s (%d sent): 10 dials, %d failed; handshake %v; echo of 1 MiB %v; evicted %d\n",
		p, rate, sent.get(), failed, spread(hs), spread(echo), st.Evicted)
}

// dialEcho dials, echoes data and returns the handshake and echo times.
func dialEcho(addr net.Addr, cfg *rudp.Config, data []byte) (hs, echo time.Duration, err error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	c := rudp.Client(pc, addr, cfg)
	defer c.Close()
	start := time.Now()
	if err := c.Handshake(context.Background()); err != nil {
		return 0, 0, err
	}
	hs = time.Since(start)
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	start = time.Now()
	errc := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.CloseWrite()
		}
		errc <- err
	}()
	got, err := io.ReadAll(c)
	if err == nil {
		err = <-errc
	}
	if err == nil && string(got) != string(data) {
		err = fmt.Errorf("echoed %d bytes, not the %d sent", len(got), len(data))
	}
	return hs, time.Since(start), err
}

// spread formats the minimum, median and maximum of d.
func spread(d []time.Duration) string {
	if len(d) == 0 {
		return "-"
	}
	s := append([]time.Duration{}, d...)
	for i := range s { // insertion sort: ten values
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	r := func(x time.Duration) time.Duration { return x.Round(10 * time.Microsecond) }
	return fmt.Sprintf("min %v median %v max %v", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]))
}

// idleStreams accepts n streams from a child process, dialed at rate a
// second, each from its own socket, waits until they are idle, and
// reports the heap each costs, the CPU the listener's process uses for
// them over window, and the heap the listener keeps once every stream
// has ended. It returns the CPU per datagram received.
func idleStreams(p rudp.Protocol, n, rate int, window time.Duration) time.Duration {
	ln := listen(&rudp.Config{Protocol: p, Backlog: n, HandshakeTimeout: time.Minute, KeepAlive: *keepAlive, IdleTimeout: 3 * *keepAlive})
	defer ln.Close()
	before := int64(heapAlloc())
	ch := startChild("-clients", ln.Addr().String(), "-protocols", p.String(), "-idle", strconv.Itoa(n),
		"-dialrate", strconv.Itoa(rate), "-keepalive", keepAlive.String())
	conns := make([]net.Conn, 0, n)
	buf := make([]byte, 2)
	for range n {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := io.ReadFull(c, buf); err != nil {
			log.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Time{}) // no timer left to fire in the window
		conns = append(conns, c)
	}
	ch.ready()
	// Idle streams free their buffers at the first settle a second after
	// their last bytes; keepalives (every KeepAlive) settle them.
	time.Sleep(cmp.Or(*keepAlive, rudp.DefaultKeepAlive) + 2*time.Second)
	heap := int64(heapAlloc())
	writeHeapProfile(p, "")
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile + "." + p.String())
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
	}
	sent0, recv0 := datagrams(conns)
	cpu0, t0 := cpuTime(), time.Now()
	time.Sleep(window)
	cpu, wall := cpuTime()-cpu0, time.Since(t0)
	sent, recv := datagrams(conns)
	perStream := func(d uint64) float64 { return float64(d) / float64(n) / wall.Seconds() }
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	// The base: the same process once every stream has ended.
	for _, c := range conns {
		c.Close()
	}
	ch.stdin.Close()
	line, _ := ch.out.ReadString('\n')
	for _, c := range conns {
		select {
		case <-c.(*rudp.Conn).Done():
		case <-time.After(time.Minute):
			log.Fatal("an idle stream did not end")
		}
	}
	_ = ch.cmd.Wait()
	after := int64(heapAlloc())
	writeHeapProfile(p, ".ended")
	heap -= after
	// CPU per datagram received compares builds and protocols whose
	// probes fall differently within the window.
	perProbe := perDatagram(cpu, recv-recv0)
	fmt.Printf("%-8s %d idle streams: heap %.0f B/stream (listener side), listener CPU %.4f s/s over %v (%v per datagram received), datagrams per stream and second sent %.3f, received %.3f; heap kept once all ended %+.2f MiB; client process %s",
		p, n, float64(heap)/float64(n), cpu.Seconds()/wall.Seconds(), window, perProbe, perStream(sent-sent0), perStream(recv-recv0),
		float64(after-before)/(1<<20), line)
	return perProbe
}

// writeHeapProfile writes the heap profile to -heapprofile suffixed with
// p and suffix, if set.
func writeHeapProfile(p rudp.Protocol, suffix string) {
	if *heapProfile == "" {
		return
	}
	f, err := os.Create(*heapProfile + "." + p.String() + suffix)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		log.Fatal(err)
	}
}

// perDatagram is cpu spread over n datagrams, 0 for none, rounded to
// 100 ns.
func perDatagram(cpu time.Duration, n uint64) time.Duration {
	if n == 0 {
		return 0
	}
	return (cpu / time.Duration(n)).Round(100 * time.Nanosecond)
}

// child is a client process of this command: its standard input ends
// it, and its standard output says "ready" once it has set up, then
// what it reports at the end.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startChild starts this command again, with args, as a child process.
func startChild(args ...string) *child {
	exe, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		log.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	return &child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
}

// ready waits until the child says it is ready.
func (c *child) ready() {
	if line, err := c.out.ReadString('\n'); err != nil || line != "ready\n" {
		log.Fatalf("client process: %q %v", line, err)
	}
}

// datagrams returns the datagrams conns have sent and received.
func datagrams(conns []net.Conn) (sent, recv uint64) {
	for _, c := range conns {
		st := c.(*rudp.Conn).Stats()
		sent += st.PacketsSent
		recv += st.PacketsReceived
	}
	return sent, recv
}

// runClients is the idle streams' client process: it dials n streams to
// addr, rate a second (0: one after the other), writes "hi" on each,
// prints "ready" and holds them until its standard input ends, then
// prints its own CPU use since ready.
func runClients(addr, protocol string, n, rate int) {
	p, err := rudp.ParseProtocol(protocol)
	if err != nil {
		log.Fatal(err)
	}
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		log.Fatal(err)
	}
	cfg := &rudp.Config{Protocol: p, HandshakeTimeout: time.Minute, KeepAlive: *keepAlive, IdleTimeout: 3 * *keepAlive}
	conns := make([]*rudp.Conn, n)
	start := time.Now()
	for i := range conns {
		if rate > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		}
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		// Without batching, a client socket keeps one small read buffer.
		conns[i] = rudp.Client(plainConn{pc}, raddr, cfg)
		if _, err := conns[i].Write([]byte("hi")); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println("ready")
	cpu0, t0 := cpuTime(), time.Now()
	_, _ = io.Copy(io.Discard, os.Stdin)
	fmt.Printf("CPU %.4f s/s\n", (cpuTime()-cpu0).Seconds()/time.Since(t0).Seconds())
	for _, c := range conns {
		c.Close()
	}
	for _, c := range conns {
		select {
		case <-c.Done():
		case <-time.After(time.Minute):
			log.Fatal("a client stream did not end")
		}
	}
}

// plainConn hides a *net.UDPConn's type, so that rudp uses plain ReadFrom
// and WriteTo on it.
type plainConn struct{ net.PacketConn }
