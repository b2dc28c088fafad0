package lludp

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

var (
	errNoCircuit = fmt.Errorf("%w: lludp: no circuit yet: only a reliable UseCircuitCode is accepted", engine.ErrRejected)
	errRetired   = fmt.Errorf("%w: lludp: UseCircuitCode of a circuit already replaced", engine.ErrRejected)
)

// HandleDatagram processes one datagram received at now (docs/protocols/lludp.md §1, §3). It
// returns:
//   - engine.ErrClosed in StateClosed;
//   - an error wrapping engine.ErrMalformed if b does not parse (see
//     ParsePacket);
//   - an error wrapping engine.ErrRejected on a server without a circuit
//     for anything but a reliable UseCircuitCode with a full 36-byte body
//     (the only message the viewer accepts off-circuit, docs/protocols/lludp.md §3.1);
//   - engine.ErrPeerRestarted on a server with an open circuit and
//     Config.RejectNewPeerSession for a reliable UseCircuitCode carrying
//     another Circuit (an unreliable one cannot open a circuit, so it is
//     not taken as a restarted peer either);
//   - nil otherwise.
//
// No error changes any state other than Stats.PacketsRejected, which
// counts the malformed and rejected datagrams. An accepted datagram's
// appended acks are applied and, when it is reliable, it is acknowledged,
// duplicates included (docs/protocols/lludp.md §3.3). Its message is then consumed when it
// is a transport message (PacketAck, StartPingCheck, CompletePingCheck,
// UseCircuitCode, CloseCircuit, OpenCircuit, which is ignored) and
// otherwise delivered through Recv, unless its sequence number had
// arrived before (counted in Stats.Duplicates, docs/protocols/lludp.md §3.5; delivered all
// the same with Config.DeliverDuplicates), or it is refused,
// unacknowledged (see SetRecvOpen). Any 32-bit sequence number is
// accepted. The body is copied; b may be reused at
// once.
func (s *Session) HandleDatagram(now time.Time, b []byte) error {
	return s.Input(func() error {
		if s.scratch == nil && len(b) > 0 && b[0]&FlagZerocoded != 0 {
			s.scratch = make([]byte, 0, MaxDecoded)
		}
		p := &s.pkt
		err := ParsePacket(b, p, s.scratch)
		if err == nil {
			err = s.handle(now, p, len(b))
		}
		p.Extra, p.Body = nil, nil // keep no reference to b
		return err
	})
}

