package lludp

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
)

// Poll applies the timers at now, then writes the next datagram due into
// buf and returns its length, or 0 when nothing is due. Call it until it
// returns 0. buf must hold at least Config.MaxDatagram bytes; with a
// shorter buf nothing is written.
//
// Datagrams come in this order of priority: the client's UseCircuitCode
// (reliable, docs/protocols/lludp.md §3.1); CompletePingCheck answers (§3.7); resends, the
// stored datagram with FlagResent and the same sequence number, without
// appended acks (§3.4); queued messages, in Send order once the circuit is
// open; a StartPingCheck every Config.KeepAlive; PacketAck messages of up
// to 251 IDs when the oldest owed ack has waited Config.AckDelay, 251 are
// owed, or the session is closing (§3.3); CloseCircuit when closing.
// Every datagram but a PacketAck, a resend or the client's UseCircuitCode
// carries as many owed acks as fit: at most min(250, (1200 − length)/4)
// and within Config.MaxDatagram. Transport messages are never zerocoded
// (their template is Unencoded); application messages are zerocoded when
// that is strictly shorter. Each datagram takes the next sequence number,
// modulo 2^24 (§3.2).
func (s *Session) Poll(now time.Time, buf []byte) int {
	if s.State() == engine.StateClosed {
		return 0
	}
	s.now = now
	if s.Linger(s.cfg.Linger).Due(now) {
		err := engine.LingerError(s.pending)
		n := 0
		if len(buf) >= s.cfg.MaxDatagram {
			n = s.Sent(len(s.appendAcks(s.build(buf, 0, CloseCircuit, nil))))
		}
		s.Fail(err)
		return n
	}
	if end := s.endAt(); end.Due(now) {
		s.Fail(s.endError(end.Err))
		return 0
	}
	if s.chal.Running() && !now.Before(s.chal.Until) {
		s.challengeExpired(now) // no answer: the peer closed or restarted
		if s.State() == engine.StateClosed {
			return 0
		}
	}
	if len(buf) < s.cfg.MaxDatagram {
		return 0
	}
	return s.Sent(s.transmit(now, buf))
}

// transmit writes the next datagram due, if any.
func (s *Session) transmit(now time.Time, buf []byte) int {
	if m := s.hello; m != nil {
		s.hello = nil
		return len(s.sendReliable(now, buf, m, 0))
	}
	if s.nPongs > 0 {
		id := s.pongs[0]
		s.nPongs = copy(s.pongs[:], s.pongs[1:s.nPongs])
		return len(s.appendAcks(s.build(buf, 0, CompletePingCheck, []byte{id})))
	}
	s.detectLosses(now)
	s.updateCC(now, 0)
	if m := s.lost.head; m != nil && s.cc.CanSend(now, len(m.wire)) {
		return s.sendAgain(now, buf, m)
	}
	if s.open && s.queue.Len() > 0 && s.lost.head == nil {
		if s.cc.CanSend(now, queuedSize(*s.queue.Front())) {
			return s.sendQueued(now, buf)
		}
	} else if s.open && s.lost.head == nil && s.cc.Room() > 0 {
		s.cc.AppLimited()
	}
	if at, ok := s.pingDue(); ok && !now.Before(at) {
		engine.TraceKeepAlive(s.cfg.Tracer, now)
		return s.sendPing(now, buf)
	}
	if at, ok := s.ackDue(); ok && !now.Before(at) {
		return s.sendPacketAck(buf)
	}
	if at, ok := s.closeDue(); ok && !now.Before(at) {
		n := len(s.appendAcks(s.build(buf, 0, CloseCircuit, nil)))
		if s.closeSent++; s.closeSent == closeCopies {
			s.Fail(nil)
		}
		s.closeNext = now.Add(s.roundTrip())
		return n
	}
	return 0
}

