package airhook

import (
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Deadline returns when Poll must next be called: the earliest of the next
// packet due, the next keepalive probe, and the handshake, idle, linger
// and close timers. It is zero in StateClosed. A time not after the latest
// time passed in means "now".
func (s *Session) Deadline() time.Time { return s.Lifecycle.Deadline(s.endAt(), s.deadline) }

// deadline is the earliest of the timers other than endAt.
func (s *Session) deadline() time.Time {
	var d engine.Earliest
	at, why := s.transmitDue()
	d.Add(at, why != dueNever)
	d.Add(s.probeAt())
	d.Add(s.chalUntil, s.chalOn && !s.chalSend)
	return d.Time()
}

// applyTimers closes the session if one of its ending timers expired by
// now.
func (s *Session) applyTimers(now time.Time) {
	if end := s.endAt(); end.Due(now) {
		if end.Err == engine.ErrLingerTimeout {
			end.Err = engine.LingerError(s.pending) // nil when nothing is left
		}
		s.Fail(end.Err)
	}
	if s.chalOn && !s.chalSend && !now.Before(s.chalUntil) {
		s.chalOn, s.chalPassed = false, true // no answer: the peer restarted
	}
}

// endAt returns the timers that end the session by themselves: once
// closing, the quiet period after which a graceful close ends (nil) and
// Linger (engine.ErrLingerTimeout, which applyTimers turns into Err, see
// engine.LingerError); the handshake timeout; the idle timeout.
func (s *Session) endAt() (end engine.End) {
	if s.State() == engine.StateClosing && s.pending == 0 && !s.newIncoming() && s.nMissed == 0 {
		end.Add(s.LastRecv.Add(max(2*s.rtt.RTO(), MinTimeWait)), nil)
	}
	end.Join(s.Linger(s.cfg.Linger))
	end.Join(s.HandshakeTimeout(s.cfg.HandshakeTimeout))
	end.Join(s.IdleTimeout(s.cfg.IdleTimeout))
	return end
}
