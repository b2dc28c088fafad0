package engine

import "time"

// Earliest keeps the earliest of the times it is given: an engine's
// Deadline (see Engine) adds each of its running timers to one, and
// returns its Time. The zero Earliest holds no time.
type Earliest struct{ t time.Time }

// Add takes t into account when ok is true.
func (e *Earliest) Add(t time.Time, ok bool) {
	if ok && (e.t.IsZero() || t.Before(e.t)) {
		e.t = t
	}
}

// Time returns the earliest time added, zero if none was.
func (e *Earliest) Time() time.Time { return e.t }

// End is the earliest of the timers that end an association by
// themselves (the handshake timeout, the idle timeout, Linger, and an
// engine's own: see Lifecycle), and the error each ends it with. An
// engine builds its End in one place, which both its Deadline
// (Lifecycle.Deadline) and its timer pass in Poll read, so that a Poll at
// the deadline finds the end due. Of timers due at the same instant the
// one added first is kept: an engine adds them in the order in which it
// settles such a tie. The zero End holds no timer.
type End struct {
	// At is when the earliest timer fires, if OK.
	At time.Time
	// Err is the error that timer ends the association with: nil for a
	// graceful end, ErrLingerTimeout for Linger (which the engine
	// reports as LingerError when it fires, so that Deadline builds no
	// error), or an engine's own.
	Err error
	// OK reports whether a timer was added.
	OK bool
}

// Add adds a timer that ends the association at at with err.
func (e *End) Add(at time.Time, err error) {
	if !e.OK || at.Before(e.At) {
		e.At, e.Err, e.OK = at, err, true
	}
}

// Join adds the earliest timer of o, if any.
func (e *End) Join(o End) {
	if o.OK {
		e.Add(o.At, o.Err)
	}
}

// Due reports whether the earliest timer has fired by now.
func (e End) Due(now time.Time) bool { return e.OK && !now.Before(e.At) }