// sendAgain resends m, declared lost: the stored datagram with RESENT
// set and the same sequence number, without appended acks (docs/protocols/lludp.md §3.4).
func (s *Session) sendAgain(now time.Time, buf []byte, m *outMsg) int {
	s.lost.remove(m)
	m.list = inFlight
	n := copy(buf, m.wire)
	buf[0] |= FlagResent
	if m.byRTO && s.rtt != nil && !now.Before(s.backoffAt.Add(s.rtt.RTO())) {
		// RFC 6298 §5.5: the timeout is too short or the path is down.
		// One doubling per timeout period, however many datagrams time
		// out in it. Backing off from the first timeout matters: when
		// the round trip lies between one and two timeouts, every
		// datagram times out once and is acknowledged before a second
		// timeout, Karn's rule gives no sample, and only the back-off
		// lets a later datagram be acknowledged in time.
		s.rtt.Backoff()
		s.backoffAt = now
	}
	m.resends++
	m.sentAt = now
	m.byRTO = false
	s.cc.OnSent(now, &m.pkt, n, true)
	s.resend.pushBack(m)
	s.Counters.Retransmits++
	return n
}

// detectLosses finds the reliable datagrams lost, oldest first: those
// whose resend timeout expired go to the lost list, to be resent; those
// that RACK shows lost (a datagram sent after them was acknowledged and a
// reordering window passed) go there too with Config.AckRTT, and
// otherwise to the suspect list, where they wait for the viewer's resend
// timeout but no longer hold the congestion window. A datagram that has
// used up Config.ResendLimit stays: its timeout ends the session (endAt).
func (s *Session) detectLosses(now time.Time) {
	expired := func(m *outMsg) (due, stop bool) {
		if now.Before(s.timeoutAt(m)) {
			return false, false
		}
		return true, s.cfg.ResendLimit >= 0 && m.resends >= s.cfg.ResendLimit
	}
	for m := s.suspect.head; m != nil; m = s.suspect.head {
		if due, stop := expired(m); !due || stop {
			break
		}
		s.move(m, &s.suspect, &s.lost, lost)
		m.byRTO = true
	}
	for m := s.resend.head; m != nil; m = s.resend.head {
		due, stop := expired(m)
		if stop {
			return
		}
		if due {
			s.move(m, &s.resend, &s.lost, lost)
			m.byRTO = true
		} else if at, ok := s.cc.LostAt(&m.pkt, s.roundTrip()); ok && !now.Before(at) {
			if s.rtt != nil {
				s.move(m, &s.resend, &s.lost, lost)
			} else {
				s.move(m, &s.resend, &s.suspect, suspect)
			}
			m.byRTO = false
		} else {
			return
		}
		s.cc.OnLost(now, &m.pkt, lossReason(m.byRTO))
	}
}

// move takes m from one list to the back of another.
func (s *Session) move(m *outMsg, from, to *msgList, st msgState) {
	from.remove(m)
	to.pushBack(m)
	m.list = st
}

// updateCC ends a controller event at now with the RTT sample sample (0
// for none).
func (s *Session) updateCC(now time.Time, sample time.Duration) {
	if s.cc.Update(now, congestion.RTT{Latest: sample, Smoothed: s.roundTrip(), RTO: s.rto()}) && s.rtt != nil {
		s.rtt.Backoff()
	}
}

// queuedSize is about the size of the datagram carrying m: header,
// number and body before zerocoding and acks.
func queuedSize(m *outMsg) int { return HeaderLen + 4 + len(m.body) }

// build writes into buf a datagram with the next sequence number carrying
// message number with body, and returns it without appended acks.
func (s *Session) build(buf []byte, flags byte, number uint32, body []byte) []byte {
	pk := Packet{Flags: flags, Seq: s.nextSeq, Message: number, Body: body}
	s.nextSeq = (s.nextSeq + 1) & seqMask
	return AppendPacket(buf[:0], &pk)
}

// sendQueued sends the oldest queued message.
func (s *Session) sendQueued(now time.Time, buf []byte) int {
	m := *s.queue.Front()
	if _, taken := s.unacked[s.nextSeq]; taken && m.reliable {
		// 2^24 datagrams went out while one stayed unacknowledged.
		s.Fail(fmt.Errorf("%w: lludp: sequence number %#x still unacknowledged after 2^24 datagrams", engine.ErrRetransmitLimit, s.nextSeq))
		return 0
	}
	s.queue.Pop()
	s.Counters.MessagesSent++
	if m.reliable {
		return len(s.appendAcks(s.sendReliable(now, buf, m, FlagZerocoded)))
	}
	b := s.appendAcks(s.build(buf, FlagZerocoded, m.number, m.body))
	s.cc.OnSentUnacked(now, len(b))
	s.pending--
	s.release(m)
	return len(b)
}

