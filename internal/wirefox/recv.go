package wirefox

import (
	"errors"
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
)

var (
	errTooLong = fmt.Errorf("%w: wirefox: datagram longer than %d bytes", engine.ErrMalformed, RecvBuffer)
	errChannel = fmt.Errorf("%w: wirefox: packet on a channel not in the table", engine.ErrRejected)
	errEmpty   = fmt.Errorf("%w: wirefox: packet without a command byte", engine.ErrMalformed)
	errAhead   = fmt.Errorf("%w: wirefox: datagram or packet ID implausibly far ahead", engine.ErrRejected)
)

// HandleDatagram processes one datagram received at now
// (docs/protocols/wirefox.md §3.3). It returns engine.ErrClosed in
// StateClosed; an error wrapping engine.ErrMalformed for a datagram
// longer than RecvBuffer or that does not parse (header or any packet);
// an error wrapping engine.ErrRejected for a connected datagram before
// the handshake, a packet on a channel not in Config.Channels (the
// reference would terminate), a peer's key of low order (ErrBadKey),
// after the key exchange a datagram that does not open (ErrDecrypt; the
// reference would end the connection), or, on an Accept session,
// anything before an INITIAL_CLIENT; engine.ErrPeerRestarted when a new client took the
// peer's address (see the package doc), a datagram or packet ID more than
// half its history past the newest seen (see history.plausible). Only
// ErrPeerRestarted changes state; the rejected datagrams are counted in
// Stats.PacketsRejected. A server waiting for the proof of the client's
// address drops, without an error, a connected datagram that does not
// acknowledge one of its probes (see the package doc).
func (s *Session) HandleDatagram(now time.Time, b []byte) error {
	return s.Input(func() error { return s.input(now, b) })
}

// input is HandleDatagram once open.
func (s *Session) input(now time.Time, b []byte) error {
	var err error
	d := &s.dg
	size := len(b)
	if size > RecvBuffer {
		err = errTooLong
	} else if err = s.open(now, &b); err == nil {
		if b == nil {
			return nil // a repeat of the peer's plaintext key exchange, answered
		}
		if err = ParseDatagram(b, d); err == nil {
			s.now = now
			if d.Flags&FlagLNK == 0 {
				err = s.handleOOB(now, d)
			} else {
				err = s.handleLNK(now, d)
			}
		}
	}
	d.Data = nil
	clear(s.pkts)
	if err == nil || errors.Is(err, engine.ErrPeerRestarted) {
		s.Heard(now, size)
	}
	return err
}

// open replaces *b, a datagram received after the key exchange, with its
// plaintext (docs/protocols/wirefox.md §1.7). One that does not open is
// ErrDecrypt, dropped without ending the session (the reference ends the
// connection), unless it is the peer's plaintext AUTH_MSG key exchange
// repeated because our answer to it was lost: then the answer is sent
// again and *b set to nil.
func (s *Session) open(now time.Time, b *[]byte) error {
	if s.keys == nil {
		return nil
	}
	c := s.cryptoOf()
	if c.rxBuf == nil {
		c.rxBuf = make([]byte, 0, RecvBuffer)
	}
	plain, err := OpenDatagram(c.rxBuf[:0], &s.keys.Rx, *b)
	if err == nil {
		*b = plain
		return nil
	}
	var h Handshake
	if ParseDatagram(*b, &s.dg) != nil || s.dg.Flags&FlagLNK != 0 {
		return err
	}
	blob, perr := ParseOOB(&s.dg)
	if perr != nil || ParseHandshake(blob, &h) != nil || h.Op != OpAuthMsg || h.PeerID != s.peerID ||
		len(h.Data) < 1+KeySize || h.Data[0] != AuthKeyExchange {
		return err
	}
	s.sendAgain(now)
	*b = nil
	return nil
}

