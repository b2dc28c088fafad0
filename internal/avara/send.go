package avara

import (
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
)

// packSize is the datagram size the congestion controller is asked about
// before messages are packed: the reference's packing threshold
// (docs/protocols/avara.md §1.6). A datagram may then grow up to
// Config.MaxDatagram, overshooting the window by at most one datagram.
const packSize = 64

// Poll applies the timers at now, then writes the next datagram due into
// buf and returns its length, or 0 when nothing is due. Call it until it
// returns 0. buf must hold at least Config.MaxDatagram bytes; with a
// shorter buf nothing is written.
//
// Every datagram starts with the ack field and, while messages are held
// out of order, the AckMap (docs/protocols/avara.md §1.5, §5: only bits
// 0..31, only while every held serial lies within 64 of the base, never
// from a client the server has not accepted yet, never with
// Config.ReferencePeer). Then come, in serial order and as many as fit:
// messages whose resend time has come (the retransmit time after their
// last transmission, no back-off; after 3 datagrams of resends without
// hearing from the peer, only the oldest unacknowledged one), then new
// messages within the 2048-serial window, transport messages first
// (§3.2, §3.4); with Config.ReferencePeer the Logout only once
// everything before it is acknowledged (see Close). Datagrams carrying
// messages leave as the congestion controller allows and, with
// Config.ReferencePeer, as the reference's byte quota and its 16
// outstanding messages allow. A pure acknowledgement goes out
// Config.AckDelay after something arrived when nothing else did, and
// again AckDelay plus the retransmit time after the last datagram while
// messages are held behind a gap or, with Config.ReferencePeer, until 3
// datagrams went out after the last message arrived (ackDue).
func (s *Session) Poll(now time.Time, buf []byte) int {
	if s.State() == engine.StateClosed {
		return 0
	}
	s.now = now
	if end := s.endAt(); end.Due(now) {
		s.Fail(s.endError(end.Err))
		return 0
	}
	if len(buf) < s.cfg.MaxDatagram {
		return 0
	}
	s.probeByResend(now)
	s.detectLosses(now)
	s.updateCC(now, 0)
	s.expireChallenge(now)
	if at, ok := s.pokeAt(); ok && !now.Before(at) {
		s.ctl = append(s.ctl, &outMsg{transport: true, params: engine.Params{Command: CommandPing}})
		s.lastPoke, s.extraPoke = now, time.Time{}
		engine.TraceKeepAlive(s.cfg.Tracer, now)
	}
	n := s.Sent(s.transmit(now, buf))
	if s.loggedOut && !s.owe {
		s.Fail(engine.Unconfirmed(engine.ErrPeerClosed, s.pending))
	}
	return n
}

// pokeAt returns when the next keepalive Ping is due (Config.KeepAlive):
// KeepAlive after the later of the last datagram from the peer and the
// last Ping, once established.
func (s *Session) pokeAt() (time.Time, bool) {
	if s.State() != engine.StateEstablished {
		return time.Time{}, false
	}
	at, ok := engine.KeepAliveAt(s.cfg.KeepAlive, s.LastRecv, s.lastPoke)
	if !s.extraPoke.IsZero() && (!ok || s.extraPoke.Before(at)) {
		return s.extraPoke, true
	}
	return at, ok
}

// PingAt asks for a probe the peer answers at t besides the keepalive
// Pings (see engine.Pinger): the oldest message then unacknowledged,
// resent (a Ping would wait behind the messages in flight), or a Ping
// when none is. It has no effect before the session is established, or
// while a challenge runs: its own probe decides it.
func (s *Session) PingAt(t time.Time) {
	if !s.chal.Running() {
		s.extraPoke = t
	}
}

// probeByResend makes the oldest unacknowledged message due at now, when
// PingAt's probe is due: its resend is the probe. With none, the probe
// stays due and pokeAt sends a Ping.
func (s *Session) probeByResend(now time.Time) {
	if s.extraPoke.IsZero() || now.Before(s.extraPoke) || s.State() != engine.StateEstablished {
		return
	}
	for _, m := range s.flight {
		if !m.acked {
			if now.Before(m.nextSend) {
				m.nextSend = now
			}
			s.extraPoke = time.Time{}
			return
		}
	}
}

// detectLosses tells the controller that the datagrams whose messages'
// resend time has come are lost; the caller ends the controller's event
// (updateCC) after it, with the RTT sample of the acknowledgements taken
// in the same event, if any.
func (s *Session) detectLosses(now time.Time) {
	for _, m := range s.flight {
		if !m.acked && m.dg != nil && !now.Before(m.nextSend) && m.dg.pkt.InFlight() {
			s.cc.OnLost(now, &m.dg.pkt, trace.LossTimeout)
		}
	}
}

// updateCC ends a controller event with the RTT sample sample (0: none).
func (s *Session) updateCC(now time.Time, sample time.Duration) {
	srtt := s.est.srtt()
	if s.rtt != nil && s.rtt.Sampled() {
		srtt = s.rtt.SRTT()
	}
	s.cc.Update(now, congestion.RTT{Latest: sample, Smoothed: srtt, RTO: s.rto()})
}

