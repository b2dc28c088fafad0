package wirefox

import (
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Deadline returns when Poll must next be called: the earliest of an
// out-of-band message or data due now, the handshake's next attempt, the
// owed acknowledgements, the pacer, the oldest in-flight packet's timeout
// and RACK, the keepalive, challenge, idle and linger timers. Zero in
// StateClosed.
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
	earliest(s.now, len(s.oob) > 0)
	if s.phase != phaseDone {
		earliest(s.hsStart.Add(s.cfg.HandshakeTimeout), s.cfg.HandshakeTimeout > 0)
		earliest(s.hsNext, s.phase == phaseInitial && s.failAfter == nil)
		return d
	}
	earliest(s.lastRecv.Add(s.cfg.IdleTimeout), s.cfg.IdleTimeout > 0)
	earliest(s.chal.Until, s.chal.Running())
	earliest(s.ackDue())
	if len(s.gaps) > 0 && int32(s.expected-1-s.gaps[0].id) >= reorderDistance {
		earliest(s.gaps[0].since.Add(s.reorderDelay()), true)
	}
	if s.hasData() {
		t := s.cc.NextSend(s.now, s.cfg.MaxDatagram)
		earliest(t, !t.IsZero())
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
	return d
}
