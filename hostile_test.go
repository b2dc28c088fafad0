package rudp

// Hostile tests: floods, spoofing, injection and mutation against real
// loopback sockets. Attackers are plain UDP sockets; sending from many
// ports of 127.0.0.1 stands in for many addresses, and a PacketConn
// wrapper that relabels an attacker's datagrams stands in for a datagram
// sent from another host's address. They assert counts and bytes, never
// timings; every wait has a bound, so that a stall fails instead of
// hanging. bench/cmd/hostile runs the same attacks at full size.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/airhook"
	"github.com/rudpkit/rudp/internal/impair"
	"github.com/rudpkit/rudp/internal/lludp"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/rudpkit/rudp/internal/wirefox"
	"github.com/stretchr/testify/require"
)

// streamProtocols are the protocols streams run on.
var streamProtocols = []Protocol{POROUS, Airhook, LLUDP, Wirefox, Avara}

// hangGuard bounds every wait of these tests: far beyond what any of them
// needs, so that only a stall reaches it.
const hangGuard = 60 * time.Second

// heapAlloc returns the live heap after garbage collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// openingOf returns the first datagram a stream client of protocol p
// sends: the opening a blind attacker replays (for Airhook it carries the
// stream HELLO; POROUS's Connect and LLUDP's UseCircuitCode carry none).
func openingOf(t testing.TB, p Protocol) []byte { return firstDatagramOf(t, p, true) }

// firstDatagramOf returns the first datagram a client of protocol p
// sends, a stream's if stream, else a message conn's.
func firstDatagramOf(t testing.TB, p Protocol, stream bool) []byte {
	t.Helper()
	sink := udpSocket(t, nil, 0)
	defer sink.Close()
	var c interface {
		Handshake(context.Context) error
		Close() error
	}
	if stream {
		c = Client(udpSocket(t, nil, 0), sink.LocalAddr(), &Config{Protocol: p})
	} else {
		c = ClientMessages(udpSocket(t, nil, 0), sink.LocalAddr(), &Config{Protocol: p})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Handshake(ctx); close(done) }()
	defer func() { cancel(); <-done; c.Close() }()
	buf := make([]byte, 2048)
	require.NoError(t, sink.SetReadDeadline(time.Now().Add(hangGuard)))
	n, _, err := sink.ReadFrom(buf)
	require.NoError(t, err)
	return bytes.Clone(buf[:n])
}

// attackers are UDP sockets on 127.0.0.1, each a distinct source address.
type attackers []net.PacketConn

func newAttackers(t testing.TB, n int) attackers {
	t.Helper()
	a := make(attackers, n)
	for i := range a {
		a[i] = udpSocket(t, nil, 0)
	}
	t.Cleanup(func() {
		for _, pc := range a {
			pc.Close()
		}
	})
	return a
}

// admitted counts the openings a listener has dealt with: admitted
// (then evicted or still half-open), refused or dropped.
func admitted[T acceptable](l *listener[T]) int {
	st := l.Stats()
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	return int(st.Evicted+st.UnknownDrops+st.BacklogDrops) + len(l.q.pending) + len(l.q.queue)
}

// blindFlood sends open from each of the attackers once, never reading,
// in batches that the listener l has dealt with before the next one, so
// that the socket buffer drops none.
func blindFlood[T acceptable](t testing.TB, l *listener[T], a attackers, open []byte) {
	t.Helper()
	const batch = 100
	for i, pc := range a {
		_, err := pc.WriteTo(open, l.Addr())
		require.NoError(t, err)
		if (i+1)%batch == 0 || i == len(a)-1 {
			require.Eventually(t, func() bool { return admitted(l) >= i+1 }, hangGuard, time.Millisecond)
		}
	}
}

