package wirefox

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
)

// Poll applies the timers at now, then writes the next datagram due into
// buf and returns its length, or 0 when nothing is due. buf must hold
// Config.MaxDatagram bytes; with a shorter one nothing is written.
//
// Datagrams come in this order: out-of-band messages (handshake,
// ERROR_OCCURRED, DISCONNECT_ACK); an ack-only datagram when more than 10
// IDs are owed or the oldest has waited 10 ms
// (docs/protocols/wirefox.md §3.3); then, once connected and as the
// congestion controller allows, a data datagram: packets due again
// (NAKed, found lost by RACK, or past their timeout) first, then new
// segments taken from the channels by deficit round robin, as many as
// fit. Every datagram takes a new datagram ID.
func (s *Session) Poll(now time.Time, buf []byte) int {
	if s.State() == engine.StateClosed || len(buf) < s.cfg.MaxDatagram {
		return 0
	}
	s.now = now
	s.applyTimers(now)
	if s.State() == engine.StateClosed || s.cfg.ReferencePeer && now.Before(s.pace.next) {
		return 0
	}
	if len(s.oob) > 0 {
		m := s.oob[0]
		s.oob = s.oob[1:]
		seal := s.keys != nil && !m.plain
		n := len(AppendOOB(s.plainBuf(buf, seal)[:0], s.oobID, m.blob))
		s.oobID++
		n = s.seal(buf, n, seal)
		if len(s.oob) == 0 && s.failAfter != nil {
			err := s.failAfter
			if err == errGraceful {
				err = nil
			}
			s.Fail(err)
		}
		return s.sent(now, n, -1)
	}
	if s.phase == phaseProof && s.kaDue {
		return s.sent(now, s.writeKeepAlive(buf), int64(s.nextDgram))
	}
	if s.phase != phaseDone {
		return 0
	}
	seal := s.keys != nil
	id := int64(s.nextDgram)
	if at, ok := s.ackDue(); ok && !now.Before(at) {
		return s.sent(now, s.seal(buf, s.sendAcks(s.plainBuf(buf, seal)), seal), id)
	}
	n := 0
	if !s.cfg.ReferencePeer || !now.Before(s.pace.dataNext) {
		n = s.sendData(now, s.plainBuf(buf, seal))
	}
	if n == 0 && s.keepAliveDue() {
		n = s.writeKeepAlive(s.plainBuf(buf, seal))
	}
	return s.sent(now, s.seal(buf, n, seal), id)
}

// minPacket is the shortest packet: its header without a channel
// sequence.
const minPacket = 7

// keepAliveDue reports whether a keepalive goes out now that no data
// did. With Config.ReferencePeer, data waiting for its gap (refDataGap)
// goes first instead: it probes as well, and a keepalive now would put
// it off by another gap.
func (s *Session) keepAliveDue() bool {
	return s.kaDue && s.State() != engine.StateClosed && !(s.cfg.ReferencePeer && s.hasData())
}

// writeKeepAlive writes the keepalive (see Config.KeepAlive): a data
// datagram (DAT|LNK) without packets, its data section two zero bytes,
// fewer than minPacket. The reference acknowledges it as any data
// datagram (CongestionControl::NotifyReceivedDatagram) and reads no
// packet from it; without the two bytes it would drop the connection:
// DatagramHeader::Deserialize (source/DatagramHeader.cpp) wants 4 bytes
// left before it reads the 2-byte data length.
func (s *Session) writeKeepAlive(buf []byte) int {
	s.kaDue = false
	d := Datagram{Flags: FlagDAT | FlagLNK, ID: s.nextDgram, DataLen: 2, Data: []byte{0, 0}}
	s.nextDgram++
	return len(AppendDatagram(buf[:0], &d))
}

// plainBuf is where a datagram's plaintext is built in buf: after the
// nonce and MAC when it is to be sealed in place.
func (s *Session) plainBuf(buf []byte, seal bool) []byte {
	if seal {
		return buf[Overhead:]
	}
	return buf
}

