package rudp

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// idleEnd is one end of an idleRun: a stream engine and what it did.
type idleEnd struct {
	eng    engine.Engine
	inbox  []idleDatagram
	sent   int // datagrams sent
	wakes  int // timer wakeups: Polls at the engine's Deadline, no datagram in
	silent int // timer wakeups that sent nothing
}

type idleDatagram struct {
	at time.Time
	p  []byte
}

// idleRun drives two stream engines of cfg (a dialer's and a listener's,
// as the root package builds them) back to back on a virtual clock, as
// associations do: a datagram in is handled and the engine polled until
// it has nothing due; a timer fires at the engine's Deadline. The link
// delays each datagram by oneWay. It opens the association, sends one
// burst of idleBurst messages each way (so that what a transfer grows has
// grown), waits until both ends are quiet (idleAfter), and then counts
// what each end does over idle.
func idleRun(t *testing.T, cfg *Config, oneWay, idle time.Duration) [2]*idleEnd {
	t.Helper()
	cfg, err := cfg.resolved()
	require.NoError(t, err)
	now := time.Unix(1_000_000, 0)
	ca := &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1}
	sa := &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 2}
	c, err := cfg.newEngine(now, sa, nil, true, false)
	require.NoError(t, err)
	s, err := cfg.newEngine(now, ca, nil, true, true)
	require.NoError(t, err)
	ends := [2]*idleEnd{{eng: c}, {eng: s}}
	buf := make([]byte, maxSend)
	poll := func(i int, now time.Time) int {
		n := 0
		for range 1000 {
			k := ends[i].eng.Poll(now, buf)
			if k == 0 {
				return n
			}
			ends[1-i].inbox = append(ends[1-i].inbox, idleDatagram{now.Add(oneWay), append([]byte(nil), buf[:k]...)})
			ends[i].sent++
			n++
		}
		t.Fatalf("end %d: Poll never returns 0", i)
		return n
	}
	// step moves to the next event before until, and reports whether
	// there was one.
	step := func(until time.Time) bool {
		next, who, timer := until, -1, false
		for i, e := range ends {
			if len(e.inbox) > 0 && e.inbox[0].at.Before(next) {
				next, who, timer = e.inbox[0].at, i, false
			}
			if dl := e.eng.Deadline(); !dl.IsZero() && dl.Before(next) {
				next, who, timer = dl, i, true
			}
		}
		if who < 0 {
			return false
		}
		now = next
		e := ends[who]
		if timer {
			e.wakes++
			if poll(who, now) == 0 {
				e.silent++
			}
			return true
		}
		d := e.inbox[0]
		e.inbox = e.inbox[1:]
		_ = e.eng.HandleDatagram(now, d.p)
		for {
			if _, ok := e.eng.Recv(); !ok {
				break
			}
		}
		poll(who, now)
		return true
	}
	run := func(d time.Duration, maxSteps int) {
		until := now.Add(d)
		for i := 0; step(until); i++ {
			require.Less(t, i, maxSteps, "too many events")
		}
		now = until
	}
	poll(0, now)
	run(cfg.HandshakeTimeout, 10_000)
	for _, e := range ends {
		require.Equal(t, engine.StateEstablished, e.eng.State())
	}
	msg := bytes.Repeat([]byte("x"), 250)
	for i, e := range ends {
		for range idleBurst {
			require.NoError(t, e.eng.Send(msg, cfg.proto.Stream.Send))
		}
		poll(i, now)
	}
	run(idleAfter, 10_000)
	for _, e := range ends {
		e.sent, e.wakes, e.silent = 0, 0, 0
	}
	run(idle, 100_000)
	for _, e := range ends {
		require.Equal(t, engine.StateEstablished, e.eng.State())
	}
	return ends
}

// idleBurst is how many 250-byte messages each end of an idleRun sends
// before it idles: several datagrams, more than an idle end's lists keep.
const idleBurst = 32

// idleAfter is how long after its last message an association is taken as
// idle: every acknowledgement and timer of the traffic is over.
const idleAfter = 10 * time.Second