// TestHostileBlindFlood: 2,000 blind sources each send a valid opening and
// never read. Protections: the opening check, the backlog with eviction of
// the oldest half-open peer, and validation before Accept. No conn is
// accepted, the half-open peers stay within the backlog, and the heap
// grows by less than the 32 MiB-per-20,000-sources target scaled down.
func TestHostileBlindFlood(t *testing.T) {
	const sources = 2000
	for _, p := range streamProtocols {
		t.Run(p.String(), func(t *testing.T) {
			open := openingOf(t, p)
			a := newAttackers(t, sources)
			ln := Server(udpSocket(t, nil, 0), &Config{Protocol: p})
			defer ln.Close()
			before := heapAlloc()
			blindFlood(t, &ln.listener, a, open)
			growth := int64(heapAlloc()) - int64(before)
			t.Logf("%v: heap growth %d bytes after %d blind openings", p, growth, sources)
			require.Less(t, growth, int64(32<<20)*sources/20000)

			st := ln.Stats()
			require.Zero(t, st.UnknownDrops+st.BacklogDrops, "every opening was taken as one")
			require.Equal(t, uint64(sources-DefaultBacklog), st.Evicted)
			ln.listener.q.mu.Lock()
			defer ln.listener.q.mu.Unlock()
			require.Empty(t, ln.listener.q.queue, "no blind source is ever ready for Accept")
			require.Len(t, ln.listener.q.pending, DefaultBacklog)
		})
	}
}

// echoServer accepts one conn on ln and echoes it back until EOF.
func echoServer(t testing.TB, ln net.Listener) <-chan error {
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(hangGuard))
			_, err = io.Copy(c, c)
			if err == nil {
				err = c.(*Conn).CloseWrite()
			}
			c.Close()
		}
		errc <- err
	}()
	return errc
}

// echo writes data to c, closes its writing side and checks that exactly
// data comes back.
func echo(t testing.TB, c *Conn, data []byte) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(hangGuard)))
	werr := make(chan error, 1)
	writeThenCloseWrite(c, data, werr)
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	require.NoError(t, <-werr)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "echoed %d of %d bytes", len(got), len(data))
}

// TestHostileFloodLegitDial: while blind sources keep sending openings, a
// legitimate client dials and echoes 256 KiB. Protection: eviction of the
// oldest half-open peer (a flood cannot lock a peer out) and validation
// before Accept (the flood never reaches Accept).
func TestHostileFloodLegitDial(t *testing.T) {
	const sources = 1000
	for _, p := range streamProtocols {
		t.Run(p.String(), func(t *testing.T) {
			open := openingOf(t, p)
			a := newAttackers(t, sources)
			cfg := &Config{Protocol: p, HandshakeTimeout: hangGuard}
			ln := Server(udpSocket(t, nil, 0), cfg)
			defer ln.Close()
			errc := echoServer(t, ln)
			blindFlood(t, &ln.listener, a[:2*DefaultBacklog], open) // the backlog is full
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // about 1,000 openings a second, round the sources
				defer wg.Done()
				tick := time.NewTicker(time.Millisecond)
				defer tick.Stop()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-tick.C:
						_, _ = a[i%len(a)].WriteTo(open, ln.Addr())
					}
				}
			}()
			c := Client(udpSocket(t, nil, 0), ln.Addr(), cfg)
			defer c.Close()
			echo(t, c, randomBytes(256<<10, 7))
			close(stop)
			wg.Wait()
			require.NoError(t, <-errc)
			require.GreaterOrEqual(t, ln.Stats().Evicted, uint64(DefaultBacklog), "the flood filled the backlog")
		})
	}
}

// TestHostileAmplification: sources that send openings and then only
// read get at most 3 times the bytes they sent, retransmissions, the
// handshake's end and everything else included, counted at the source.
// Protection: the amplification limit on unvalidated sources.
func TestHostileAmplification(t *testing.T) {
	const sources = 20
	for _, p := range streamProtocols {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			open := openingOf(t, p)
			a := newAttackers(t, sources)
			ln := Server(udpSocket(t, nil, 0), &Config{Protocol: p, HandshakeTimeout: time.Second})
			defer ln.Close()
			sent := make([]int, sources)
			for i, pc := range a {
				for range 1 + i%3 { // 1 to 3 copies
					_, err := pc.WriteTo(open, ln.Addr())
					require.NoError(t, err)
					sent[i] += len(open)
				}
			}
			// Read until every half-open peer has ended (the handshake
			// timeout, then whatever it sends at its end) and a while
			// more.
			end := time.Now().Add(3 * time.Second)
			total := 0
			buf := make([]byte, 2048)
			for i, pc := range a {
				got := 0
				require.NoError(t, pc.SetReadDeadline(end))
				for {
					n, from, err := pc.ReadFrom(buf)
					if err != nil {
						break
					}
					if keyOf(from) == keyOf(ln.Addr()) { // not a stale peer of an earlier test on this port
						got += n
					}
				}
				require.LessOrEqual(t, got, 3*sent[i], "source %d sent %d bytes", i, sent[i])
				total += got
			}
			require.Positive(t, total, "the listener answered")
		})
	}
}