// seal encrypts the n-byte plaintext at buf[Overhead:] in place with a
// nonce from Rand when seal is set (docs/protocols/wirefox.md §1.7), and
// returns the datagram's length. If Rand fails, the session fails and
// nothing is sent.
func (s *Session) seal(buf []byte, n int, seal bool) int {
	if !seal || n == 0 {
		return n
	}
	nonce := (*[NonceSize]byte)(buf)
	if _, err := io.ReadFull(s.cfg.Rand, nonce[:]); err != nil {
		s.Fail(fmt.Errorf("wirefox: nonce: %w", err))
		return 0
	}
	return len(SealDatagram(buf[:0], &s.keys.Tx, nonce, buf[Overhead:Overhead+n]))
}

// maxPlain is the largest plaintext of a datagram: Config.MaxDatagram,
// less the nonce and MAC with encryption.
func (s *Session) maxPlain() int {
	if s.cfg.Encrypt {
		return s.cfg.MaxDatagram - Overhead
	}
	return s.cfg.MaxDatagram
}

// errGraceful marks a session that ends without error once its
// out-of-band messages are out.
var errGraceful = fmt.Errorf("wirefox: closed")

// sent counts a datagram of n bytes (none when 0), connected datagram
// dg or out-of-band (-1), and returns n.
func (s *Session) sent(now time.Time, n int, dg int64) int {
	if n > 0 && s.cfg.ReferencePeer {
		s.pace.sent(now, dg, n)
	}
	return s.Sent(n)
}

// applyTimers applies the timers due at now.
func (s *Session) applyTimers(now time.Time) {
	if s.Linger(s.cfg.Linger).Due(now) {
		s.Fail(engine.LingerError(s.pending))
		return
	}
	if end := s.endAt(); end.Due(now) {
		if end.Err == engine.ErrIdleTimeout && s.State() == engine.StateClosing && s.pending == 0 {
			end.Err = nil // all acknowledged: the peer is gone, its DISCONNECT_ACK lost
		}
		s.Fail(end.Err)
		return
	}
	if s.phase != phaseDone {
		switch {
		case s.phase == phaseInitial && s.failAfter == nil && !now.Before(s.hsNext):
			if s.hsSent >= HandshakeAttempts && s.cfg.HandshakeTimeout == 0 {
				s.Fail(fmt.Errorf("%w: wirefox: no answer after %d attempts", engine.ErrHandshakeTimeout, s.hsSent))
				return
			}
			s.sendAgain(now)
		case s.phase == phaseProof && !now.Before(s.hsNext):
			if s.hsSent >= proofAttempts {
				s.Fail(fmt.Errorf("%w: wirefox: the client acknowledged none of %d probes", engine.ErrHandshakeTimeout, s.hsSent))
				return
			}
			s.kaDue = true // the probe: see proves
			s.hsSent++
			s.hsNext = now.Add(proofInterval)
		}
		return
	}
	s.nakGaps(now)
	if s.cfg.ReferencePeer {
		avg, _, _ := s.rttStats()
		s.pace.expire(now, avg)
	}
	if s.chal.Running() && !now.Before(s.chal.Until) {
		if s.chal.Expire(now) == engine.ChallengeClose {
			s.takeClose(now) // unanswered: the peer closed
		}
	}
	if s.chal.Running() && !now.Before(s.lastKA.Add(s.probeInterval())) {
		s.kaDue, s.lastKA = true, now // the challenge's next probe
	}
	if !s.peerCloseAt.IsZero() && (s.pending == 0 || !now.Before(s.peerCloseAt)) {
		s.answerClose()
	}
	lost := false
	for p := s.inflight.head; p != nil && !now.Before(s.timeoutAt(p)); p = s.inflight.head {
		if rec := s.dgrams[p.dg]; rec != nil {
			s.loseDgram(now, rec, trace.LossTimeout)
		} else {
			s.due(p)
		}
		lost = true
	}
	for s.dgOrder.Len() > 0 {
		rec := s.dgrams[*s.dgOrder.Front()]
		if rec == nil {
			s.dgOrder.Pop()
			continue
		}
		if at, ok := s.cc.LostAt(&rec.cc, s.smoothed()); !ok || now.Before(at) {
			break
		}
		s.dgOrder.Pop()
		s.loseDgram(now, rec, trace.LossTime)
		lost = true
	}
	if lost {
		s.updateCC(now, 0)
	}
	if s.State() == engine.StateClosing && s.pending == 0 && !s.discSent && s.failAfter == nil && s.peerCloseAt.IsZero() {
		s.discSent = true
		m := &outMsg{blob: []byte{CmdDisconnectRequest}, opts: OptReliable, internal: true}
		s.queue(m)
	}
	if at, ok := s.keepAliveAt(); ok && !now.Before(at) {
		s.kaDue = true
		s.lastKA = now
		engine.TraceKeepAlive(s.cfg.Tracer, now)
	}
}

