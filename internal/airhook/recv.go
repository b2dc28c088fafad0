package airhook

import (
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
)

var (
	errUnknownSession = fmt.Errorf("%w: airhook: no peer session known and no session ID in the packet", engine.ErrRejected)
	errWrongSession   = fmt.Errorf("%w: airhook: observed session is not ours", engine.ErrRejected)
	errObservedRange  = fmt.Errorf("%w: airhook: observed sequence octet outside the range we sent", engine.ErrRejected)
)

// HandleDatagram processes one datagram received at now, in the order of
// docs/protocols/airhook.md §3.3. It returns:
//   - an error wrapping engine.ErrMalformed if b does not decode (see
//     Decode; ErrOutOfBand for flag bit 7);
//   - an error wrapping engine.ErrRejected if no peer session is known and
//     b carries none, if its observed session is not ours, if its
//     observed sequence octet lies outside the range we sent;
//   - engine.ErrPeerRestarted if Config.RejectNewPeerSession is set and b
//     carries a session ID other than the known peer's;
//   - engine.ErrClosed in StateClosed;
//   - nil otherwise, including for a packet older than the newest one
//     accepted, which is ignored and counted in Stats.Duplicates, and for
//     a packet whose messages are refused (see SetRecvOpen).
//
// Rejected datagrams are counted in Stats.PacketsRejected; no error
// changes any protocol state. Messages are copied; b may be reused at once.
func (s *Session) HandleDatagram(now time.Time, b []byte) error {
	return s.Input(func() error {
		p := &s.pkt
		err := Decode(b, p)
		if err == nil {
			err = s.handle(now, p, len(b))
		}
		clear(p.Messages) // keep no reference to b
		p.Missed = nil
		return err
	})
}

// handle applies the sequence and session checks to a decoded packet of n
// bytes and accepts it when they pass.
func (s *Session) handle(now time.Time, p *Packet, n int) error {
	newPeer := p.Session != 0 && p.Session != s.peer
	if !newPeer {
		if s.peer == 0 {
			return errUnknownSession
		}
		if p.Seq != s.lastAccepted && engine.Within16(p.Seq, s.lastAccepted-255, s.lastAccepted) {
			// Counted, but not as a sign of life: if a forged or corrupted
			// packet has moved lastAccepted ahead of the peer's numbers,
			// the peer's packets all look old, and the session must then
			// reach its idle timeout rather than stall unnoticed.
			s.now = now
			s.Counters.PacketsReceived++
			s.Counters.BytesReceived += uint64(n)
			s.Counters.Duplicates++
			return nil
		}
	}
	if err := s.check(p, newPeer); err != nil {
		return err
	}
	if newPeer && s.peer != 0 && !s.challenged(now) {
		return nil // the live session is asked first: see challenged
	}
	if newPeer && s.peer != 0 && s.cfg.RejectNewPeerSession {
		return engine.ErrPeerRestarted
	}
	refuse := len(p.Messages) > 0 && (newPeer || p.Seq != s.lastAccepted) && s.Refusing()
	if refuse {
		s.Counters.Refused += uint64(len(p.Messages))
	}
	s.received(now, n)
	s.accept(now, p, newPeer, refuse)
	return nil
}

// received accounts for a datagram that came from the peer.
func (s *Session) received(now time.Time, n int) {
	s.now = now
	s.Heard(now, n)
}

// check applies the rejections of docs/protocols/airhook.md §3.3 steps 3–4 without changing
// any state. The reference resets its session state for a new peer session
// before the observed-session check and keeps that reset when the check
// fails (docs/protocols/airhook.md §4.5); here the whole packet is refused first.
func (s *Session) check(p *Packet, newPeer bool) error {
	if p.ObservedSession != 0 && p.ObservedSession != s.own {
		return errWrongSession
	}
	knows := s.peerKnowsUs && !newPeer || p.ObservedSession != 0
	if !knows {
		return nil
	}
	lo := s.confirmed
	if newPeer && s.peerKnowsUs {
		lo = uint8(s.lastSent) // what adopting the new peer would write off
	}
	if !engine.Within8(p.ObservedSeq, lo, uint8(s.lastSent)) {
		return errObservedRange
	}
	return nil
}