// spoofConn relabels the datagrams that reach it from the attacker's
// address as coming from victim: what a host able to send from victim's
// address, but unable to see the traffic, can do.
type spoofConn struct {
	net.PacketConn
	attacker, victim net.Addr
}

func (c *spoofConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, from, err := c.PacketConn.ReadFrom(p)
	if err == nil && keyOf(from) == keyOf(c.attacker) {
		from = c.victim
	}
	return n, from, err
}

// spoofedPair returns a stream pair of protocol p whose listener's socket
// takes the attacker's datagrams as the client's (toServer) or whose
// client's socket takes them as the listener's (!toServer), and the
// attacker's socket and the address to send to.
func spoofedPair(t *testing.T, p Protocol, toServer bool) (c, s *Conn, attacker net.PacketConn, target net.Addr) {
	return spoofedPairImpaired(t, p, toServer, nil)
}

// spoofedPairImpaired is spoofedPair with imp, if not nil, impairing what
// the client and the listener send.
func spoofedPairImpaired(t *testing.T, p Protocol, toServer bool, imp *impair.Config) (c, s *Conn, attacker net.PacketConn, target net.Addr) {
	t.Helper()
	attacker = udpSocket(t, nil, 0)
	t.Cleanup(func() { attacker.Close() })
	cfg := &Config{Protocol: p}
	spc, cpc := udpSocket(t, imp, 1), udpSocket(t, imp, 2)
	if toServer {
		spc = &spoofConn{PacketConn: spc, attacker: attacker.LocalAddr(), victim: cpc.LocalAddr()}
		target = spc.LocalAddr()
	} else {
		cpc = &spoofConn{PacketConn: cpc, attacker: attacker.LocalAddr(), victim: spc.LocalAddr()}
		target = cpc.LocalAddr()
	}
	ln := Server(spc, cfg)
	c = Client(cpc, ln.Addr(), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	require.NoError(t, c.Handshake(ctx))
	sc, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		sc.Close()
		ln.Close()
	})
	return c, sc.(*Conn), attacker, target
}

// engineStats returns c's engine counters.
func engineStats(c *Conn) (challenges, refused, restarts uint64) {
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	st := c.a.eng.Stats()
	return st.Challenges, st.SpoofsRefused, st.PeerRestarts
}

// transferUnder sends 1 MiB from c to s while attack runs in the
// background, and checks that every byte arrives, in order, then EOF.
func transferUnder(t *testing.T, c, s *Conn, attack func(stop <-chan struct{})) {
	t.Helper()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); attack(stop) }()
	data := randomBytes(1<<20, 9)
	werr := make(chan error, 1)
	require.NoError(t, c.SetDeadline(time.Now().Add(hangGuard)))
	require.NoError(t, s.SetDeadline(time.Now().Add(hangGuard)))
	writeThenCloseWrite(c, data, werr)
	got, err := io.ReadAll(s)
	close(stop)
	<-done
	require.NoError(t, err)
	require.NoError(t, <-werr)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "got %d of %d bytes", len(got), len(data))
}

