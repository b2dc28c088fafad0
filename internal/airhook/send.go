package airhook

import (
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// dueReason says why a packet is due (docs/protocols/airhook.md §3.7).
type dueReason uint8

const (
	dueNever dueReason = iota
	dueNow             // new data or confirmation of received data, or a kick
	dueTimer           // one RTO after the last transmit
)

// Poll applies the timers at now, then writes the next packet due into buf
// and returns its length, or 0 when nothing is due. Call it until it
// returns 0. buf must hold at least Config.MaxDatagram bytes; with a
// shorter buf nothing is written.
//
// A header repeat sent because the RTO expired doubles the RTO (up to
// Config.RTOMax); an RTT sample resets it.
func (s *Session) Poll(now time.Time, buf []byte) int {
	if s.State() == engine.StateClosed {
		return 0
	}
	s.now = now
	s.applyTimers(now)
	if s.State() == engine.StateClosed || len(buf) < s.cfg.MaxDatagram {
		return 0
	}
	at, why := s.transmitDue()
	probe := s.chalSend // a challenge goes as a probe: see challenged
	if !probe && (why == dueNever || now.Before(at)) {
		if !s.probeDue(now) {
			return 0
		}
		probe = true
	}
	n, repeat := s.transmit(now, buf, probe)
	if s.chalSend {
		s.chalSend, s.chalSeq = false, s.lastSent
		d := max(2*s.rtt.RTO(), engine.ChallengeMin)
		s.chalUntil, s.chalEvery = now.Add(d), d/engine.ChallengeProbes
	}
	switch {
	case probe:
		s.lastProbe = now
		engine.TraceKeepAlive(s.cfg.Tracer, now)
	case repeat && why == dueTimer:
		s.rtt.Backoff()
	}
	return s.Sent(n)
}

// free1 reports whether a new sequence number is available, free2 whether
// two are (docs/protocols/airhook.md §3.7, §3.8).
func (s *Session) free1() bool { return s.confirmed != uint8(s.lastSent+1) }
func (s *Session) free2() bool { return s.confirmed != uint8(s.lastSent+2) }

// newPeerPacket reports whether a peer packet was accepted since our
// newest packet was sent.
func (s *Session) newPeerPacket() bool { return uint8(s.lastAccepted) != s.lastObservedSent }

// newIncoming reports whether the peer's message numbering moved (messages
// delivered or detected missed) since our newest packet was sent.
func (s *Session) newIncoming() bool { return s.rec(uint8(s.lastSent)).nextIn != s.nextIn }

// canSend reports whether a queued message may take a number: at most 255
// numbers are outstanding past the newest confirmed packet.
func (s *Session) canSend() bool {
	return s.queue.len() > 0 && s.nextOut+1 != s.rec(s.confirmed).nextOut
}

// novel reports whether a new packet (rather than a header repeat) goes
// out when a transmission is due.
func (s *Session) novel() bool {
	return s.free1() && (s.newPeerPacket() || s.free2() && (s.newIncoming() || s.canSend()))
}

// transmitDue returns when the next packet is due and why (docs/protocols/airhook.md §3.7),
// the reference's retransmit interval being the RTO.
func (s *Session) transmitDue() (time.Time, dueReason) {
	if s.novel() {
		if s.newIncoming() {
			return s.now, dueNow
		}
		if s.canSend() {
			// New messages leave when the congestion controller lets a
			// packet go; with the window full, an acknowledgement must
			// come first.
			if t := s.cc.NextSend(s.now, s.cfg.MaxDatagram); !t.IsZero() {
				return t, dueNow
			}
		}
	}
	switch {
	case s.kick:
		return s.kickAt, dueNow
	case s.retryArmed || !s.peerKnowsUs || s.push == pushSent ||
		s.nextOut != s.rec(s.confirmed).nextOut || s.nMissed > 0:
		// push == pushSent is a choice: the reference does not repeat a
		// session push that the peer has not confirmed yet.
		return s.lastTransmit.Add(s.rtt.RTO()), dueTimer
	}
	return time.Time{}, dueNever
}

// probeDue reports whether a keepalive probe is due at now.
func (s *Session) probeDue(now time.Time) bool {
	at, ok := s.probeAt()
	return ok && !now.Before(at)
}

// probeAt returns when the next keepalive probe is due, or the next
// probe of a running challenge (engine.ChallengeProbes over it).
func (s *Session) probeAt() (time.Time, bool) {
	if s.State() == engine.StateEstablished && s.chalOn && !s.chalSend {
		return s.lastProbe.Add(s.chalEvery), true
	}
	if s.State() != engine.StateEstablished {
		return time.Time{}, false
	}
	return engine.KeepAliveAt(s.cfg.KeepAlive, s.LastRecv, s.lastProbe)
}

// transmit writes a new packet when the rules of docs/protocols/airhook.md §3.7 call for one,
// else a header repeat, and reports which. A probe is a new packet without
// messages whose observed octet repeats our last one, so that it confirms
// nothing new and a peer running this engine answers it; when the sequence
// window is short it is a header repeat too.
func (s *Session) transmit(now time.Time, buf []byte, probe bool) (n int, repeat bool) {
	p := &s.pkt
	*p = Packet{Messages: p.Messages[:0]}
	if s.push != pushDone {
		p.Session, p.ObservedSession = s.own, s.peer
	}
	s.lastTransmit = now
	s.kick, s.retryArmed = false, false

	if !s.novel() && !(probe && s.free1() && s.free2()) {
		last := s.rec(uint8(s.lastSent))
		p.Seq, p.ObservedSeq, p.Next = s.lastSent, s.lastObservedSent, last.nextOut
		// Leave out entries detected after the original was sent.
		k := s.nMissed
		for k > 0 && inRange(s.missed[k-1], last.nextIn, s.nextIn) {
			k--
		}
		p.Missed = s.missed[:k]
		last.repeated = true
		return len(p.AppendTo(buf[:0])), true
	}

	p.Seq, p.ObservedSeq, p.Next = s.lastSent+1, uint8(s.lastAccepted), s.nextOut
	if probe {
		p.ObservedSeq = s.lastObservedSent
	}
	p.Missed = s.missed[:s.nMissed]
	resent := false
	if !probe {
		if s.cc.CanSend(now, s.cfg.MaxDatagram) {
			resent = s.fill(p)
		}
		if s.queue.len() == 0 && s.cc.Room() > 0 {
			s.cc.AppLimited()
		}
	}
	n = len(p.AppendTo(buf[:0]))
	clear(p.Messages) // do not keep recycled buffers reachable

	s.lastSent, s.lastObservedSent = p.Seq, p.ObservedSeq
	if s.push == pushPending && p.Session != 0 && p.ObservedSession != 0 {
		s.push, s.pushSeq = pushSent, p.Seq
	}
	s.reserve(uint8(p.Seq))
	r := s.rec(uint8(p.Seq))
	*r = record{
		at:       now,
		nextOut:  s.nextOut,
		nextIn:   s.nextIn,
		count:    uint8(len(p.Messages)),
		messages: len(p.Messages) > 0,
	}
	if r.messages {
		s.cc.OnSent(now, &r.pkt, n, resent)
	}
	return n, false
}

// fill numbers and adds to p as many queued messages as the message window
// and Config.MaxDatagram allow, and reports whether one of them was sent
// before (a retransmission).
func (s *Session) fill(p *Packet) (resent bool) {
	size := p.Len()
	if s.waiting == nil && s.canSend() {
		s.waiting = make([]*outMsg, 256)
	}
	for s.canSend() {
		m := s.queue.front()
		if size+1+len(m.data) > s.cfg.MaxDatagram {
			return resent
		}
		size += 1 + len(m.data)
		s.queue.pop()
		if old := s.waiting[s.nextOut]; old != nil {
			// Unreachable while the numbering invariants hold; never
			// lose a message if they do not.
			s.queue.insert(old)
		}
		s.waiting[s.nextOut] = m
		s.nextOut++
		m.sends++
		if m.sends == 1 {
			s.Counters.MessagesSent++
		} else {
			s.Counters.Retransmits++
			resent = true
		}
		p.Messages = append(p.Messages, m.data)
	}
	return resent
}
