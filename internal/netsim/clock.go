package netsim

import (
	"fmt"
	"time"
)

// Epoch is the instant every [Clock] and [Sim] starts at: Unix time
// 1,000,000 (12 January 1970, 13:46:40 UTC), far from the zero time so that
// an engine mistaking it for "no deadline" is caught.
func Epoch() time.Time { return time.Unix(1_000_000, 0).UTC() }

// Clock is a virtual clock: it moves only when told to, and never backwards.
// The zero value is not usable; build one with [NewClock].
type Clock struct {
	now time.Time
}

// NewClock returns a clock reading [Epoch].
func NewClock() *Clock { return &Clock{now: Epoch()} }

// Now is the current virtual time.
func (c *Clock) Now() time.Time { return c.now }

// Elapsed is the virtual time since [Epoch].
func (c *Clock) Elapsed() time.Duration { return c.now.Sub(Epoch()) }

// Advance moves the clock forward by d. It panics if d is negative.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("netsim: Clock.Advance(%v): negative duration", d))
	}
	c.now = c.now.Add(d)
}

// AdvanceTo moves the clock forward to t. It panics if t is before Now.
func (c *Clock) AdvanceTo(t time.Time) {
	if t.Before(c.now) {
		panic(fmt.Sprintf("netsim: Clock.AdvanceTo: %v is before now (%v)", t, c.now))
	}
	c.now = t
}
