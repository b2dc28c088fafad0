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
	var d time.Time
	earliest := func(t time.Time, ok bool) {
		if ok && (d.IsZero() || t.Before(d)) {
			d = t
		}
	}
	if s.state == engine.StateClosing {
		earliest(s.closeAt.Add(s.cfg.Linger), true)
		earliest(s.now, s.pending == 0 && !s.discSent)
	}
	earliest(s.paced(s.now), len(s.oob) > 0)
	if s.phase != phaseDone {
		earliest(s.hsStart.Add(s.cfg.HandshakeTimeout), s.cfg.HandshakeTimeout > 0)
		earliest(s.hsNext, s.phase == phaseInitial && s.failAfter == nil || s.phase == phaseProof)
		earliest(s.paced(s.now), s.kaDue)
		return d
	}
	earliest(s.lastRecv.Add(s.cfg.IdleTimeout), s.cfg.IdleTimeout > 0)
	earliest(s.chal.Until, s.chal.Running())
	earliest(s.lastKA.Add(s.probeInterval()), s.chal.Running())
	if !s.peerCloseAt.IsZero() {
		earliest(s.peerCloseAt, s.pending > 0)
		earliest(s.now, s.pending == 0)
	}
	if at, ok := s.ackDue(); ok {
		earliest(s.paced(at), true)
	}
	if len(s.gaps) > 0 && int32(s.expected-1-s.gaps[0].id) >= reorderDistance {
		earliest(s.gaps[0].since.Add(s.reorderDelay()), true)
	}
	if s.hasData() {
		t := s.cc.NextSend(s.now, s.cfg.MaxDatagram)
		if s.cfg.ReferencePeer && !t.IsZero() && t.Before(s.pace.dataNext) {
			t = s.pace.dataNext
		}
		earliest(s.paced(t), !t.IsZero())
	} else if s.cfg.ReferencePeer && s.active.Len() > 0 && !s.windowFull() {
		avg, _, _ := s.rttStats()
		earliest(s.pace.expiresAt(avg)) // the window's room opens
	}
	if p := s.inflight.head; p != nil {
		earliest(s.timeoutAt(p), true)
	}
	for s.dgOrder.Len() > 0 && s.dgrams[*s.dgOrder.Front()] == nil {
		s.dgOrder.Pop()
	}
	if s.dgOrder.Len() > 0 {
		earliest(s.cc.LostAt(&s.dgrams[*s.dgOrder.Front()].cc, s.smoothed()))
	}
	earliest(s.keepAliveAt())
	earliest(s.paced(s.now), s.keepAliveDue())
	return d
}

// paced returns t, or with Config.ReferencePeer the next write cycle if
// later.
func (s *Session) paced(t time.Time) time.Time {
	if s.cfg.ReferencePeer && t.Before(s.pace.next) {
		return s.pace.next
	}
	return t
}