// sendReliable builds m's first transmission, stores it for resending and
// returns it without appended acks.
func (s *Session) sendReliable(now time.Time, buf []byte, m *outMsg, flags byte) []byte {
	m.seq = s.nextSeq
	b := s.build(buf, flags|FlagReliable, m.number, m.body)
	m.wire = append(m.wire[:0], b...)
	m.sentAt = now
	m.list, m.byRTO = inFlight, false
	s.cc.OnSent(now, &m.pkt, len(b), false)
	s.unacked[m.seq] = m
	s.resend.pushBack(m)
	return b
}

// appendAcks appends owed acks to the datagram b (docs/protocols/lludp.md §1.4, §3.3): the
// oldest first, at most min(250, (1200 − len(b))/4), within
// Config.MaxDatagram.
func (s *Session) appendAcks(b []byte) []byte {
	k := min(s.acks.len(), MaxAppendedAcks, (MTUBytes-len(b))/4, (s.cfg.MaxDatagram-len(b)-1)/4)
	if k <= 0 {
		return b
	}
	for range k {
		b = binary.BigEndian.AppendUint32(b, s.acks.pop())
	}
	b[0] |= FlagAppendedAcks
	return append(b, byte(k))
}

// sendPing sends a StartPingCheck (docs/protocols/lludp.md §3.7): the next PingID and
// OldestUnacked, our oldest unacknowledged reliable sequence number, or
// this datagram's own number when there is none (as the viewer).
func (s *Session) sendPing(now time.Time, buf []byte) int {
	oldest, age := s.nextSeq, uint32(0)
	for seq := range s.unacked {
		if a := (s.nextSeq - seq) & seqMask; a > age {
			oldest, age = seq, a
		}
	}
	s.pingID = s.nextPingID
	s.nextPingID++
	s.chal.Reprobe(uint32(s.pingID)) // during a challenge, each ping is a probe
	s.pingsOut = min(s.pingsOut+1, 0xFF)
	s.pingAt = now
	s.extraPing = time.Time{}
	var body [5]byte
	body[0] = s.pingID
	binary.LittleEndian.PutUint32(body[1:], oldest)
	return len(s.appendAcks(s.build(buf, 0, StartPingCheck, body[:])))
}

// sendPacketAck sends one PacketAck with the oldest owed acks (docs/protocols/lludp.md §1.6:
// u8 count, then little-endian IDs).
func (s *Session) sendPacketAck(buf []byte) int {
	room := min(MaxPacketAckIDs, (s.cfg.MaxDatagram-HeaderLen-4-1)/4)
	k := min(s.acks.len(), room)
	var body [1 + 4*MaxPacketAckIDs]byte
	for i := range k {
		binary.LittleEndian.PutUint32(body[1+4*i:], s.acks.pop())
	}
	if s.cfg.RepeatAcks {
		n := k + copyIDs(body[1+4*k:1+4*room], s.prevAcks)
		s.prevAcks = s.prevAcks[:0]
		for i := range k {
			s.prevAcks = append(s.prevAcks, binary.LittleEndian.Uint32(body[1+4*i:]))
		}
		k = n
	}
	body[0] = byte(k)
	return len(s.build(buf, 0, PacketAck, body[:1+4*k]))
}

// copyIDs writes as many of ids as fit into b, little-endian, and returns
// how many it wrote.
func copyIDs(b []byte, ids []uint32) int {
	n := min(len(ids), len(b)/4)
	for i, id := range ids[:n] {
		binary.LittleEndian.PutUint32(b[4*i:], id)
	}
	return n
}

// lossReason is the reason a message is declared lost: its timeout
// (byRTO) or RACK's time threshold.
func lossReason(byRTO bool) trace.LossReason {
	if byRTO {
		return trace.LossTimeout
	}
	return trace.LossTime
}
