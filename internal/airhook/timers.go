package airhook

import (
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Deadline returns when Poll must next be called: the earliest of the next
// packet due, the next keepalive probe, and the handshake, idle, linger
// and close timers. It is zero in StateClosed. A time not after the latest
// time passed in means "now".
func (s *Session) Deadline() time.Time {
	if s.state == engine.StateClosed {
		return time.Time{}
	}
	var d time.Time
	earliest := func(t time.Time) {
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	if at, why := s.transmitDue(); why != dueNever {
		earliest(at)
	}
	if at, ok := s.probeAt(); ok {
		earliest(at)
	}
	if at, ok, _ := s.endAt(); ok {
		earliest(at)
	}
	if s.chalOn && !s.chalSend {
		earliest(s.chalUntil)
	}
	return d
}

// applyTimers closes the session if one of its ending timers expired by
// now.
func (s *Session) applyTimers(now time.Time) {
	if at, ok, cause := s.endAt(); ok && !now.Before(at) {
		if cause == engine.ErrLingerTimeout {
			cause = s.lingerError() // nil when nothing is left
		}
		s.fail(cause)
	}
	if s.chalOn && !s.chalSend && !now.Before(s.chalUntil) {
		s.chalOn, s.chalPassed = false, true // no answer: the peer restarted
	}
}

// endAt returns the earliest time at which the session ends by itself and
// the cause it then ends with: nil for a graceful close, and
// engine.ErrLingerTimeout for Linger, which applyTimers turns into Err
// (see lingerError) only when it fires, so that Deadline does not build
// an error on every call.
func (s *Session) endAt() (at time.Time, ok bool, cause error) {
	consider := func(t time.Time, c error) {
		if !ok || t.Before(at) {
			at, ok, cause = t, true, c
		}
	}
	if s.state == engine.StateClosing {
		if s.pending == 0 && !s.newIncoming() && s.nMissed == 0 {
			consider(s.lastRecv.Add(max(2*s.rtt.RTO(), MinTimeWait)), nil)
		}
		consider(s.closeAt.Add(s.cfg.Linger), engine.ErrLingerTimeout)
	}
	if s.state == engine.StateHandshake && s.cfg.HandshakeTimeout > 0 {
		consider(s.created.Add(s.cfg.HandshakeTimeout), engine.ErrHandshakeTimeout)
	}
	if s.cfg.IdleTimeout > 0 {
		consider(s.lastRecv.Add(s.cfg.IdleTimeout), engine.ErrIdleTimeout)
	}
	return at, ok, cause
}