// TestHostileSpoofedRestartAndClose: during a transfer, a blind attacker
// sends, from the address of one end's peer, what announces a restarted
// peer or a close: a POROUS Connect with a new nonce or a Disconnect, an
// Airhook packet with a new session ID, an LLUDP UseCircuitCode with a new
// circuit code or a CloseCircuit, a Wirefox INITIAL_CLIENT with a new
// PeerID. Protection: the challenge of such announcements (the live peer
// answers it). The transfer completes intact and the victim counts
// refused spoofs, no restart. A blind Wirefox DISCONNECT_REQUEST or Avara
// Logout has no case here: it does not get as far as a challenge (a
// Wirefox stream's datagram IDs start at random, so a blind one falls
// outside its history; an Avara stream's checksum is keyed by the client's
// seed), see TestWirefoxReplayedOldSession and TestAvaraReplayOldSession.
func TestHostileSpoofedRestartAndClose(t *testing.T) {
	connect := porous.Frame{Type: porous.FrameConnect, Channels: 1, Nonce: 0x5900f}
	disconnect := porous.Frame{Type: porous.FrameDisconnect}
	circuit := binary.LittleEndian.AppendUint32(nil, 0x5900f)
	circuit = append(circuit, make([]byte, 32)...)
	cases := []struct {
		name  string
		p     Protocol
		spoof []byte
	}{
		{"porous-connect", POROUS, connect.AppendTo(nil)},
		{"porous-disconnect", POROUS, disconnect.AppendTo(nil)},
		{"airhook-session", Airhook, (&airhook.Packet{Session: 0x5900f, Seq: 1}).AppendTo(nil)},
		{"lludp-usecircuitcode", LLUDP, lludp.AppendPacket(nil, &lludp.Packet{Flags: lludp.FlagReliable, Seq: 1, Message: lludp.UseCircuitCode, Body: circuit})},
		{"lludp-closecircuit", LLUDP, lludp.AppendPacket(nil, &lludp.Packet{Seq: 2, Message: lludp.CloseCircuit})},
		{"wirefox-initial-client", Wirefox, wirefox.AppendOOB(nil, 0, wirefox.AppendHandshake(nil,
			&wirefox.Handshake{Version: wirefox.Version, PeerID: 0x5900f, Op: wirefox.OpInitialClient, Data: []byte{0}}))},
	}
	for _, tc := range cases {
		for _, toServer := range []bool{true, false} {
			if (tc.name == "lludp-usecircuitcode" || tc.name == "wirefox-initial-client") && !toServer {
				continue // only a server takes a UseCircuitCode or an INITIAL_CLIENT
			}
			name := tc.name + "-to-client"
			if toServer {
				name = tc.name + "-to-server"
			}
			t.Run(name, func(t *testing.T) {
				c, s, attacker, target := spoofedPair(t, tc.p, toServer)
				victim := c
				if toServer {
					victim = s
				}
				transferUnder(t, c, s, func(stop <-chan struct{}) {
					for {
						_, _ = attacker.WriteTo(seal(bytes.Clone(tc.spoof)), target)
						select {
						case <-stop:
							return
						case <-time.After(5 * time.Millisecond):
						}
					}
				})
				require.Eventually(t, func() bool {
					challenges, refused, _ := engineStats(victim)
					return challenges > 0 && refused > 0
				}, hangGuard, time.Millisecond, "spoofs were challenged and refused")
				_, _, restarts := engineStats(victim)
				require.Zero(t, restarts)
			})
		}
	}
}

// TestHostileSpoofsUnderLoss: at 2 % loss each way, a blind attacker
// announces the client's close or restart to the listener from the
// client's address until the listener has challenged it 100 times. Each
// challenge probes the live client four times (engine.ChallengeProbes),
// so a lost probe or answer does not let a spoof through: every
// challenge is refused, and the stream still carries data both ways.
// With one probe per challenge, about 4 % of challenges would pass.
func TestHostileSpoofsUnderLoss(t *testing.T) {
	disconnect := porous.Frame{Type: porous.FrameDisconnect}
	cases := []struct {
		name  string
		p     Protocol
		spoof []byte
	}{
		{"porous-disconnect", POROUS, disconnect.AppendTo(nil)},
		{"airhook-session", Airhook, (&airhook.Packet{Session: 0x5900f, Seq: 1}).AppendTo(nil)},
		{"lludp-closecircuit", LLUDP, lludp.AppendPacket(nil, &lludp.Packet{Seq: 2, Message: lludp.CloseCircuit})},
	}
	const challenges = 100
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, s, attacker, target := spoofedPairImpaired(t, tc.p, true, &impair.Config{Loss: 0.02})
			deadline := time.Now().Add(hangGuard)
			for {
				n, refused, _ := engineStats(s)
				if n >= challenges && refused == n {
					break
				}
				require.True(t, time.Now().Before(deadline), "%d challenges, %d refused", n, refused)
				select {
				case <-s.Done():
					t.Fatalf("a spoof was taken after %d challenges, %d refused", n, refused)
				default:
				}
				if n < challenges {
					_, _ = attacker.WriteTo(seal(bytes.Clone(tc.spoof)), target)
				}
				time.Sleep(2 * time.Millisecond)
			}
			n, refused, restarts := engineStats(s)
			require.Equal(t, n, refused, "every challenge refused")
			require.Zero(t, restarts)
			echoBothWays(t, c, s, 64<<10)
		})
	}
}

