package airhook

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// datagram is a packet on its way across a simulated link.
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
}

func (l *link) send(now time.Time, b []byte) {
	if l.cut || l.rng.Float64() < l.loss {
		return
	}
	l.queue = append(l.queue, datagram{at: now.Add(l.delay), data: append([]byte(nil), b...)})
}

// pair is two sessions joined by two links, driven on a virtual clock.
type pair struct {
	t      testing.TB
	now    time.Time
	a, b   *Session
	ab, ba link
	buf    []byte
}

func newPair(t testing.TB, cfgA, cfgB Config, delay time.Duration, loss float64, seed uint64) *pair {
	t.Helper()
	now := time.Unix(1_000_000, 0)
	a, err := New(now, cfgA)
	require.NoError(t, err)
	b, err := New(now, cfgB)
	require.NoError(t, err)
	return &pair{
		t:   t,
		now: now,
		a:   a,
		b:   b,
		ab:  link{delay: delay, loss: loss, rng: rand.New(rand.NewPCG(seed, 1))},
		ba:  link{delay: delay, loss: loss, rng: rand.New(rand.NewPCG(seed, 2))},
		buf: make([]byte, DefaultMaxDatagram),
	}
}

// pollAll sends everything s has due now onto l.
func (p *pair) pollAll(s *Session, l *link) {
	for {
		n := s.Poll(p.now, p.buf)
		if n == 0 {
			return
		}
		l.send(p.now, p.buf[:n])
	}
}

// arrive hands the datagrams due by now to s.
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

// step advances the clock to the next event (never backwards) and
// processes it. It reports false when nothing is scheduled.
func (p *pair) step() bool {
	t := p.next()
	if t.IsZero() {
		return false
	}
	p.stepTo(t)
	return true
}

// stepTo moves the clock to t (never backwards) and processes what is
// due.
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
		require.Less(p.t, i, limit, "no progress at %v", p.now)
		require.True(p.t, p.step(), "nothing scheduled at %v", p.now)
	}
}

// advance runs the pair until the clock reaches t.
func (p *pair) advance(t time.Time) {
	p.t.Helper()
	for i := 0; ; i++ {
		require.Less(p.t, i, 100_000, "no progress at %v", p.now)
		n := p.next()
		if n.IsZero() || n.After(t) {
			p.stepTo(t)
			return
		}
		p.stepTo(n)
	}
}
