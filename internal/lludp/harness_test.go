package lludp

import (
	"encoding/hex"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// t0 is the start of every test's virtual clock.
var t0 = time.Unix(1_000_000, 0)

// testCircuit is the circuit of the vectors' UseCircuitCode (P10).
var testCircuit = Circuit{
	Code:      123456,
	SessionID: [16]byte{0x55, 0x0e, 0x84, 0x00, 0xe2, 0x9b, 0x41, 0xd4, 0xa7, 0x16, 0x44, 0x66, 0x55, 0x44, 0x00, 0x00},
	AgentID:   [16]byte{0x1c, 0x8a, 0x77, 0x67, 0xe3, 0x7b, 0x42, 0x2e, 0xaf, 0xb3, 0x85, 0x09, 0x31, 0x97, 0xca, 0xd1},
}

// helloHex is P10: the UseCircuitCode of testCircuit, reliable, seq 1.
const helloHex = "400000000100ffff000340e20100550e8400e29b41d4a7164466554400001c8a7767e37b422eafb385093197cad1"

func newSession(t testing.TB, now time.Time, cfg Config) *Session {
	t.Helper()
	s, err := New(now, cfg)
	require.NoError(t, err)
	return s
}

// openServer returns a server that accepted helloHex at t0 and has
// acknowledged it.
func openServer(t testing.TB, cfgs ...Config) *Session {
	t.Helper()
	var cfg Config
	if len(cfgs) > 0 {
		cfg = cfgs[0]
	}
	cfg.Accept = true
	s := newSession(t, t0, cfg)
	require.NoError(t, s.HandleDatagram(t0, unhex(t, helloHex)))
	require.Equal(t, engine.StateEstablished, s.State())
	return s
}

// poll returns the hex of the next datagram s writes at now ("" for none).
func poll(t testing.TB, s *Session, now time.Time) string {
	t.Helper()
	buf := make([]byte, DefaultMaxDatagram)
	n := s.Poll(now, buf)
	return hex.EncodeToString(buf[:n])
}

// drain returns the bodies of the messages s delivered, as strings.
func drain(s *Session) []string {
	var out []string
	for {
		m, ok := s.Recv()
		if !ok {
			return out
		}
		out = append(out, string(m.Data))
	}
}

// encode returns the wire form of p.
func encode(p Packet) []byte { return AppendPacket(nil, &p) }

// datagram is a datagram on its way across a simulated link.
type datagram struct {
	at   time.Time
	data []byte
}

// link carries datagrams one way with a fixed delay, dropping each with
// probability loss.
type link struct {
	delay time.Duration
	loss  float64
	rng   *rand.Rand
	queue []datagram
	cut   bool // drop everything
	log   [][]byte
}

func (l *link) send(now time.Time, b []byte) {
	c := append([]byte(nil), b...)
	l.log = append(l.log, c)
	if l.cut || l.rng.Float64() < l.loss {
		return
	}
	l.queue = append(l.queue, datagram{at: now.Add(l.delay), data: c})
}

// pair is a client A and a server B joined by two links, driven on a
// virtual clock.
type pair struct {
	t      testing.TB
	now    time.Time
	a, b   *Session
	ab, ba link
	buf    []byte
}

func newPair(t testing.TB, cfgA, cfgB Config, delay time.Duration, loss float64, seed uint64) *pair {
	t.Helper()
	cfgA.Client, cfgA.Circuit = true, testCircuit
	cfgB.Accept = true
	return &pair{
		t:   t,
		now: t0,
		a:   newSession(t, t0, cfgA),
		b:   newSession(t, t0, cfgB),
		ab:  link{delay: delay, loss: loss, rng: rand.New(rand.NewPCG(seed, 1))},
		ba:  link{delay: delay, loss: loss, rng: rand.New(rand.NewPCG(seed, 2))},
		buf: make([]byte, DefaultMaxDatagram),
	}
}

func (p *pair) pollAll(s *Session, l *link) {
	for range 100_000 {
		n := s.Poll(p.now, p.buf)
		if n == 0 {
			return
		}
		l.send(p.now, p.buf[:n])
	}
	p.t.Fatal("Poll keeps returning datagrams")
}

func (p *pair) arrive(s *Session, l *link) {
	i := 0
	for ; i < len(l.queue) && !l.queue[i].at.After(p.now); i++ {
		_ = s.HandleDatagram(p.now, l.queue[i].data)
	}
	l.queue = l.queue[i:]
}

// next returns the next time anything happens, zero if nothing will.
func (p *pair) next() time.Time {
	var t time.Time
	for _, c := range []time.Time{p.a.Deadline(), p.b.Deadline()} {
		if !c.IsZero() && (t.IsZero() || c.Before(t)) {
			t = c
		}
	}
	for _, l := range []*link{&p.ab, &p.ba} {
		if len(l.queue) > 0 && (t.IsZero() || l.queue[0].at.Before(t)) {
			t = l.queue[0].at
		}
	}
	return t
}

// step advances the clock to the next event and processes it; false when
// nothing is scheduled.
func (p *pair) step() bool {
	t := p.next()
	if t.IsZero() {
		return false
	}
	p.stepTo(t)
	return true
}

func (p *pair) stepTo(t time.Time) {
	if t.After(p.now) {
		p.now = t
	}
	p.arrive(p.a, &p.ba)
	p.arrive(p.b, &p.ab)
	p.pollAll(p.a, &p.ab)
	p.pollAll(p.b, &p.ba)
}

// runUntil steps until done reports true, failing after limit steps.
func (p *pair) runUntil(limit int, done func() bool) {
	p.t.Helper()
	for i := 0; !done(); i++ {
		require.Less(p.t, i, limit, "no progress at %v", p.now.Sub(t0))
		require.True(p.t, p.step(), "nothing scheduled at %v", p.now.Sub(t0))
	}
}

// advance runs the pair until the clock reaches t.
func (p *pair) advance(t time.Time) {
	p.t.Helper()
	for i := 0; ; i++ {
		require.Less(p.t, i, 1_000_000, "no progress at %v", p.now.Sub(t0))
		n := p.next()
		if n.IsZero() || n.After(t) {
			p.stepTo(t)
			return
		}
		p.stepTo(n)
	}
}
