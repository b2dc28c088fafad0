package netsim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Side names one end of a [Sim].
type Side uint8

// The two ends of a Sim.
const (
	A Side = iota
	B
)

// String returns "A" or "B".
func (s Side) String() string {
	if s == A {
		return "A"
	}
	return "B"
}

// Errors returned by [Sim.RunUntil], wrapped with the virtual time and the
// engines' states.
var (
	// ErrIdle: no timer runs and no datagram is in flight, so nothing can
	// ever happen again (a deadlock, or both ends done).
	ErrIdle = errors.New("netsim: no event left")
	// ErrTimeLimit: the condition did not hold within the virtual time
	// limit.
	ErrTimeLimit = errors.New("netsim: virtual time limit passed")
	// ErrStalled: too many steps in a row at one instant, as when two
	// engines answer each other over links without delay.
	ErrStalled = errors.New("netsim: virtual time does not advance")
)

const (
	// staleStep is how far ahead a deadline that is not after now, once the
	// engine has been polled, is taken to be.
	staleStep = time.Microsecond
	// maxPerFlush bounds the Poll and Recv calls on one engine in one step.
	maxPerFlush = 1 << 16
	// datagramBuf is the size of the buffer given to Poll.
	datagramBuf = 1 << 16
)

// maxStill is how many steps in a row RunUntil makes at one instant before
// returning ErrStalled. A variable so that tests can lower it.
var maxStill = 1 << 20

// SideStats are the counters of one side of a Sim.
type SideStats struct {
	Out       LinkStats // the link this side sends on
	Datagrams uint64    // datagrams given to this side's HandleDatagram
	Errors    uint64    // calls of HandleDatagram that returned an error
	Messages  uint64    // messages taken from this side's Recv
}

// Stats are a Sim's counters.
type Stats struct {
	A, B    SideStats
	Steps   uint64        // calls of Step that advanced to an event
	Elapsed time.Duration // virtual time since Epoch
}

type side struct {
	e       engine.Engine
	out     *Link
	deliver func(engine.Message)
	onErr   func(error)
	st      SideStats
}

// Sim connects two engines, A and B, by two links, A→B and B→A, and runs
// them on a virtual clock that starts at [Epoch]. It is not safe for
// concurrent use; tests call the engines' Send between steps.
type Sim struct {
	clock Clock
	sides [2]side
	buf   []byte
	steps uint64
	still int // steps in a row that did not advance the clock
}

// New returns a Sim in which a sends to b over a link configured by ab and
// b to a over one configured by ba. Each link draws from its own random
// stream derived from seed. It panics if a link configuration is invalid.
func New(seed uint64, a, b engine.Engine, ab, ba LinkConfig) *Sim {
	s := &Sim{clock: Clock{now: Epoch()}, buf: make([]byte, datagramBuf)}
	s.sides[A] = side{e: a, out: NewLink(ab, rand.New(rand.NewPCG(seed, 1)))}
	s.sides[B] = side{e: b, out: NewLink(ba, rand.New(rand.NewPCG(seed, 2)))}
	return s
}

// Now is the current virtual time.
func (s *Sim) Now() time.Time { return s.clock.Now() }

// Engine returns the engine at side.
func (s *Sim) Engine(side Side) engine.Engine { return s.sides[side].e }

// Link returns the link side sends on; tests may change its configuration
// mid-run with [Link.SetConfig].
func (s *Sim) Link(from Side) *Link { return s.sides[from].out }

// Replace puts e in place of the engine at side, as when a peer restarts.
// Datagrams in flight on both links are kept: those to side reach e.
func (s *Sim) Replace(side Side, e engine.Engine) { s.sides[side].e = e }

// OnDeliver sets the function that receives every message side's engine
// delivers through Recv. Without one, messages are taken and discarded.
func (s *Sim) OnDeliver(side Side, fn func(engine.Message)) { s.sides[side].deliver = fn }

// OnError sets the function that receives every error side's engine
// returns from HandleDatagram. Errors are counted either way.
func (s *Sim) OnError(side Side, fn func(error)) { s.sides[side].onErr = fn }

