package lludp

import (
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Deadline returns when Poll must next be called: the earliest of the next
// datagram due (see Poll), the next resend, ping, PacketAck or
// CloseCircuit, and the handshake, idle, resend-limit and linger timers.
// It is zero in StateClosed. A time not after the latest time passed in
// means "now".
func (s *Session) Deadline() time.Time { return s.Lifecycle.Deadline(s.endAt(), s.deadline) }

// deadline is the earliest of the timers other than endAt.
func (s *Session) deadline() time.Time {
	var d engine.Earliest
	d.Add(s.now, s.hello != nil || s.nPongs > 0)
	d.Add(s.dataAt())
	if m := s.resend.head; m != nil {
		d.Add(s.timeoutAt(m), true)
		d.Add(s.cc.LostAt(&m.pkt, s.roundTrip()))
	}
	if m := s.suspect.head; m != nil {
		d.Add(m.sentAt.Add(s.rto()), true)
	}
	d.Add(s.chal.Until, s.chal.Running())
	d.Add(s.pingDue())
	d.Add(s.ackDue())
	d.Add(s.closeDue())
	return d.Time()
}

// dataAt returns when the next datagram carrying a message may leave, as
// transmit decides: a resend of a lost datagram first, else the next
// queued message, when the congestion window and the pacer allow; false
// when there is none or the window is full.
func (s *Session) dataAt() (time.Time, bool) {
	size := 0
	switch {
	case s.lost.head != nil:
		size = len(s.lost.head.wire)
	case s.open && s.queue.Len() > 0:
		size = queuedSize(*s.queue.Front())
	default:
		return time.Time{}, false
	}
	t := s.cc.NextSend(s.now, size)
	return t, !t.IsZero()
}

// pingDue returns when the next StartPingCheck is due: KeepAlive after the
// last one, or after the circuit opened; with Config.PingWhenQuiet, also
// no sooner than KeepAlive after the last datagram accepted, unless a
// challenge asks for one.
func (s *Session) pingDue() (time.Time, bool) {
	at, ok := s.regularPingDue()
	if s.open && !s.extraPing.IsZero() && (!ok || s.extraPing.Before(at)) {
		return s.extraPing, true
	}
	return at, ok
}

// PingAt asks for a StartPingCheck at t besides the regular ones (see
// engine.Pinger). It has no effect before the circuit is open, or while
// a challenge runs: its own pings decide it (a peer that closed its
// circuit and its socket is then taken as closed, not refused).
func (s *Session) PingAt(t time.Time) {
	if !s.chal.Running() {
		s.extraPing = t
	}
}

// regularPingDue is pingDue without PingAt's ping.
func (s *Session) regularPingDue() (time.Time, bool) {
	switch {
	case !s.open:
		return time.Time{}, false
	case s.chal.Running() && (s.cfg.KeepAlive < 0 || s.chalEvery < s.cfg.KeepAlive):
		return s.pingAt.Add(s.chalEvery), true // the challenge's next probe
	case s.cfg.KeepAlive < 0:
		return time.Time{}, false
	}
	if s.cfg.PingWhenQuiet && !s.chal.Running() {
		return engine.KeepAliveAt(s.cfg.KeepAlive, s.LastRecv, s.pingAt)
	}
	return s.pingAt.Add(s.cfg.KeepAlive), true
}

// ackDue returns when owed acks go out in a PacketAck: AckDelay after the
// oldest was queued, or at once when a full PacketAck's worth is owed or
// the session is closing.
func (s *Session) ackDue() (time.Time, bool) {
	switch {
	case s.acks.len() == 0:
		return time.Time{}, false
	case s.acks.len() >= s.ackBatch() || s.State() == engine.StateClosing:
		return s.now, true
	}
	return s.ackSince.Add(s.cfg.AckDelay), true
}

// ackBatch is how many owed acks send a PacketAck at once: as many as one
// carries, or half that with Config.RepeatAcks, so that the previous
// PacketAck's acks always fit beside the new ones.
func (s *Session) ackBatch() int {
	if s.cfg.RepeatAcks {
		return MaxPacketAckIDs / 2
	}
	return MaxPacketAckIDs
}

// closeDue returns when the next CloseCircuit of a graceful close is due:
// once nothing is pending and no ack is owed.
func (s *Session) closeDue() (time.Time, bool) {
	if s.State() != engine.StateClosing || s.pending > 0 || s.acks.len() > 0 || s.closeSent >= closeCopies {
		return time.Time{}, false
	}
	return s.closeNext, true
}

// endAt returns the timers that fail the session by themselves: Linger,
// which Poll applies before the others, sending one last CloseCircuit;
// the handshake timeout; the idle timeout; and the timeout after the last
// allowed resend of the oldest transmission (docs/protocols/lludp.md
// §3.4), engine.ErrRetransmitLimit, which endError details when it
// fires.
func (s *Session) endAt() (end engine.End) {
	end.Join(s.Linger(s.cfg.Linger))
	end.Join(s.HandshakeTimeout(s.cfg.HandshakeTimeout))
	end.Join(s.IdleTimeout(s.cfg.IdleTimeout))
	for _, m := range []*outMsg{s.resend.head, s.suspect.head} {
		if m != nil && s.cfg.ResendLimit >= 0 && m.resends >= s.cfg.ResendLimit {
			end.Add(m.sentAt.Add(s.rto()), engine.ErrRetransmitLimit)
		}
	}
	return end
}

// endError is Err when the end timer that fires ends with err.
func (s *Session) endError(err error) error {
	if err != engine.ErrRetransmitLimit {
		return err
	}
	m := s.resend.head
	if h := s.suspect.head; m == nil || h != nil && h.sentAt.Before(m.sentAt) {
		m = h
	}
	if m.hello {
		return fmt.Errorf("lludp: UseCircuitCode unacknowledged after %d resends: %w: %w",
			m.resends, engine.ErrHandshakeTimeout, engine.ErrRetransmitLimit)
	}
	return fmt.Errorf("%w: lludp: datagram %d unacknowledged after %d resends",
		engine.ErrRetransmitLimit, m.seq, m.resends)
}
