package porous

import (
	"encoding/hex"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// epoch is the start of every test clock.
var epoch = time.Unix(1_000_000, 0)

const (
	nonceA = 0x0a0a0a0a
	nonceB = 0x0b0b0b0b
)

func newSession(t testing.TB, now time.Time, cfg Config) *Session {
	t.Helper()
	s, err := New(now, cfg)
	require.NoError(t, err)
	return s
}

// pollHex polls s at now until nothing is due and returns the frames in
// hex.
func pollHex(t testing.TB, s *Session, now time.Time) []string {
	t.Helper()
	var out []string
	buf := make([]byte, MaxFrameSize)
	for range 100_000 {
		n := s.Poll(now, buf)
		if n == 0 {
			return out
		}
		out = append(out, hex.EncodeToString(buf[:n]))
	}
	t.Fatal("Poll keeps returning frames")
	return nil
}

// feedHex hands hex frames to s at now, requiring no error.
func feedHex(t testing.TB, s *Session, now time.Time, frames ...string) {
	t.Helper()
	for _, h := range frames {
		b, err := hex.DecodeString(h)
		require.NoError(t, err)
		require.NoError(t, s.HandleDatagram(now, b), h)
	}
}

// recvAll takes every delivered message of s.
func recvAll(s *Session) []engine.Message {
	var out []engine.Message
	for {
		m, ok := s.Recv()
		if !ok {
			return out
		}
		out = append(out, m)
	}
}

// recvStrings takes every delivered message of s as strings.
func recvStrings(s *Session) []string {
	var out []string
	for _, m := range recvAll(s) {
		out = append(out, string(m.Data))
	}
	return out
}

// datagram is a frame on its way across a test link.
type datagram struct {
	at   time.Time
	data []byte
}

// link carries frames one way with a fixed delay; drop, when set, decides
// which frames are lost, and edit may rewrite them.
type link struct {
	delay time.Duration
	loss  float64
	rng   *rand.Rand
	drop  func(b []byte) bool
	edit  func(b []byte) []byte
	queue []datagram
	log   []string // hex of every frame sent, lost ones included
}

func (l *link) send(now time.Time, b []byte) {
	l.log = append(l.log, hex.EncodeToString(b))
	if l.drop != nil && l.drop(b) || l.loss > 0 && l.rng.Float64() < l.loss {
		return
	}
	c := append([]byte(nil), b...)
	if l.edit != nil {
		if c = l.edit(c); c == nil {
			return
		}
	}
	l.queue = append(l.queue, datagram{at: now.Add(l.delay), data: c})
}

// pair is two sessions joined by two links on a virtual clock.
type pair struct {
	t      testing.TB
	now    time.Time
	a, b   *Session
	ab, ba link
	buf    []byte
	errs   []error
}

func newPair(t testing.TB, cfgA, cfgB Config, delay time.Duration, loss float64, seed uint64) *pair {
	t.Helper()
	if cfgA.Nonce == 0 {
		cfgA.Nonce = nonceA
	}
	if cfgB.Nonce == 0 {
		cfgB.Nonce = nonceB
	}
	return &pair{
		t:   t,
		now: epoch,
		a:   newSession(t, epoch, cfgA),
		b:   newSession(t, epoch, cfgB),
		ab:  link{delay: delay, loss: loss, rng: rand.New(rand.NewPCG(seed, 1))},
		ba:  link{delay: delay, loss: loss, rng: rand.New(rand.NewPCG(seed, 2))},
		buf: make([]byte, MaxFrameSize),
	}
}

func (p *pair) pollAll(s *Session, l *link) {
	for range 1 << 20 {
		n := s.Poll(p.now, p.buf)
		if n == 0 {
			return
		}
		l.send(p.now, p.buf[:n])
	}
	p.t.Fatal("Poll keeps returning frames")
}

func (p *pair) arrive(s *Session, l *link) {
	i := 0
	for ; i < len(l.queue) && !l.queue[i].at.After(p.now); i++ {
		if err := s.HandleDatagram(p.now, l.queue[i].data); err != nil {
			p.errs = append(p.errs, err)
		}
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

// stepTo moves the clock to t (never backwards) and processes what is due.
func (p *pair) stepTo(t time.Time) {
	if t.After(p.now) {
		p.now = t
	}
	p.arrive(p.a, &p.ba)
	p.arrive(p.b, &p.ab)
	p.pollAll(p.a, &p.ab)
	p.pollAll(p.b, &p.ba)
}

// step advances to the next event; false when nothing is scheduled.
func (p *pair) step() bool {
	t := p.next()
	if t.IsZero() {
		return false
	}
	p.stepTo(t)
	return true
}

// runUntil steps until done reports true, failing after limit steps.
func (p *pair) runUntil(limit int, done func() bool) {
	p.t.Helper()
	for i := 0; !done(); i++ {
		require.Less(p.t, i, limit, "no progress at %v", p.now.Sub(epoch))
		require.True(p.t, p.step(), "nothing scheduled at %v", p.now.Sub(epoch))
	}
}

// advance runs the pair until the clock reaches t.
func (p *pair) advance(t time.Time) {
	p.t.Helper()
	for i := 0; ; i++ {
		require.Less(p.t, i, 1_000_000, "no progress at %v", p.now.Sub(epoch))
		n := p.next()
		if n.IsZero() || n.After(t) {
			p.stepTo(t)
			return
		}
		p.stepTo(n)
	}
}

// frameTypes summarises hex frames as "Type" strings, Data frames with
// their frame_seq.
func frameTypes(t testing.TB, frames []string) []string {
	var out []string
	for _, h := range frames {
		var f Frame
		require.NoError(t, Decode(unhex(t, h), &f))
		out = append(out, f.Type.String())
	}
	return out
}