// handle applies the circuit checks to a parsed datagram of n bytes and
// processes it when they pass.
func (s *Session) handle(now time.Time, p *Packet, n int) error {
	reliable := p.Flags&FlagReliable != 0
	var circuit Circuit
	hello := false
	if p.Message == UseCircuitCode {
		circuit, hello = parseCircuit(p.Body)
	}
	server := !s.cfg.Client
	restart := false
	switch {
	case server && !s.open:
		if !hello || !reliable {
			return errNoCircuit
		}
	case server && hello && reliable && circuit != s.peerCircuit:
		if s.retired(circuit) {
			return errRetired // a late copy from before a restart
		}
		if !s.challenged(now, engine.ChallengeRestart) {
			return nil // the live circuit is asked first: see challenged
		}
		if s.cfg.RejectNewPeerSession {
			return engine.ErrPeerRestarted
		}
		restart = true
	}
	app := !transport(p.Message)

	s.now = now
	s.Heard(now, n)
	if restart {
		s.adoptPeer()
	}
	s.ackSample = 0
	for _, id := range p.Acks {
		s.acked(now, id)
	}
	// Unreliable transport messages stay out of the duplicate window: some
	// implementations send them all with sequence number 0 (docs/protocols/lludp.md §3.1),
	// and processing them twice is harmless.
	dup, refused := false, false
	switch {
	case app && s.Refusing() && !s.win.has(p.Seq):
		refused = true // left out of the window and unacknowledged: the peer resends it
		s.Counters.Refused++
	case reliable || app || p.Message == UseCircuitCode:
		dup = s.win.seen(p.Seq)
	}
	if reliable && !refused {
		s.owe(now, p.Seq)
	}
	if dup {
		s.Counters.Duplicates++
	}

	switch p.Message {
	case PacketAck:
		body := p.Body
		if len(body) > 0 {
			k := min(int(body[0]), (len(body)-1)/4)
			for i := range k {
				s.acked(now, binary.LittleEndian.Uint32(body[1+4*i:]))
			}
		}
	case StartPingCheck:
		// Missing fields read as zero, as in the viewer (docs/protocols/lludp.md §2
		// erratum 11); a missing OldestUnacked is not used.
		var id uint8
		if len(p.Body) > 0 {
			id = p.Body[0]
		}
		if len(p.Body) >= 5 {
			s.win.setFloor(binary.LittleEndian.Uint32(p.Body[1:5]))
		}
		// A session that has sent CloseCircuit is gone for the peer: it
		// no longer answers, so that a ping challenging its close finds
		// it closed (see challengeClose).
		// A client whose circuit is not open yet (a restarted one) does
		// not answer either, so that it does not pass for the circuit it
		// replaces.
		if s.nPongs < maxPongs && s.closeSent == 0 && s.open {
			s.pongs[s.nPongs] = id
			s.nPongs++
		}
	case CompletePingCheck:
		if len(p.Body) > 0 {
			s.pingAnswered(now, p.Body[0])
			s.answered(now, p.Body[0])
		}
	case CloseCircuit:
		if s.challenged(now, engine.ChallengeClose) {
			s.peerClosed()
		}
	case UseCircuitCode:
		if hello && server && !dup && (!s.open || restart) {
			s.peerCircuit = circuit
			s.circuitOpened(now)
		}
	case OpenCircuit:
		// Blacklisted on UDP by the viewer: ignored (docs/protocols/lludp.md §1.6).
	default:
		if !refused && (!dup || s.cfg.DeliverDuplicates) {
			data := make([]byte, len(p.Body))
			copy(data, p.Body)
			s.Inbox.Push(engine.Message{Data: data, Reliable: reliable, MessageNumber: p.Message})
		}
	}
	s.detectLosses(now)
	s.updateCC(now, s.ackSample)
	return nil
}

// peerClosed ends the session after the peer's CloseCircuit.
func (s *Session) peerClosed() {
	s.Fail(engine.Unconfirmed(engine.ErrPeerClosed, s.pending))
}

// Challenges (RFC 5961's reason): a CloseCircuit, or a reliable
// UseCircuitCode with another circuit (a restarted client), received while
// the circuit is open may come from a blind attacker sending from the
// peer's address. Before acting on it the session sends a StartPingCheck
// at once, and again engine.ChallengeProbes times over the challenge, so
// that one lost ping or answer does not decide it: a live circuit answers
// them, while a peer that closed its circuit, or a restarted client whose
// new circuit is not open yet, does not. Only without an answer within two
// round trips (at least engine.ChallengeMin) is the announcement taken: the close at once (see Poll), the restart
// with the next copy of its UseCircuitCode (the client resends it until
// acknowledged). Until then
// it is ignored, and one received while a challenge runs changes nothing
// (engine.Challenge).

// challenged reports whether an announcement of kind k may be acted on:
// the circuit is not open, challenges are off, or a challenge of that kind
// ran out unanswered. Otherwise it starts one, if none is running: the
// next StartPingCheck goes at once.
func (s *Session) challenged(now time.Time, k engine.ChallengeKind) bool {
	if s.cfg.NoChallenge || s.State() != engine.StateEstablished {
		return true
	}
	d := max(2*s.roundTrip()+challengeSlack, engine.ChallengeMin)
	act, started := s.chal.Ask(now, k, uint32(s.nextPingID), now.Add(d))
	if started {
		s.chalEvery = d / engine.ChallengeProbes
		s.pingAt = now.Add(-s.chalEvery) // a ping at once
		s.Counters.Challenges++
	}
	return act
}

// answered ends the challenge that the CompletePingCheck of id answers:
// the live circuit is there, so what was announced was spoofed.
func (s *Session) answered(now time.Time, id uint8) {
	if s.chal.Answer(now, uint32(id)) {
		s.Counters.SpoofsRefused++
	}
}

