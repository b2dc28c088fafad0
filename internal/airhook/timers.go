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
	var d engine.Earliest
	at, why := s.transmitDue()
	d.Add(at, why != dueNever)
	d.Add(s.probeAt())
	end := s.endAt()
	d.Add(end.At, end.OK)
	d.Add(s.chalUntil, s.chalOn && !s.chalSend)
	return d.Time()
}

// applyTimers closes the session if one of its ending timers expired by
// now.
func (s *Session) applyTimers(now time.Time) {
	if end := s.endAt(); end.Due(now) {
		if end.Err == engine.ErrLingerTimeout {
			end.Err = s.lingerError() // nil when nothing is left
		}
		s.fail(end.Err)
	}
	if s.chalOn && !s.chalSend && !now.Before(s.chalUntil) {
		s.chalOn, s.chalPassed = false, true // no answer: the peer restarted
	}
}

// endAt returns the timers that end the session by themselves: once
// closing, the quiet period after which a graceful close ends (nil) and
// Linger (engine.ErrLingerTimeout, which applyTimers turns into Err, see
// lingerError); the handshake timeout; the idle timeout.
func (s *Session) endAt() (end engine.End) {
	if s.state == engine.StateClosing {
		if s.pending == 0 && !s.newIncoming() && s.nMissed == 0 {
			end.Add(s.lastRecv.Add(max(2*s.rtt.RTO(), MinTimeWait)), nil)
		}
		end.Add(s.closeAt.Add(s.cfg.Linger), engine.ErrLingerTimeout)
	}
	if s.state == engine.StateHandshake && s.cfg.HandshakeTimeout > 0 {
		end.Add(s.created.Add(s.cfg.HandshakeTimeout), engine.ErrHandshakeTimeout)
	}
	if s.cfg.IdleTimeout > 0 {
		end.Add(s.lastRecv.Add(s.cfg.IdleTimeout), engine.ErrIdleTimeout)
	}
	return end
}