// echoBothWays writes n bytes each way between a and b at once and checks
// that each end reads exactly what the other wrote.
func echoBothWays(t *testing.T, a, b *Conn, n int) {
	t.Helper()
	require.NoError(t, a.SetDeadline(time.Now().Add(hangGuard)))
	require.NoError(t, b.SetDeadline(time.Now().Add(hangGuard)))
	data := randomBytes(n, 3)
	errs := make(chan error, 2)
	for _, w := range []*Conn{a, b} {
		go func() { _, err := w.Write(data); errs <- err }()
	}
	for _, r := range []*Conn{a, b} {
		got := make([]byte, n)
		_, err := io.ReadFull(r, got)
		require.NoError(t, err)
		require.Equal(t, data, got)
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
}

// TestHostileLLUDPInjection: a blind attacker sends the listener, from
// the client's address and in the middle of a transfer, 2,000 LLUDP
// datagrams carrying stream DATA frames at guessed sequence numbers and
// stream offsets (small ones and random 64-bit ones). Protection: the
// random 64-bit stream offsets, and streams' delivery of LLUDP duplicates
// (lludp Config.DeliverDuplicates), so that a forged sequence number
// cannot shadow the genuine datagram. Nothing injected is delivered (the
// transfer's bytes are exact) and the stream does not stall.
func TestHostileLLUDPInjection(t *testing.T) {
	const injected = 2000
	c, s, attacker, target := spoofedPair(t, LLUDP, true)
	rng := rand.New(rand.NewPCG(11, 12))
	evil := bytes.Repeat([]byte("EVIL"), 64)
	data := randomBytes(1<<20, 9)
	half := len(data) / 2
	require.NoError(t, c.SetDeadline(time.Now().Add(hangGuard)))
	require.NoError(t, s.SetDeadline(time.Now().Add(hangGuard)))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data[:half])
		werr <- err
	}()
	got := make([]byte, len(data))
	_, err := io.ReadFull(s, got[:half])
	require.NoError(t, err)
	require.NoError(t, <-werr)
	writeThenCloseWrite(c, data[half:], werr)
	for i := range injected {
		off := rng.Uint64()
		if i%2 == 0 {
			off = uint64(rng.IntN(1 << 21)) // near a start of 0
		}
		frame := binary.AppendUvarint([]byte{0x02}, off)
		frame = append(frame, evil...)
		p := lludp.Packet{Flags: lludp.FlagReliable, Seq: rng.Uint32N(lludp.SeqWrap), Message: lludp.StreamMessage, Body: frame}
		_, err := attacker.WriteTo(seal(lludp.AppendPacket(nil, &p)), target)
		require.NoError(t, err)
		if i%50 == 49 {
			time.Sleep(time.Millisecond) // within the socket buffer
		}
	}
	rest, err := io.ReadAll(s)
	require.NoError(t, err)
	require.NoError(t, <-werr)
	got = append(got[:half], rest...)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "got %d of %d bytes", len(got), len(data))
	s.a.mu.Lock()
	ignored := s.st.Ignored()
	s.a.mu.Unlock()
	require.Positive(t, ignored, "injected frames reached the stream and were dropped")
}

// mutateConn sends, after a fraction of its datagrams, a copy either cut
// short or with one bit flipped, as a path that corrupts datagrams past
// the UDP checksum would.
type mutateConn struct {
	net.PacketConn
	mu      sync.Mutex
	rng     *rand.Rand
	rate    float64
	mutated int
}

func (c *mutateConn) WriteTo(p []byte, to net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(p, to)
	c.mu.Lock()
	var bad []byte
	if err == nil && len(p) > 1 && c.rng.Float64() < c.rate {
		bad = bytes.Clone(p)
		if c.rng.IntN(2) == 0 {
			bad = bad[:c.rng.IntN(len(p))]
		} else {
			bad[c.rng.IntN(len(p))] ^= 1 << c.rng.IntN(8)
		}
		c.mutated++
	}
	c.mu.Unlock()
	if bad != nil {
		_, _ = c.PacketConn.WriteTo(bad, to)
	}
	return n, err
}