// accept processes a packet that passed check (docs/protocols/airhook.md §3.3 steps 2–10).
// A packet whose messages are refused (see SetRecvOpen) is taken as its
// header repeat would be, without them: its messages are detected missed
// and the peer sends them again.
func (s *Session) accept(now time.Time, p *Packet, newPeer, refuse bool) {
	if newPeer {
		s.adoptPeer(p)
	}
	next, msgs := p.Next, p.Messages
	if refuse {
		next += uint8(len(msgs))
		msgs = nil
	}
	if !newPeer && p.Seq == s.lastAccepted {
		// Header repeat (or duplicate): confirmation, E and missed list
		// count, messages are not delivered again.
		next += uint8(len(msgs))
		if len(msgs) > 0 {
			s.Counters.Duplicates++
		}
		msgs = nil
	}
	probe := !newPeer && p.Seq != s.lastAccepted && len(p.Messages) == 0 &&
		len(p.Missed) == 0 && next == s.nextIn

	oldConfirmed, oldIn := s.confirmed, s.confirmedIn()
	if p.ObservedSession != 0 {
		s.peerKnowsUs = true
	}
	if s.peerKnowsUs {
		o := p.ObservedSeq
		if s.push == pushSent && inRange(uint8(s.pushSeq), s.confirmed+1, o+1) {
			s.push = pushDone
		}
		s.setConfirmed(o)
	}
	old, conf, confIn := s.rec(oldConfirmed), s.rec(s.confirmed), s.confirmedIn()
	s.lastAccepted = p.Seq
	if !newPeer {
		s.answered()
	}

	s.cullMissed(oldIn, confIn)
	s.detectGap(next)
	s.actOnMissed(p.Missed, old.nextOut, conf.nextOut)
	s.confirmMessages(old.nextOut, conf.nextOut)
	if s.confirmed != oldConfirmed {
		// The peer confirmed new packets: the path works, so the back-off
		// of our header repeats ends, even on a side that sends no
		// messages and so never takes a sample.
		s.rtt.ClearBackoff()
		var sample time.Duration
		if conf.messages && !conf.repeated {
			sample = now.Sub(conf.at) // Karn: sent once, first confirmation
			s.rtt.Sample(sample)
		}
		s.resolve(now, oldConfirmed, p.Missed, old.nextOut, conf.nextOut)
		s.cc.Update(now, congestion.RTT{Latest: sample, Smoothed: s.rtt.SRTT(), RTO: s.rtt.RTO()})
	}
	s.deliver(msgs)

	switch {
	case s.push != pushDone:
		s.kick, s.kickAt = true, now
	case p.ObservedSession != 0, probe && s.confirmed == oldConfirmed:
		// Answered at once, where the reference waits for its next
		// transmission (choices, see the package documentation): the
		// peer still sends its session fields, so it waits for a
		// confirmation to finish its handshake; or the packet is a
		// keepalive probe, a new packet that says nothing and confirms
		// nothing new.
		s.kick, s.kickAt = true, now
	case confIn != s.nextIn || len(p.Missed) > 0:
		s.retryArmed = true
	}
	if s.peerKnowsUs {
		// Open once the peer has echoed our session ID, as the reference
		// judges it ("state confirmed", docs/protocols/airhook.md §3.2): only an endpoint
		// that received our random ID can echo it. Our session push may
		// still await the peer's confirmation, which a reference peer
		// with nothing to send gives only with its next transmission.
		s.Establish()
	}
}

// resolve tells the controller what became of our packets newly
// confirmed, those after from up to s.confirmed: a packet one of whose
// messages the peer reports missed (in list, within [lo, hi) as
// actOnMissed reads it) was lost; the others were delivered.
func (s *Session) resolve(now time.Time, from uint8, list []uint8, lo, hi uint8) {
	var missed [4]uint64 // by message number
	for i := len(list) - 1; i >= 0 && inRange(list[i], lo, hi); i-- {
		missed[list[i]/64] |= 1 << (list[i] % 64)
	}
	for seq := from + 1; seq != s.confirmed+1; seq++ {
		r := s.rec(seq)
		if !r.pkt.InFlight() {
			continue
		}
		lost := false
		for n := r.nextOut - r.count; n != r.nextOut && !lost; n++ {
			lost = missed[n/64]&(1<<(n%64)) != 0
		}
		if lost {
			s.cc.OnLost(now, &r.pkt, trace.LossNAK)
		} else {
			s.cc.OnAcked(now, &r.pkt)
		}
	}
}

// Challenges (RFC 5961's reason): Airhook packets carry no secret, and
// the reference adopts any packet with a new session ID as a restarted
// peer (docs/protocols/airhook.md §3.9), so a blind attacker sending from the peer's address
// could end the session with one packet. Here a new session ID arriving
// once established is first challenged: the session sends the live peer
// a new packet at once (as a keepalive probe, it confirms nothing new),
// and again engine.ChallengeProbes times over the challenge, so that one
// lost probe or confirmation does not decide it. A live peer confirms them (this engine at once, the reference with its next
// transmission), and the announcement is ignored (Stats.SpoofsRefused);
// a restarted peer knows nothing of our session and cannot. Only when no
// confirmation comes within two RTOs (at least engine.ChallengeMin) is
// the next packet of the new session taken: adopted, or refused with
// engine.ErrPeerRestarted. Until then such packets are ignored; the
// restarted peer repeats its session push every RTO.