// TestIdleStreamWakesOnlyForKeepAlive: over 20 keepalive intervals of an
// idle stream, the dialer's timer fires only to send a keepalive probe (no
// wakeup sends nothing), the accepting end's never fires (it answers),
// and the two ends exchange one probe and its answer per interval, not
// one each way.
func TestIdleStreamWakesOnlyForKeepAlive(t *testing.T) {
	const intervals = 20
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			cfg := &Config{Protocol: p}
			r, err := cfg.resolved()
			require.NoError(t, err)
			ends := idleRun(t, cfg, 10*time.Millisecond, intervals*r.KeepAlive)
			total := 0
			for i, e := range ends {
				t.Logf("%v end %d: %d datagrams sent, %d timer wakeups, %d silent", p, i, e.sent, e.wakes, e.silent)
				require.Zero(t, e.silent, "end %d woke with nothing to send", i)
				total += e.sent
			}
			require.Zero(t, ends[1].wakes, "the accepting end's timer fired")
			require.LessOrEqual(t, total, 2*intervals+2, "datagrams over %d keepalive intervals", intervals)
			require.GreaterOrEqual(t, total, 2*intervals-2, "datagrams over %d keepalive intervals", intervals)
		})
	}
}

// TestIdleSettleAllocs: once an idle stream has trimmed its
// buffers, the settle a keepalive brings (a probe received or sent)
// allocates nothing: the stream takes no frame buffer from its engine to
// learn that it has nothing to send. Virtual time (see vpath): the idle
// second costs nothing, and nothing else runs while allocations are
// counted.
func TestIdleSettleAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, s, _ := newVPath(t, 0).streams(t, vcfg(Config{Protocol: p}))
				_, err := c.Write([]byte("hi"))
				require.NoError(t, err)
				buf := make([]byte, 2)
				_, err = io.ReadFull(s, buf)
				require.NoError(t, err)
				time.Sleep(trimAfter + 100*time.Millisecond)
				for _, x := range []*Conn{c, s} {
					settle := func() {
						x.a.mu.Lock()
						x.a.settleLocked(time.Now())
						x.a.mu.Unlock()
					}
					settle() // trims
					require.Zero(t, testing.AllocsPerRun(20, settle), "%v: allocations per settle", p)
				}
			})
		})
	}
}

// TestIdleKeepAliveAllocs: once an idle Wirefox stream's engines have
// trimmed what their burst grew, a keepalive exchange (the dialer's probe
// at its Deadline, handled and answered by the accepting end, the answer
// handled by the dialer, each end trimming after, as a settle does)
// allocates nothing on either end, the first one after the trim
// included: each probe of an idle listener's streams costs it no garbage
// (the duplicate histories' bitmaps, 8 KiB each, stay freed; the ACK
// lists keep the room one exchange uses).
func TestIdleKeepAliveAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	for _, p := range []Protocol{Wirefox} {
		t.Run(p.String(), func(t *testing.T) {
			cfg := &Config{Protocol: p}
			ends := idleRun(t, cfg, 10*time.Millisecond, time.Minute)
			c, s := ends[0].eng, ends[1].eng
			cb, sb := make([]byte, maxSend), make([]byte, maxSend)
			trim := func() {
				for _, e := range []engine.Engine{c, s} {
					e.(engine.Trimmer).Trim()
				}
			}
			// exchange runs the dialer's next keepalive: its probes in
			// full, then the answers.
			exchange := func() {
				now := c.Deadline()
				for n := c.Poll(now, cb); n > 0; n = c.Poll(now, cb) {
					_ = s.HandleDatagram(now, cb[:n])
				}
				for n := s.Poll(now, sb); n > 0; n = s.Poll(now, sb) {
					_ = c.HandleDatagram(now, sb[:n])
				}
				trim()
			}
			trim()
			sent := c.Stats().PacketsSent
			require.Zero(t, mallocs(exchange), "%v: allocations by the first keepalive exchange after a trim", p)
			require.Zero(t, testing.AllocsPerRun(20, exchange), "%v: allocations per keepalive exchange", p)
			require.Equal(t, sent+22, c.Stats().PacketsSent, "%v: one probe per exchange", p)
			require.Equal(t, engine.StateEstablished, c.State())
			require.Equal(t, engine.StateEstablished, s.State())
		})
	}
}

// mallocs returns how many heap allocations one call of f makes. Unlike
// testing.AllocsPerRun it counts the first call, not a warmed-up one.
func mallocs(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs
}