// handleLNK processes a connected datagram.
func (s *Session) handleLNK(now time.Time, d *Datagram) error {
	if s.phase != phaseDone && (s.cfg.Client || s.phase == phaseWait || s.cfg.Encrypt && s.authWant != AuthDone) {
		return errEarlyLNK
	}
	pkts := s.pkts[:0]
	// Fewer than minPacket bytes left hold no packet: the reference's
	// parser stops there too (PacketHeader::Deserialize,
	// source/PacketHeader.cpp), and the keepalive carries 2 (see
	// writeKeepAlive).
	for rest := d.Data; len(rest) >= minPacket; {
		var p Packet
		n, err := ParsePacket(rest, &p)
		if err != nil {
			return err
		}
		switch {
		case int(p.Channel) > len(s.cfg.Channels):
			return errChannel
		case !p.Split() && len(p.Body) == 0:
			return errEmpty
		case !s.pktHist.plausible(p.ID):
			return errAhead
		}
		pkts = append(pkts, p)
		rest = rest[n:]
	}
	if !s.dgHist.plausible(d.ID) {
		return errAhead
	}
	s.pkts = pkts
	// A connected datagram from a client whose INITIAL_SERVER we answered
	// stands for its lost UNENCRYPTED_ACK (§5; the reference would end the
	// connection).
	s.established(now)
	if s.phase == phaseProof {
		if !s.proves(d.Acks) {
			return nil // dropped unacknowledged, packets and all
		}
		s.connected(now)
	}
	if s.dgHist.has(d.ID) {
		s.Counters.Duplicates++
		return nil
	}
	s.arrived(now, d.ID)
	var sample time.Duration
	for _, id := range d.Acks {
		if s.answers(id) {
			s.chal.Answer(now, s.chal.Probe)
			s.Counters.SpoofsRefused++
		}
		if rtt, ok := s.ackDgram(now, id); ok {
			sample = rtt
		}
	}
	for _, id := range d.Naks {
		if rec := s.dgrams[id]; rec != nil {
			s.loseDgram(now, rec, trace.LossNAK)
		}
	}
	if len(d.Acks)+len(d.Naks) > 0 {
		s.updateCC(now, sample)
	}
	if s.cfg.ReferencePeer {
		for _, id := range d.Acks {
			s.pace.acked(id)
		}
		if len(d.Naks) > 0 {
			s.pace.naked()
		}
	}
	if s.discSent || s.State() == engine.StateClosed {
		// After our DISCONNECT_REQUEST nothing more is taken or
		// acknowledged, so that a challenge of it finds us gone; but the
		// peer's own DISCONNECT_REQUEST, a close crossing ours, is
		// answered, or each side would wait for the other's
		// DISCONNECT_ACK until its linger ran out. Everything of ours is
		// acknowledged by then (see discSent), so nothing is lost.
		s.dgHist.add(d.ID)
		if s.discSent && s.failAfter == nil && hasDisconnect(pkts) {
			s.answerClose()
		}
		return nil
	}
	// While SetRecvOpen(false) holds, or engine.MaxRecvQueue messages
	// wait for Recv, a datagram carrying a packet not seen before is not
	// acknowledged and its new packets are dropped (counted in
	// Stats.Refused), so the peer resends them; its acknowledgements and
	// NAKs are applied. New packets are taken all or none: an ACK covers
	// the whole datagram, so no packet may be taken unacknowledged.
	refused := false
	if s.Refusing() {
		for i := range pkts {
			if !s.pktHist.has(pkts[i].ID) {
				s.refusePacket("receive queue full or closed")
				refused = true
			}
		}
	}
	for i := range pkts {
		if !refused && s.takePacket(now, &pkts[i]) {
			refused = true
		}
	}
	if refused {
		return nil // unacknowledged: the peer sends its packets again
	}
	s.dgHist.add(d.ID)
	if d.Flags&FlagDAT != 0 && len(s.owedAcks) < maxOwedAcks {
		s.owe(&s.owedAcks, d.ID)
		if len(pkts) == 0 && s.cfg.KeepAlive > 0 {
			s.owedSince = s.now.Add(-ackDelay) // a keepalive: answered at once
		}
	}
	return nil
}

// arrived notes datagram id: the IDs it skips become gaps, and a gap it
// fills is one no more. Unlike the reference, which NAKs every skipped ID
// at once and takes a late datagram's ID as the new highest (§3.3, §4 bug
// 5), a gap is NAKed only once reorderDistance later IDs arrived and
// reorderDelay passed (as RACK's reordering window, RFC 8985 §6.2), so
// that reordering does not cause resends; a datagram lost at the tail is
// left to the sender's timeout.
func (s *Session) arrived(now time.Time, id uint32) {
	switch gap := int32(id - s.expected); {
	case !s.gotFirst:
		s.expected, s.gotFirst = id+1, true
	case gap >= 0:
		for x := s.expected; x != id && len(s.gaps) < maxOwedNaks; x++ {
			s.gaps = append(s.gaps, gapID{id: x, since: now})
		}
		s.expected = id + 1
	default:
		for i, g := range s.gaps {
			if g.id == id {
				s.gaps = append(s.gaps[:i], s.gaps[i+1:]...)
				break
			}
		}
	}
	s.nakGaps(now)
}

// gapID is a datagram ID skipped at since.
type gapID struct {
	id    uint32
	since time.Time
}

// Reordering allowance before a gap is NAKed: reorderDistance later
// datagram IDs, and reorderDelay.
const reorderDistance = 3

// reorderDelay is a quarter of the RTT estimate, at least 1 ms.
func (s *Session) reorderDelay() time.Duration { return max(s.smoothed()/4, time.Millisecond) }