// Stats returns a snapshot of the counters.
func (s *Sim) Stats() Stats {
	st := Stats{A: s.sides[A].st, B: s.sides[B].st, Steps: s.steps, Elapsed: s.clock.Elapsed()}
	st.A.Out = s.sides[A].out.Stats()
	st.B.Out = s.sides[B].out.Stats()
	return st
}

// Step runs one event. First it polls both engines at the current time, so
// that messages given to Send since the last step leave at once. Then it
// advances the clock to the earliest of the engines' deadlines and the
// links' next deliveries, hands the datagrams due to HandleDatagram, and
// polls each engine and takes its delivered messages. Step reports false,
// without moving the clock, when no event is left.
//
// An engine polled at now whose Deadline is still not after now has a
// stale deadline; it is taken to be now+1µs, so that time advances even
// with an engine that keeps asking for a Poll it has nothing for.
func (s *Sim) Step() bool {
	t, ok := s.prepare()
	if ok {
		s.advance(t)
	}
	return ok
}

// RunUntil steps until cond reports true, checking it before each step. It
// returns an error wrapping [ErrIdle] if no event is left, [ErrTimeLimit]
// (with the clock moved to the limit) if the next event is more than limit
// of virtual time after the call, and [ErrStalled] if many steps in a row
// do not advance the clock.
func (s *Sim) RunUntil(cond func() bool, limit time.Duration) error {
	start := s.clock.Now()
	end := start.Add(limit)
	for !cond() {
		t, ok := s.prepare()
		switch {
		case !ok:
			return s.errorf(ErrIdle, "after %v: no timer runs and no datagram is in flight", s.clock.Now().Sub(start))
		case t.After(end):
			s.clock.AdvanceTo(end)
			return s.errorf(ErrTimeLimit, "%v", limit)
		case s.still >= maxStill:
			return s.errorf(ErrStalled, "%d steps in a row", s.still)
		}
		s.advance(t)
	}
	return nil
}

func (s *Sim) errorf(err error, format string, args ...any) error {
	a, b := s.sides[A].e, s.sides[B].e
	return fmt.Errorf("%w: %s (at %v; A %v, %d pending; B %v, %d pending)", err,
		fmt.Sprintf(format, args...), s.clock.Elapsed(), a.State(), a.Pending(), b.State(), b.Pending())
}

// prepare polls both engines at the current time and returns the time of
// the next event.
func (s *Sim) prepare() (time.Time, bool) {
	s.flush()
	now := s.clock.Now()
	var next time.Time
	found := false
	consider := func(t time.Time) {
		if !found || t.Before(next) {
			next, found = t, true
		}
	}
	for i := range s.sides {
		if d := s.sides[i].e.Deadline(); !d.IsZero() {
			if !d.After(now) {
				d = now.Add(staleStep)
			}
			consider(d)
		}
		if t, ok := s.sides[i].out.NextDelivery(); ok {
			consider(t)
		}
	}
	return next, found
}

// advance moves the clock to t, delivers the datagrams due and polls.
func (s *Sim) advance(t time.Time) {
	if t.After(s.clock.Now()) {
		s.still = 0
	} else {
		s.still++
	}
	s.clock.AdvanceTo(t)
	s.steps++
	for to := range s.sides {
		dst := &s.sides[to]
		in := s.sides[1-to].out
		for p, ok := in.Receive(t); ok; p, ok = in.Receive(t) {
			dst.st.Datagrams++
			if err := dst.e.HandleDatagram(t, p); err != nil {
				dst.st.Errors++
				if dst.onErr != nil {
					dst.onErr(err)
				}
			}
		}
	}
	s.flush()
}

// flush polls each engine at the current time until it has nothing more
// to send, then takes its delivered messages.
func (s *Sim) flush() {
	now := s.clock.Now()
	for i := range s.sides {
		sd := &s.sides[i]
		for range maxPerFlush {
			n := sd.e.Poll(now, s.buf)
			if n == 0 {
				break
			}
			sd.out.Send(now, s.buf[:n])
		}
		for range maxPerFlush {
			m, ok := sd.e.Recv()
			if !ok {
				break
			}
			sd.st.Messages++
			if sd.deliver != nil {
				sd.deliver(m)
			}
		}
	}
}