// challenged reports whether a packet announcing a new peer session may
// be acted on: the session is still in its handshake, challenges are off,
// or a challenge ran out unanswered. Otherwise it starts one, if none is
// running.
func (s *Session) challenged(now time.Time) bool {
	switch {
	case s.cfg.NoChallenge || s.State() == engine.StateHandshake || s.chalPassed:
		return true
	case !s.chalOn:
		s.chalOn, s.chalSend = true, true
		s.kick, s.kickAt = true, now
		s.Counters.Challenges++
	}
	return false
}

// answered ends a challenge, running or run out, once the peer has
// confirmed the challenge packet: the live session is there, so the new
// session ID was spoofed.
func (s *Session) answered() {
	if !(s.chalOn && !s.chalSend || s.chalPassed) || !s.peerKnowsUs ||
		!engine.Within8(s.confirmed, uint8(s.chalSeq), uint8(s.lastSent)) {
		return
	}
	if s.chalOn {
		s.Counters.SpoofsRefused++
	}
	s.chalOn, s.chalPassed = false, false
}

// adoptPeer resynchronises with a new peer session (docs/protocols/airhook.md §3.9).
func (s *Session) adoptPeer(p *Packet) {
	if s.peer != 0 {
		s.Counters.PeerRestarts++
	}
	for seq := s.confirmed + 1; seq != uint8(s.lastSent)+1; seq++ {
		s.cc.Forget(&s.rec(seq).pkt) // the new peer will confirm none of them
	}
	s.nMissed = 0
	s.nextIn = 0
	if s.peerKnowsUs {
		for n := s.rec(s.confirmed).nextOut; n != s.nextOut; n++ {
			s.requeue(n)
		}
		s.nextOut = 0
		s.setConfirmed(uint8(s.lastSent))
	}
	s.lastObservedSent = uint8(p.Seq - 1)
	s.peerKnowsUs = false
	s.push = pushPending
	s.peer = p.Session
	s.chalOn, s.chalPassed = false, false
}

// cullMissed drops the missed entries the peer has seen reported: those
// detected while the peer's newly confirmed packets were sent (docs/protocols/airhook.md §3.6).
func (s *Session) cullMissed(from, to uint8) {
	k := uint16(0)
	for k < s.nMissed && inRange(s.missed[k], from, to) {
		k++
	}
	s.nMissed = uint16(copy(s.missed[:], s.missed[k:s.nMissed]))
}

// detectGap records as missed every peer message number before next that
// has not arrived (docs/protocols/airhook.md §3.5). The list is capped at 256 entries, which a
// consistent peer never exceeds; the reference would abort (docs/protocols/airhook.md §4.3).
func (s *Session) detectGap(next uint8) {
	for ; s.nextIn != next; s.nextIn++ {
		if s.nMissed < maxMissed {
			s.missed[s.nMissed] = s.nextIn
			s.nMissed++
		}
	}
}

// actOnMissed queues again the messages the peer reports missed, walking
// its list from the last entry and stopping at the first one outside the
// numbers of our newly confirmed packets [from, to) (docs/protocols/airhook.md §3.6).
func (s *Session) actOnMissed(list []uint8, from, to uint8) {
	for i := len(list) - 1; i >= 0 && inRange(list[i], from, to); i-- {
		s.requeue(list[i])
	}
}

// confirmMessages releases the messages numbered in [from, to) that are
// still waiting.
func (s *Session) confirmMessages(from, to uint8) {
	for n := from; n != to && s.waiting != nil; n++ {
		if m := s.waiting[n]; m != nil {
			s.waiting[n] = nil
			s.pending--
			s.pendBytes -= len(m.data)
			s.free = append(s.free, m)
		}
	}
}

// requeue moves message number n, if still waiting, back to the queue; it
// will be sent again under a new number.
func (s *Session) requeue(n uint8) {
	if s.waiting == nil {
		return
	}
	if m := s.waiting[n]; m != nil {
		s.waiting[n] = nil
		s.queue.insert(m)
	}
}

// deliver copies msgs into one buffer and queues them for Recv.
func (s *Session) deliver(msgs [][]byte) {
	if len(msgs) == 0 {
		return
	}
	total := 0
	for _, m := range msgs {
		total += len(m)
	}
	buf := make([]byte, 0, total)
	for _, m := range msgs {
		start := len(buf)
		buf = append(buf, m...)
		s.Inbox.Push(engine.Message{Data: buf[start:len(buf):len(buf)], Reliable: true})
	}
	s.nextIn += uint8(len(msgs))
}

// inRange reports whether x lies in the half-open range [lo, hi) walked
// forward from lo, modulo 256; the range is empty when lo == hi.
func inRange(x, lo, hi uint8) bool { return x != hi && engine.Within8(x, lo, hi) }
