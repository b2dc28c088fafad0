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
func (s *Session) Deadline() time.Time {
	if s.state == engine.StateClosed {
		return time.Time{}
	}
	var d engine.Earliest
	d.Add(s.closeAt.Add(s.cfg.Linger), s.state == engine.StateClosing)
	end := s.ends()
	d.Add(end.At, end.OK)
	d.Add(s.now, s.state == engine.StateClosing && s.pending == 0 && !s.discSent)
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

// ends returns the timers that end the session by themselves besides
// Linger, which goes first: the handshake timeout until the handshake is
// done, then the idle timeout. Deadline and timers both read them.
func (s *Session) ends() (end engine.End) {
	switch {
	case s.phase != phaseDone:
		if s.cfg.HandshakeTimeout > 0 {
			end.Add(s.hsStart.Add(s.cfg.HandshakeTimeout), engine.ErrHandshakeTimeout)
		}
	case s.cfg.IdleTimeout > 0:
		end.Add(s.lastRecv.Add(s.cfg.IdleTimeout), engine.ErrIdleTimeout)
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
