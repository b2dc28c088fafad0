package wirefox

import (
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Deadline returns when Poll must next be called: the earliest of an
// out-of-band message or data due now, the handshake's next attempt, the
// owed acknowledgements, the pacer, the oldest in-flight packet's timeout
// and RACK, the keepalive, challenge, idle and linger timers. With
// Config.ReferencePeer a datagram due waits for the next write cycle,
// and new data held back by the reference's window waits for the oldest
// datagram counted in flight to expire (or for an ACK, which calls for a
// new Deadline). Zero in StateClosed.
func (s *Session) Deadline() time.Time { return s.Lifecycle.Deadline(s.endAt(), s.deadline) }

// deadline is the earliest of the timers other than endAt.
func (s *Session) deadline() time.Time {
	var d engine.Earliest
	d.Add(s.now, s.State() == engine.StateClosing && s.pending == 0 && !s.discSent)
	d.Add(s.paced(s.now), len(s.oob) > 0)
	if s.phase != phaseDone {
		d.Add(s.hsNext, s.phase == phaseInitial && s.failAfter == nil || s.phase == phaseProof)
		d.Add(s.paced(s.now), s.kaDue)
		return d.Time()
	}
	d.Add(s.chal.Until, s.chal.Running())
	d.Add(s.lastKA.Add(s.probeInterval()), s.chal.Running())
	if !s.peerCloseAt.IsZero() {
		d.Add(s.peerCloseAt, s.pending > 0)
		d.Add(s.now, s.pending == 0)
	}
	if at, ok := s.ackDue(); ok {
		d.Add(s.paced(at), true)
	}
	if len(s.gaps) > 0 && int32(s.expected-1-s.gaps[0].id) >= reorderDistance {
		d.Add(s.gaps[0].since.Add(s.reorderDelay()), true)
	}
	if s.hasData() {
		t := s.cc.NextSend(s.now, s.cfg.MaxDatagram)
		if s.cfg.ReferencePeer && !t.IsZero() && t.Before(s.pace.dataNext) {
			t = s.pace.dataNext
		}
		d.Add(s.paced(t), !t.IsZero())
	} else if s.cfg.ReferencePeer && s.active.Len() > 0 && !s.windowFull() {
		avg, _, _ := s.rttStats()
		d.Add(s.pace.expiresAt(avg)) // the window's room opens
	}
	if p := s.inflight.head; p != nil {
		d.Add(s.timeoutAt(p), true)
	}
	for s.dgOrder.Len() > 0 && s.dgrams[*s.dgOrder.Front()] == nil {
		s.dgOrder.Pop()
	}
	if s.dgOrder.Len() > 0 {
		d.Add(s.cc.LostAt(&s.dgrams[*s.dgOrder.Front()].cc, s.smoothed()))
	}
	d.Add(s.keepAliveAt())
	d.Add(s.paced(s.now), s.keepAliveDue())
	return d.Time()
}

// endAt returns the timers that end the session by themselves: Linger,
// which applyTimers applies before the others; the handshake timeout
// until the handshake is done, then the idle timeout. Deadline and
// applyTimers both read them.
func (s *Session) endAt() (end engine.End) {
	end.Join(s.Linger(s.cfg.Linger))
	switch {
	case s.phase != phaseDone && s.cfg.HandshakeTimeout > 0:
		// Also while closing: Linger counts from the end of the handshake.
		end.Add(s.Created.Add(s.cfg.HandshakeTimeout), engine.ErrHandshakeTimeout)
	case s.phase == phaseDone:
		end.Join(s.IdleTimeout(s.cfg.IdleTimeout))
	}
	return end
}

// paced returns t, or with Config.ReferencePeer the next write cycle if
// later.
func (s *Session) paced(t time.Time) time.Time {
	if s.cfg.ReferencePeer && t.Before(s.pace.next) {
		return s.pace.next
	}
	return t
}