// keepAliveAt returns when the next keepalive is due once established:
// Config.KeepAlive after the later of the last datagram from the peer and
// the last keepalive, so that an end that hears from its peer never sends
// one (the peer's keepalives, answered at once, keep both alive).
func (s *Session) keepAliveAt() (time.Time, bool) {
	if s.State() != engine.StateEstablished {
		return time.Time{}, false
	}
	return engine.KeepAliveAt(s.cfg.KeepAlive, s.LastRecv, s.lastKA)
}

// timeoutAt is when packet p, in flight, is resent by timeout: the
// reference's RTO times its sends (linear back-off) after it was last
// sent, or after the latest acknowledgement if later, as the controller
// restarts the timer (congestion.Controller.TimerStart): RACK and NAKs
// find ordinary losses, and a stall longer than the RTO makes the flight
// late, not lost.
func (s *Session) timeoutAt(p *outPkt) time.Time {
	return s.cc.TimerStart(p.sentAt).Add(s.rto() * time.Duration(p.sends))
}

// smoothed is the round-trip estimate given to the congestion controller.
func (s *Session) smoothed() time.Duration {
	avg, _, _ := s.rttStats()
	if avg == 0 {
		return rtoInitial
	}
	return avg
}

// updateCC ends a controller event with the RTT sample sample (0: none).
func (s *Session) updateCC(now time.Time, sample time.Duration) {
	s.cc.Update(now, congestion.RTT{Latest: sample, Smoothed: s.smoothed(), RTO: s.rto()})
}

// loseDgram takes rec as lost, for reason: its packets whose latest
// transmission it carried are due again (docs/protocols/wirefox.md §3.4).
func (s *Session) loseDgram(now time.Time, rec *sentDgram, reason trace.LossReason) {
	delete(s.dgrams, rec.id)
	s.cc.OnLost(now, &rec.cc, reason)
	for _, p := range rec.packets {
		if p.dg == rec.id && !p.acked && !p.due {
			s.due(p)
		}
	}
}

// due takes p off the in-flight list and queues it to be sent again.
func (s *Session) due(p *outPkt) {
	s.unlink(p)
	p.due = true
	s.dueQ.Push(p)
}

// unlink takes p off the in-flight list if it is on it.
func (s *Session) unlink(p *outPkt) {
	if p.prev == nil && s.inflight.head != p {
		return
	}
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		s.inflight.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		s.inflight.tail = p.prev
	}
	p.prev, p.next = nil, nil
}

// link appends p to the in-flight list.
func (s *Session) link(p *outPkt) {
	p.prev = s.inflight.tail
	if p.prev != nil {
		p.prev.next = p
	} else {
		s.inflight.head = p
	}
	s.inflight.tail = p
}

// ackDue returns when the owed ACKs and NAKs go out: at once when more
// than 10 are owed or when closing (before the DISCONNECT_REQUEST, whose
// answer ends the session: what was taken is acknowledged), else 10 ms
// after the oldest.
func (s *Session) ackDue() (time.Time, bool) {
	n := len(s.owedAcks) + len(s.owedNaks)
	switch {
	case n == 0:
		return time.Time{}, false
	case n > ackThreshold || s.State() == engine.StateClosing:
		return s.now, true
	}
	return s.owedSince.Add(ackDelay), true
}