// mayOpen reports whether new messages may go: a client only once the TOC
// gave it its id (its Login excepted), a server once it took the Login.
func (s *Session) mayOpen() bool {
	return s.State() == engine.StateEstablished || s.State() == engine.StateClosing || s.login
}

// nextNew returns the next message never sent, or nil.
func (s *Session) nextNew() *outMsg {
	if len(s.ctl) > 0 && (s.mayOpen() || s.ctl[0].params.Command == CommandLogin) {
		return s.ctl[0]
	}
	if s.queue.Len() > 0 && s.mayOpen() {
		m := *s.queue.Front()
		if m.params.Command == CommandLogout && s.cfg.ReferencePeer && len(s.flight) > 0 {
			return nil // after everything before it is acknowledged (see Close)
		}
		return m
	}
	return nil
}

// inWindow reports whether the next serial lies within the send window.
func (s *Session) inWindow() bool {
	return s.nextSerial-(s.peerAck+2) < windowSerials && s.outstandingAllows()
}

// sendable reports whether a message never sent may go now, the
// congestion controller aside.
func (s *Session) sendable() bool { return s.nextNew() != nil && s.inWindow() }

// transmit writes the next datagram due, if any.
func (s *Session) transmit(now time.Time, buf []byte) int {
	b := s.appendAck(buf[:0])
	var dg *dgram
	resent := false
	add := func(m *outMsg) bool {
		w := Message{Serial: m.serial, SendCount: m.sendCount, Command: m.params.Command,
			P1: m.params.P1, P2: m.params.P2, P3: m.params.P3, Data: m.data}
		if m.firstSent.IsZero() {
			w.Serial = s.nextSerial
		}
		if w.Serial <= SenderSerialMax {
			w.Sender, w.HasSender = s.id, true
		}
		if len(b)+MessageLen(&w) > s.cfg.MaxDatagram {
			return false
		}
		b = AppendMessage(b, &w)
		if dg == nil {
			dg = new(dgram)
		}
		if m.dg != nil {
			m.dg.refs--
		}
		m.dg = dg
		dg.refs++
		if m.firstSent.IsZero() {
			m.serial, m.firstSent = s.nextSerial, now
			s.nextSerial += 2
			s.flight = append(s.flight, m)
			if !m.transport {
				s.Counters.MessagesSent++
			}
		} else {
			resent = true
			s.Counters.Retransmits++
		}
		m.sendCount = min(m.sendCount+1, 0xFF)
		m.nextSend = now.Add(s.rto())
		return true
	}
	quotaOK := s.quotaAllows(now)
	if quotaOK && s.cc.CanSend(now, packSize) {
		throttled := s.unheard >= throttleResends
		for _, m := range s.flight {
			if m.acked {
				continue
			}
			if !now.Before(m.nextSend) && !add(m) {
				break
			}
			if throttled {
				// The oldest unacknowledged message alone, so that two
				// throttled ends do not wait for each other.
				break
			}
		}
		for s.inWindow() {
			m := s.nextNew()
			if m == nil || !add(m) {
				break
			}
			if len(s.ctl) > 0 && s.ctl[0] == m {
				s.ctl = s.ctl[1:]
			} else {
				s.queue.Pop()
			}
		}
	}
	// The controller is not what holds the sender back when nothing new
	// waits, or Config.ReferencePeer does.
	if (s.nextNew() == nil || !quotaOK || !s.outstandingAllows()) && s.cc.Room() > 0 {
		s.cc.AppLimited()
	}
	if dg == nil {
		if at, ok := s.ackDue(); !ok || now.Before(at) {
			return 0
		}
	} else {
		s.cc.OnSent(now, &dg.pkt, len(b), resent)
		if resent {
			s.unheard++
		}
	}
	seal(b, s.sendVersion())
	s.pay(len(b))
	s.owe = false
	s.lastSent = now
	s.acksSent = min(s.acksSent+1, ackRepeats)
	return len(b)
}

// appendAck appends the header: the ack field and, when it may be sent,
// the AckMap.
func (s *Session) appendAck(b []byte) []byte {
	ackMap, ok := s.ackMap()
	return appendHeader(b, s.expected-2, ok, ackMap)
}

// ackMap returns the AckMap of the held messages, and false when none
// may be sent: nothing is held, a held serial lies more than 64 beyond
// the base (bits 0..31 cannot name it; the reference would alias it,
// docs/protocols/avara.md §4.1), the peer may be the reference
// (Config.ReferencePeer: its sender aliases map bits, §4.1), or we are a
// client the server has not accepted yet (§4.5).
func (s *Session) ackMap() (uint32, bool) {
	if s.nHeld == 0 || s.cfg.ReferencePeer || s.cfg.Client && s.State() == engine.StateHandshake {
		return 0, false
	}
	var m uint32
	n := 0
	for k := range 32 {
		if s.isHeld(s.expected + 2*uint16(k)) {
			m |= 1 << k
			n++
		}
	}
	return m, n == s.nHeld
}