// TestHostileMutation: 20 % of the datagrams of each end are followed by a
// truncated or bit-flipped copy. Protection: each engine's checks of what
// it decodes, and the stream's drop of implausible frames. The echo
// completes intact, or fails with an error; it never stalls silently (the
// hang guard would fail it).
func TestHostileMutation(t *testing.T) {
	for _, p := range streamProtocols {
		t.Run(p.String(), func(t *testing.T) {
			cfg := &Config{Protocol: p}
			spc := &mutateConn{PacketConn: udpSocket(t, nil, 0), rng: rand.New(rand.NewPCG(1, uint64(p))), rate: 0.2}
			cpc := &mutateConn{PacketConn: udpSocket(t, nil, 0), rng: rand.New(rand.NewPCG(2, uint64(p))), rate: 0.2}
			ln := Server(spc, cfg)
			defer ln.Close()
			errc := echoServer(t, ln)
			c := Client(cpc, ln.Addr(), cfg)
			defer c.Close()
			defer func() {
				if t.Failed() {
					t.Logf("client %+v stream ignored %d", c.Stats(), c.st.Ignored())
				}
			}()
			echo(t, c, randomBytes(1<<20, 8))
			require.NoError(t, <-errc)
			require.Positive(t, c.Stats().PacketsRejected, "corrupted copies were dropped")
			spc.mu.Lock()
			cpc.mu.Lock()
			smut, cmut := spc.mutated, cpc.mutated
			cpc.mu.Unlock()
			spc.mu.Unlock()
			t.Logf("%v: %d and %d mutated copies", p, smut, cmut)
			require.Positive(t, smut)
			require.Positive(t, cmut)
		})
	}
}

// TestHostileIdleCost: 1,000 idle streams, and the heap each costs the
// listener's process once idle (receive and send buffers, the congestion
// controllers' models, the handshake timers and the deadlines freed); the
// clients run in a child process. The figure is 1.4–3.9 KB on a quiet
// run, but other tests' conns that end while it is measured move the
// process's heap by up to about 4 KB a stream (5.9 KB was seen once for
// Airhook, 2.1 KB typical), so the bound is 8 KiB: it catches buffers or
// models kept by idle streams (40–56 KiB each before trimming), while the
// 4 KiB target is checked at 10,000 streams, in a process of their own,
// by bench/cmd/hostile. Wirefox's bound is that target: its streams
// cost 3.3–3.6 KB here, 1,536 bytes of it the engine's Session.
func TestHostileIdleCost(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures are measured without the race detector: go test -run 'Allocs|IdleCost' .")
	}
	const streams = 1000
	for _, p := range streamProtocols {
		t.Run(p.String(), func(t *testing.T) {
			perStream := idleHeap(t, p, streams)
			t.Logf("%v: %d bytes of heap per idle stream", p, perStream)
			bound := 8 << 10
			if p == Wirefox {
				bound = 4 << 10
			}
			require.Less(t, perStream, bound)
		})
	}
}