// sendAcks writes an ack-only datagram: up to 64 NAKs, then as many ACKs
// as fit (at most 256), with Config.RepeatAcks followed by those of the
// previous ack-only datagram as far as room allows.
func (s *Session) sendAcks(buf []byte) int {
	k := min(len(s.owedNaks), 64)
	room := min(MaxList, (s.maxPlain()-5-2-4*k)/4)
	a := min(len(s.owedAcks), room)
	d := Datagram{Flags: FlagLNK, ID: s.nextDgram, Acks: s.owedAcks[:a], Naks: s.owedNaks[:k]}
	if s.cfg.RepeatAcks {
		fresh := len(s.prevAcks)
		s.prevAcks = append(s.prevAcks, s.owedAcks[:a]...)
		d.Acks = append(s.ackScratch[:0], s.owedAcks[:a]...)
		d.Acks = append(d.Acks, s.prevAcks[:min(fresh, room-a)]...)
		s.ackScratch = d.Acks
		s.prevAcks = s.prevAcks[:copy(s.prevAcks, s.prevAcks[fresh:])]
	}
	n := len(AppendDatagram(buf[:0], &d))
	s.nextDgram++
	s.owedAcks = s.owedAcks[:copy(s.owedAcks, s.owedAcks[a:])]
	s.owedNaks = s.owedNaks[:copy(s.owedNaks, s.owedNaks[k:])]
	s.owedSince = s.now
	return n
}

// hasData reports whether a data datagram has something to carry.
func (s *Session) hasData() bool {
	for s.dueQ.Len() > 0 && !(*s.dueQ.Front()).due {
		s.dueQ.Pop()
	}
	return s.dueQ.Len() > 0 || s.active.Len() > 0 && !s.windowFull() && s.newFits()
}

// newFits reports whether the next new packet fits the reference's
// window with Config.ReferencePeer (always without).
func (s *Session) newFits() bool {
	if !s.cfg.ReferencePeer {
		return true
	}
	_, m := s.nextMsg()
	return m != nil && newPacketLen(m) <= s.pace.room()
}

// newPacketLen is the encoded length of the next segment of m.
func newPacketLen(m *outMsg) int {
	return packetHeaderLen(segFlags(m, m.next), m.ch, m.nseg > 1) + segLen(m, m.next)
}

// windowFull reports whether the packet IDs outstanding reach
// packetWindow: no new packet is sent until the oldest is acknowledged,
// so the peer's packet history always tells new from duplicate.
func (s *Session) windowFull() bool {
	return s.unackedN > 0 && s.nextPkt-s.oldestUnacked() >= packetWindow
}

