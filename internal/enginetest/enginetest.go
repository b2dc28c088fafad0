// Package enginetest drives two engine.Engine sessions against each other
// over simulated one-way links on a virtual clock. It serves the engine
// packages' own tests, which keep white-box access to their sessions
// through the type parameter of Pair.
package enginetest

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// Datagram is a datagram on its way across a Link.
type Datagram struct {
	At   time.Time // when it arrives
	Data []byte
}

// Link carries datagrams one way with a fixed delay. A datagram is lost
// when Cut is set, when Drop reports true for it, or with probability Loss;
// Edit, when set, may rewrite a datagram that is not lost, or lose it by
// returning nil.
type Link struct {
	Delay time.Duration
	Loss  float64
	Rng   *rand.Rand
	Drop  func(b []byte) bool
	Edit  func(b []byte) []byte
	Cut   bool
	Queue []Datagram // in arrival order
	Log   [][]byte   // every datagram sent, lost ones included
}

// NewLink returns a link with the given delay and loss whose losses are
// drawn from a generator seeded with seed and stream.
func NewLink(delay time.Duration, loss float64, seed, stream uint64) Link {
	return Link{Delay: delay, Loss: loss, Rng: rand.New(rand.NewPCG(seed, stream))}
}

// Send logs a copy of b and, unless it is lost, queues it to arrive at
// now plus the link's delay.
func (l *Link) Send(now time.Time, b []byte) {
	c := bytes.Clone(b)
	l.Log = append(l.Log, c)
	if l.Cut || l.Drop != nil && l.Drop(b) || l.Loss > 0 && l.Rng.Float64() < l.Loss {
		return
	}
	if l.Edit != nil {
		if c = l.Edit(bytes.Clone(c)); c == nil {
			return
		}
	}
	l.Queue = append(l.Queue, Datagram{At: now.Add(l.Delay), Data: c})
}

// Pair is two sessions A and B joined by the links AB (from A to B) and BA
// (from B to A), driven on a virtual clock.
type Pair[S engine.Engine] struct {
	T    testing.TB
	Now  time.Time
	A, B S
	// AB and BA start with the same delay and loss and separately seeded
	// loss generators.
	AB, BA Link
	// Buf is the buffer sessions are polled into.
	Buf []byte
	// Errs collects the errors HandleDatagram returned.
	Errs []error
	// Epoch, when set, makes failure messages give times relative to it.
	Epoch time.Time
	// PollLimit bounds the datagrams one PollAll takes from a session
	// before failing the test; zero means no bound.
	PollLimit int
	// AdvanceLimit bounds the steps of one Advance.
	AdvanceLimit int
}

// NewPair joins a and b at now with links of the given delay and loss,
// seeded with seed, and a poll buffer of bufSize bytes. Advance takes at
// most 1,000,000 steps and PollAll is unbounded until the fields say
// otherwise.
func NewPair[S engine.Engine](t testing.TB, now time.Time, a, b S, delay time.Duration, loss float64, seed uint64, bufSize int) *Pair[S] {
	return &Pair[S]{
		T:            t,
		Now:          now,
		A:            a,
		B:            b,
		AB:           NewLink(delay, loss, seed, 1),
		BA:           NewLink(delay, loss, seed, 2),
		Buf:          make([]byte, bufSize),
		AdvanceLimit: 1_000_000,
	}
}

// at is the current time as failure messages show it.
func (p *Pair[S]) at() any {
	if p.Epoch.IsZero() {
		return p.Now
	}
	return p.Now.Sub(p.Epoch)
}

// PollAll sends everything s has due now onto l.
func (p *Pair[S]) PollAll(s S, l *Link) {
	for i := 0; p.PollLimit == 0 || i < p.PollLimit; i++ {
		n := s.Poll(p.Now, p.Buf)
		if n == 0 {
			return
		}
		l.Send(p.Now, p.Buf[:n])
	}
	p.T.Fatal("Poll keeps returning datagrams")
}

// Arrive hands the datagrams of l due by now to s, collecting errors in
// Errs.
func (p *Pair[S]) Arrive(s S, l *Link) {
	i := 0
	for ; i < len(l.Queue) && !l.Queue[i].At.After(p.Now); i++ {
		if err := s.HandleDatagram(p.Now, l.Queue[i].Data); err != nil {
			p.Errs = append(p.Errs, err)
		}
	}
	l.Queue = l.Queue[i:]
}

// Next returns the next time anything happens, zero if nothing will.
func (p *Pair[S]) Next() time.Time {
	var t time.Time
	for _, c := range []time.Time{p.A.Deadline(), p.B.Deadline()} {
		if !c.IsZero() && (t.IsZero() || c.Before(t)) {
			t = c
		}
	}
	for _, l := range []*Link{&p.AB, &p.BA} {
		if len(l.Queue) > 0 && (t.IsZero() || l.Queue[0].At.Before(t)) {
			t = l.Queue[0].At
		}
	}
	return t
}

// Step advances the clock to the next event (never backwards) and
// processes it. It reports false when nothing is scheduled.
func (p *Pair[S]) Step() bool {
	t := p.Next()
	if t.IsZero() {
		return false
	}
	p.StepTo(t)
	return true
}

// StepTo moves the clock to t (never backwards), delivers what has
// arrived and sends what is due.
func (p *Pair[S]) StepTo(t time.Time) {
	if t.After(p.Now) {
		p.Now = t
	}
	p.Arrive(p.A, &p.BA)
	p.Arrive(p.B, &p.AB)
	p.PollAll(p.A, &p.AB)
	p.PollAll(p.B, &p.BA)
}

// RunUntil steps until done reports true, failing after limit steps or
// when nothing is scheduled.
func (p *Pair[S]) RunUntil(limit int, done func() bool) {
	p.T.Helper()
	for i := 0; !done(); i++ {
		require.Less(p.T, i, limit, "no progress at %v", p.at())
		require.True(p.T, p.Step(), "nothing scheduled at %v", p.at())
	}
}

// Advance runs the pair until the clock reaches t, failing after
// AdvanceLimit steps.
func (p *Pair[S]) Advance(t time.Time) {
	p.T.Helper()
	for i := 0; ; i++ {
		require.Less(p.T, i, p.AdvanceLimit, "no progress at %v", p.at())
		n := p.Next()
		if n.IsZero() || n.After(t) {
			p.StepTo(t)
			return
		}
		p.StepTo(n)
	}
}