// TestHostileIdleClients is the client process of TestHostileIdleCost,
// which runs it with RUDP_IDLE_ADDR set: it opens RUDP_IDLE_STREAMS
// streams to that address, writes "hi" on each, prints "ready" and holds
// them until its standard input ends.
func TestHostileIdleClients(t *testing.T) {
	addr := os.Getenv("RUDP_IDLE_ADDR")
	if addr == "" {
		t.Skip("the client process of TestHostileIdleCost")
	}
	n, err := strconv.Atoi(os.Getenv("RUDP_IDLE_STREAMS"))
	require.NoError(t, err)
	p, err := ParseProtocol(os.Getenv("RUDP_IDLE_PROTOCOL"))
	require.NoError(t, err)
	raddr, err := net.ResolveUDPAddr("udp", addr)
	require.NoError(t, err)
	cfg := &Config{Protocol: p, HandshakeTimeout: hangGuard}
	conns := make([]*Conn, n)
	for i := range conns {
		// Without batching, a client socket keeps one small read buffer.
		c := Client(plainConn{udpSocket(t, nil, 0)}, raddr, cfg)
		conns[i] = c
		_, err := c.Write([]byte("hi"))
		require.NoError(t, err)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
	for _, c := range conns {
		select {
		case <-c.Done():
		case <-time.After(hangGuard):
			t.Fatal("a stream did not end")
		}
	}
}

// plainConn hides a *net.UDPConn's type, so that an endpoint uses plain
// ReadFrom and WriteTo.
type plainConn struct{ net.PacketConn }

// idleHeap accepts n streams of protocol p, each from its own client
// socket in a child process, reads "hi" on each, waits until they are
// idle and returns the listener process's heap growth per stream.
func idleHeap(t testing.TB, p Protocol, n int) int {
	t.Helper()
	cfg := &Config{Protocol: p, Backlog: n, HandshakeTimeout: hangGuard}
	ln := Server(udpSocket(t, nil, 0), cfg)
	defer ln.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileIdleClients$")
	cmd.Env = append(os.Environ(), "RUDP_IDLE_ADDR="+ln.Addr().String(),
		"RUDP_IDLE_STREAMS="+strconv.Itoa(n), "RUDP_IDLE_PROTOCOL="+p.String())
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	defer func() {
		stdin.Close()
		require.NoError(t, cmd.Wait(), "the client process failed")
	}()

	conns := make([]*Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	buf := make([]byte, 2)
	for range n {
		c, err := ln.Accept()
		require.NoError(t, err)
		conns = append(conns, c.(*Conn))
		require.NoError(t, c.SetDeadline(time.Now().Add(hangGuard)))
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, "hi", string(buf))
		require.NoError(t, c.SetDeadline(time.Time{})) // an idle stream holds no deadline
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("client process said %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		require.NoError(t, err)
	case <-time.After(hangGuard):
		t.Fatal("client process not ready")
	}
	// Idle: a settle after trimAfter without traffic frees the buffers;
	// settle each once more past it rather than wait for a keepalive.
	time.Sleep(trimAfter + 100*time.Millisecond)
	for _, c := range conns {
		c.a.mu.Lock()
		c.a.settleLocked(time.Now())
		c.a.mu.Unlock()
	}
	idle := heapAlloc()
	if profile := os.Getenv("RUDP_IDLE_HEAPPROFILE"); profile != "" {
		f, err := os.Create(profile)
		require.NoError(t, err)
		require.NoError(t, pprof.Lookup("heap").WriteTo(f, 0))
		f.Close()
	}

	// The base: the same process once every stream has ended.
	for _, c := range conns {
		c.Close()
	}
	require.NoError(t, stdin.Close())
	for _, c := range conns {
		select {
		case <-c.Done():
		case <-time.After(hangGuard):
			t.Fatal("an idle stream did not end")
		}
	}
	conns = nil
	return int((int64(idle) - int64(heapAlloc())) / int64(n))
}

// TestIdleTrimThenTransfer: a stream trimmed while idle (stream and engine
// buffers freed, see engine.Trimmer) moves 1 MiB each way intact
// afterwards.
func TestIdleTrimThenTransfer(t *testing.T) {
	for _, p := range streamProtocols {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			c, s, _ := streamPair(t, &Config{Protocol: p}, links[0])
			errc := make(chan error, 1)
			go func() {
				_, err := io.Copy(s, s) // echo
				if err == nil {
					err = s.CloseWrite()
				}
				errc <- err
			}()
			echoSome := func(n int, seed uint64) {
				data := randomBytes(n, seed)
				_, err := c.Write(data)
				require.NoError(t, err)
				got := make([]byte, n)
				require.NoError(t, c.SetReadDeadline(time.Now().Add(hangGuard)))
				_, err = io.ReadFull(c, got)
				require.NoError(t, err)
				require.Equal(t, data, got)
			}
			echoSome(256<<10, 1)
			time.Sleep(trimAfter + 100*time.Millisecond)
			for _, x := range []*Conn{c, s} {
				x.a.mu.Lock()
				x.a.settleLocked(time.Now()) // trims
				x.a.mu.Unlock()
			}
			echoSome(1<<20, 2)
			require.NoError(t, c.CloseWrite())
			require.NoError(t, <-errc)
		})
	}
}

// TestListenerCloseDropsHalfOpen: closing a listener ends at once the new
// peers still in their handshake (a blind flood's, say), which could
// never be accepted, instead of keeping them, their timers and the
// socket until their handshake times out.
func TestListenerCloseDropsHalfOpen(t *testing.T) {
	for _, p := range streamProtocols {
		open := openingOf(t, p)
		ln := Server(udpSocket(t, nil, 0), &Config{Protocol: p})
		blindFlood(t, &ln.listener, newAttackers(t, 3), open)
		ln.listener.q.mu.Lock()
		halfOpen := slices.Clone(ln.listener.q.pending)
		ln.listener.q.mu.Unlock()
		require.Len(t, halfOpen, 3)
		require.NoError(t, ln.Close())
		for _, c := range halfOpen {
			select {
			case <-c.Done():
			default:
				t.Fatalf("%v: a half-open peer outlived its listener", p)
			}
		}
		select {
		case <-ln.listener.ep.done: // the socket was closed: the reader stopped
		case <-time.After(hangGuard):
			t.Fatalf("%v: the listener's socket outlived it", p)
		}
	}
}