// sendData writes a data datagram (DAT|LNK) if one is due and the
// congestion controller allows it.
func (s *Session) sendData(now time.Time, buf []byte) int {
	if !s.hasData() {
		if s.cc.Room() > 0 {
			s.cc.AppLimited()
		}
		return 0
	}
	if !s.cc.CanSend(now, s.cfg.MaxDatagram) {
		return 0
	}
	const hdr = 7
	id := s.nextDgram
	b := buf[:hdr]
	var rec *sentDgram
	resend := false
	track := func(p *outPkt) {
		if rec == nil {
			rec = &sentDgram{id: id, sentAt: now}
		}
		p.sends++
		p.sentAt, p.dg = now, id
		s.link(p)
		rec.packets = append(rec.packets, p)
		if p.sends > 1 {
			resend = true
			s.Counters.Retransmits++
		}
	}
	for s.dueQ.Len() > 0 {
		p := *s.dueQ.Front()
		if !p.due {
			s.dueQ.Pop()
			continue
		}
		pk := s.packetOf(p.msg, p.index, p.id)
		if len(b)+pk.PacketLen() > s.maxPlain() {
			break
		}
		if s.cfg.SendLimit > 0 && p.sends >= s.cfg.SendLimit {
			s.Fail(fmt.Errorf("%w: wirefox: packet %d unacknowledged after %d sends", engine.ErrRetransmitLimit, p.id, p.sends))
			return 0
		}
		s.dueQ.Pop()
		p.due = false
		b = AppendPacket(b, &pk)
		track(p)
	}
	room := s.maxPlain() // new packets' bytes: the reference's window room with ReferencePeer
	if s.cfg.ReferencePeer {
		room = s.pace.room()
	}
	for !s.windowFull() {
		ch, m := s.nextMsg()
		if m == nil {
			break
		}
		i := m.next
		size := newPacketLen(m)
		if len(b)+size > s.maxPlain() || size > room {
			break
		}
		room -= size
		if i == 0 && m.nseg > 1 {
			m.container = s.nextPkt // reserved for the whole message (§3.1)
			s.nextPkt++
		}
		if i == 0 && !m.internal {
			s.Counters.MessagesSent++
		}
		p := &outPkt{msg: m, index: i, id: s.nextPkt}
		s.nextPkt++
		pk := s.packetOf(m, i, p.id)
		b = AppendPacket(b, &pk)
		m.next++
		s.chans[ch].deficit -= size
		if m.next == m.nseg {
			s.chans[ch].txq.Pop()
		}
		if m.reliable() || m.nseg > 1 { // every segment is sent reliably (§3.6)
			m.unacked++
			s.unackedN++
			s.byID.Push(p)
			track(p)
		} else {
			s.done(m)
		}
	}
	if len(b) == hdr {
		return 0
	}
	s.kaDue = false // the peer acknowledges this datagram as well
	b[0] = FlagDAT | FlagLNK
	binary.BigEndian.PutUint32(b[1:], id)
	binary.BigEndian.PutUint16(b[5:], uint16(len(b)-hdr))
	s.nextDgram++
	wire := len(b) + s.cfg.MaxDatagram - s.maxPlain()
	if rec != nil {
		s.cc.OnSent(now, &rec.cc, wire, resend)
		if s.dgrams == nil {
			s.dgrams = make(map[uint32]*sentDgram) // freed by Trim
		}
		s.dgrams[id] = rec
		s.dgOrder.Push(id)
	} else {
		s.cc.OnSentUnacked(now, wire)
	}
	return len(b)
}

// nextMsg returns the channel and message whose next segment goes out
// next, by deficit round robin over the channels with something queued
// (as POROUS does): each may send about a datagram's worth in its turn,
// so a small message on one channel never waits behind another's bulk.
func (s *Session) nextMsg() (uint8, *outMsg) {
	for s.active.Len() > 0 {
		ch := *s.active.Front()
		c := &s.chans[ch]
		if c.txq.Len() == 0 {
			s.active.Pop()
			c.listed, c.deficit = false, 0
			continue
		}
		m := *c.txq.Front()
		if c.deficit >= segLen(m, m.next) {
			return ch, m
		}
		c.deficit += s.quantum()
		s.active.Pop()
		s.active.Push(ch)
	}
	return 0, nil
}

// segLen is the length of segment i of m.
func segLen(m *outMsg, i int) int {
	return min(len(m.blob)-i*SegmentSize, SegmentSize)
}

// segFlags are the packet flags of segment i of m: SEG on all but the
// last, BIG on all when the payload is 65,535 bytes or more (§3.6).
func segFlags(m *outMsg, i int) byte {
	var f byte
	if i < m.nseg-1 {
		f |= PacketSEG
	}
	if len(m.blob)-1 >= bigThreshold {
		f |= PacketBIG
	}
	return f
}

// packetOf builds the packet of segment i of m with packet ID id.
func (s *Session) packetOf(m *outMsg, i int, id uint32) Packet {
	off := i * SegmentSize
	p := Packet{
		Flags:   segFlags(m, i),
		ID:      id,
		Options: m.opts,
		Channel: m.ch,
		Seq:     m.seq,
		Offset:  uint32(off),
		Body:    m.blob[off : off+segLen(m, i)],
	}
	if m.nseg > 1 {
		p.Container, p.Index = m.container, uint32(i)
	}
	return p
}

// oldestUnacked returns the ID of the oldest reliable packet not yet
// acknowledged; unackedN must be positive.
func (s *Session) oldestUnacked() uint32 {
	for (*s.byID.Front()).acked {
		s.byID.Pop()
	}
	return (*s.byID.Front()).id
}