// challengeExpired, at the end of a challenge without an answer, takes a
// close at once and lets the next copy of a restart's UseCircuitCode
// through.
func (s *Session) challengeExpired(now time.Time) {
	if s.chal.Expire(now) == engine.ChallengeClose {
		s.peerClosed()
	}
}

// owe queues an acknowledgement of seq (docs/protocols/lludp.md §3.3).
func (s *Session) owe(now time.Time, seq uint32) {
	if s.acks.len() == 0 {
		s.ackSince = now
	}
	s.acks.push(seq)
}

// acked releases our reliable datagram id, if still unacknowledged, and
// tells the controller.
func (s *Session) acked(now time.Time, id uint32) {
	m, ok := s.unacked[id]
	if !ok {
		return
	}
	delete(s.unacked, id)
	switch m.list {
	case inFlight:
		s.resend.remove(m)
	case suspect:
		s.suspect.remove(m)
		s.cc.Spurious(now) // found lost, yet its last transmission arrived
	case lost:
		s.lost.remove(m)
		s.cc.Spurious(now)
	}
	s.cc.OnAcked(now, &m.pkt)
	s.proven = true
	if m.resends == 0 { // Karn: only datagrams sent once
		s.ackSample = now.Sub(m.sentAt)
		if s.rtt != nil {
			s.rtt.Sample(s.ackSample)
		}
	}
	if m.hello {
		s.circuitOpened(now)
		return
	}
	s.pending--
	s.release(m)
}

// PeerProven implements engine.Prover: the peer has acknowledged a
// reliable datagram of ours or answered one of our StartPingChecks.
func (s *Session) PeerProven() bool { return s.proven }

// circuitOpened marks the circuit open (docs/protocols/lludp.md §3.1).
func (s *Session) circuitOpened(now time.Time) {
	if s.open {
		return
	}
	s.open, s.pingAt = true, now
	s.Establish()
}

// adoptPeer resets the receive state for a restarted peer that opened a
// new circuit: its sequence numbers start again, and what was owed to the
// old peer is dropped. Our unacknowledged messages stay and are resent to
// the new peer.
func (s *Session) adoptPeer() {
	s.replaced[s.nReplaced%len(s.replaced)] = s.peerCircuit
	s.nReplaced++
	s.Counters.PeerRestarts++
	s.win = window{}
	s.acks.reset()
	s.nPongs = 0
	s.pingsOut = 0
	s.chal.Passed = engine.ChallengeNone
}

// pingAnswered takes an RTT sample from a CompletePingCheck (docs/protocols/lludp.md §3.7):
// the time since the last StartPingCheck plus one interval per ping sent
// after the one answered, as the viewer counts it, fed to the averaged
// ping: avg = max(sample, avg), then avg = 0.8·avg + 0.2·sample, clamped
// to 100 ms..2 s (docs/protocols/lludp.md §3.4). The first sample replaces the initial 1 s
// instead (as RFC 6298 and POROUS do), so the resend timeout reaches its
// 1 s floor with the first ping rather than after minutes of pings.
// Answers to pings already answered, or never sent, are ignored.
func (s *Session) pingAnswered(now time.Time, id uint8) {
	later := int(s.pingID - id)
	if later >= s.pingsOut {
		return
	}
	s.pingsOut = later
	s.proven = true
	sample := time.Duration(later)*s.cfg.KeepAlive + now.Sub(s.pingAt)
	if !s.pinged {
		s.pinged = true
		s.avgPing = max(pingMin, min(sample, pingMax))
		return
	}
	avg := max(sample, s.avgPing)
	avg = (4*avg + sample) / 5
	s.avgPing = max(pingMin, min(avg, pingMax))
}

// retired reports whether c is one of the last circuits this session
// replaced after a peer restart: a late copy of such a UseCircuitCode must
// not switch the session back to the peer that is gone.
func (s *Session) retired(c Circuit) bool {
	for i := range min(s.nReplaced, len(s.replaced)) {
		if s.replaced[i] == c {
			return true
		}
	}
	return false
}