// nakGaps owes NAKs for the gaps that outlived the reordering allowance
// at now.
func (s *Session) nakGaps(now time.Time) {
	n := 0
	for _, g := range s.gaps {
		if int32(s.expected-1-g.id) < reorderDistance || now.Before(g.since.Add(s.reorderDelay())) {
			break
		}
		if len(s.owedNaks) < maxOwedNaks {
			s.owe(&s.owedNaks, g.id)
		}
		n++
	}
	s.gaps = s.gaps[:copy(s.gaps, s.gaps[n:])]
}

// owe queues id on list.
func (s *Session) owe(list *[]uint32, id uint32) {
	if len(s.owedAcks)+len(s.owedNaks) == 0 {
		s.owedSince = s.now
	}
	*list = append(*list, id)
}

// ackDgram applies the peer's ACK of our datagram id, returning its RTT.
func (s *Session) ackDgram(now time.Time, id uint32) (time.Duration, bool) {
	rec := s.dgrams[id]
	if rec == nil {
		return 0, false
	}
	delete(s.dgrams, id)
	s.cc.OnAcked(now, &rec.cc)
	rtt := now.Sub(rec.sentAt)
	s.sample(rtt)
	for _, p := range rec.packets {
		if p.dg == id && !p.acked {
			s.pktAcked(p)
		}
	}
	return rtt, true
}

// pktAcked retires a reliable packet the peer acknowledged.
func (s *Session) pktAcked(p *outPkt) {
	p.acked, p.due = true, false
	s.unlink(p)
	s.unackedN--
	m := p.msg
	if m.unacked--; m.unacked == 0 && m.next == m.nseg {
		s.done(m)
	}
}

// hasDisconnect reports whether pkts hold a DISCONNECT_REQUEST.
func hasDisconnect(pkts []Packet) bool {
	for i := range pkts {
		if !pkts[i].Split() && len(pkts[i].Body) > 0 && pkts[i].Body[0] == CmdDisconnectRequest {
			return true
		}
	}
	return false
}

// takePacket processes one packet of an accepted datagram and reports
// whether it was refused (not taken, so the datagram is not
// acknowledged).
func (s *Session) takePacket(now time.Time, p *Packet) (refused bool) {
	if s.pktHist.has(p.ID) {
		s.Counters.Duplicates++
		return false
	}
	if p.Split() {
		refused = s.reassemble(p)
	} else if cmd := p.Body[0]; cmd >= CmdUser {
		refused = s.deliver(p.Channel, p.Seq, p.Options, append([]byte(nil), p.Body...), true)
	} else if cmd == CmdDisconnectRequest {
		if !s.challenged(now, engine.ChallengeClose) {
			return true // the peer sends it again; taken once the challenge runs out
		}
		s.takeClose(now)
	}
	// Other internal commands (RPC_SIGNAL, PONG) are dropped.
	if !refused {
		s.pktHist.add(p.ID)
		s.refusedRun = false
	}
	return refused
}

// takeClose takes the peer's close (§3.7) at now: the session answers it
// with DISCONNECT_ACK and ends once that is out. With messages of ours
// unacknowledged it first waits, at most closeWait, for the ACKs the
// reference still sends: its ACKs wait 10 ms, so its DISCONNECT_REQUEST,
// sent in the next write cycle after our last message arrived, may come
// first.
func (s *Session) takeClose(now time.Time) {
	if s.failAfter != nil || !s.peerCloseAt.IsZero() {
		return
	}
	if w := s.closeWait(); s.pending > 0 && w > 0 {
		s.peerCloseAt = now.Add(w)
		return
	}
	s.answerClose()
}

// closeWait bounds the wait of takeClose: the reference's ACK delay
// (10 ms, CongestionControlWindow::GetNeedsToSendAcks) and write cycle
// (5 ms) after a round trip, for a datagram of ours that was on its way
// when the peer sent its DISCONNECT_REQUEST; but short enough that our
// DISCONNECT_ACK, a round trip after that request was sent, comes back
// within the reference's 200 ms linger (refLinger): beyond it the
// reference's worker thread returns (docs/protocols/wirefox.md §4 bug 8).
func (s *Session) closeWait() time.Duration {
	rtt := s.smoothed()
	return min(ackDelay+refTick+rtt, refLinger-refTick-rtt)
}

// answerClose queues DISCONNECT_ACK and ends the session once it is out:
// with engine.ErrPeerClosed when messages of ours are still
// unacknowledged.
func (s *Session) answerClose() {
	s.peerCloseAt = time.Time{}
	s.oob = append(s.oob, oobMsg{blob: []byte{CmdDisconnectAck}, plain: s.keys == nil})
	s.failAfter = errGraceful
	if s.pending > 0 {
		s.failAfter = engine.Unconfirmed(engine.ErrPeerClosed, s.pending)
	}
}

// push queues a message for Recv.
func (s *Session) push(ch uint8, opts byte, data []byte) {
	if data != nil {
		s.Inbox.Push(engine.Message{Data: data, Channel: ch, Reliable: opts&OptReliable != 0})
	}
}
