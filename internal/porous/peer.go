package porous

import (
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

var (
	errNotConnect  = fmt.Errorf("%w: porous: first datagram of an accepted session is not a compatible Connect", engine.ErrRejected)
	errOutOfWindow = fmt.Errorf("%w: porous: Data frame outside the receive window", engine.ErrRejected)
	errBusy        = fmt.Errorf("%w: porous: receive buffers full, Data frame dropped unacknowledged", engine.ErrRejected)
	errOtherNonce  = fmt.Errorf("%w: porous: ConnectAck for another nonce", engine.ErrRejected)
	errPeerClosed  = fmt.Errorf("%w: porous: peer disconnected during the handshake", engine.ErrPeerClosed)
)

// HandleDatagram processes one datagram received at now, as the peer
// state of docs/protocols/porous.md §3.1 dictates; frames a state ignores are ignored
// silently. It returns:
//   - an error wrapping engine.ErrMalformed if p does not decode (see
//     Decode);
//   - an error wrapping engine.ErrRejected for a Data frame outside the
//     receive window (docs/protocols/porous.md §3.4), for a Data frame dropped unacknowledged
//     because the receive buffers are full, and, with Config.Accept,
//     for anything before a compatible Connect (then also wrapping
//     engine.ErrMalformed or engine.ErrIncompatible when that is why);
//   - engine.ErrPeerRestarted for a Connect with a new nonce while
//     connected, with Config.RejectNewPeerSession;
//   - engine.ErrClosed in StateClosed;
//   - nil otherwise.
//
// Errors change no protocol state and are counted in
// Stats.PacketsRejected (ErrPeerRestarted and ErrClosed are not). p may be
// reused at once.
func (s *Session) HandleDatagram(now time.Time, p []byte) error {
	return s.Input(func() error { return s.input(now, p) })
}

// input is HandleDatagram once open.
func (s *Session) input(now time.Time, p []byte) error {
	s.setNow(now)
	f := &s.frame
	maxData := MaxFrameSize
	if s.cfg.LargeFrames {
		maxData = LargeFrameSize
	}
	err := decode(p, f, maxData)
	if s.cfg.Accept && !s.accepted {
		switch {
		case err != nil:
			err = fmt.Errorf("%w: %w", errNotConnect, err)
		case f.Type != FrameConnect:
			err = errNotConnect
		case !s.compatible(f):
			err = fmt.Errorf("%w: %w", errNotConnect, s.incompatible(f))
		default:
			s.accepted = true
		}
	}
	if err == nil {
		err = s.handle(f, len(p))
	}
	clear(f.Messages) // keep no reference to p
	return err
}

func (s *Session) compatible(f *Frame) bool {
	return f.Version == Version && f.Channels == s.cfg.Channels
}

func (s *Session) incompatible(f *Frame) error {
	return fmt.Errorf("%w: porous: peer speaks version %d with %d channels, we version %d with %d",
		engine.ErrIncompatible, f.Version, f.Channels, Version, s.cfg.Channels)
}

// handle applies one decoded frame of n bytes.
func (s *Session) handle(f *Frame, n int) error {
	switch {
	case f.Type != FrameData:
	case s.st == stConnected:
		if err := s.handleData(f); err != nil {
			return err
		}
	case s.st == stDisconnecting && !s.RecvOpen():
		s.refuse(f) // ignored, as always once disconnecting, but counted
	}
	if f.Type == FrameConnect && s.st == stConnected && f.Nonce != s.peerNonce {
		switch {
		case !s.challenged(engine.ChallengeRestart):
			return nil // the live session is asked first: see challenge
		case s.cfg.RejectNewPeerSession:
			return engine.ErrPeerRestarted
		case f.Nonce != s.restartNon:
			s.restartNon = f.Nonce
			s.Counters.PeerRestarts++
		}
	}
	if f.Type == FrameDisconnect && s.st == stConnected && !s.challenged(engine.ChallengeClose) {
		return nil
	}
	s.Heard(s.now, n)

	switch s.st {
	case stConnecting:
		switch f.Type {
		case FrameConnect:
			if !s.compatible(f) {
				s.fail(s.incompatible(f)) // silently, as the reference
				return nil
			}
			s.pushCtl(FrameConnectAck, f.Nonce)
			s.gotConnect, s.peerNonce, s.peerRx = true, f.Nonce, f.MaxRxBandwidth
			s.tryConnect()
		case FrameConnectAck:
			if f.Nonce != s.nonce {
				s.fail(errOtherNonce)
				return nil
			}
			s.ourAcked = true
			s.tryConnect()
		case FrameDisconnect:
			s.peerDisconnect(errPeerClosed)
		}
	case stConnected:
		switch f.Type {
		case FrameConnect:
			s.pushCtl(FrameConnectAck, f.Nonce)
		case FrameDisconnect:
			s.acceptClose()
		case FrameConnectAck:
			s.closeProven(f.Nonce)
		case FramePing:
			s.pushCtl(FramePingAck, uint32(f.PingID))
		case FramePingAck:
			s.answered(f.PingID)
			s.onPingAck(f.PingID)
		case FrameDataAck:
			s.onDataAck(f.Acks)
		}
	case stDisconnecting:
		switch f.Type {
		case FramePing:
			// Not a PingAck: the peer may be challenging our Disconnect
			// (see closeProof).
			s.pushCtl(FrameConnectAck, closeProof(s.peerNonce, f.PingID))
		case FrameDisconnect:
			s.peerDisconnect(engine.LingerError(s.pending))
		case FrameDisconnectAck:
			s.fail(engine.LingerError(s.pending))
		}
	case stDisconnected:
		if f.Type == FrameDisconnect {
			s.pushCtl(FrameDisconnectAck, 0)
			s.twEnd = minTime(s.now.Add(s.timeWait()), s.twLimit)
		}
	}
	return nil
}

// pushCtl queues a control frame; beyond maxControl queued frames it is
// dropped (each is an answer or a timer-driven repeat the peer or the
// timer will ask for again).
func (s *Session) pushCtl(t FrameType, v uint32) {
	if s.ctl.Len() < maxControl {
		s.ctl.Push(ctlFrame{typ: t, v: v})
	}
}

// tryConnect enters Connected once both handshake conditions hold
// (docs/protocols/porous.md §3.2): frame numbering starts at the peer's nonce, the receive
// base at ours, the send rate limit is the smaller of ours and the peer's
// receive limit, and the first Ping is due at once.
func (s *Session) tryConnect() {
	if !s.ourAcked || !s.gotConnect {
		return
	}
	s.st = stConnected
	s.Establish()
	s.nextSeq = s.peerNonce
	s.ring.base = s.peerNonce
	s.ib = s.nonce
	s.rxf.low = s.nonce
	s.cc.SetMaxRate(s.now, uint64(min(s.cfg.MaxTxBandwidth, s.peerRx)))
	s.pingAt = s.now
	s.LastRecv = s.now
}

// acceptClose takes the peer's Disconnect while connected: Err will wrap
// engine.ErrPeerClosed if messages of ours are unconfirmed.
func (s *Session) acceptClose() {
	s.peerDisconnect(engine.Unconfirmed(engine.ErrPeerClosed, s.pending))
}

// peerDisconnect answers the peer's Disconnect and enters TIME-WAIT
// (docs/protocols/porous.md §3.8), ending later with err. The peer has closed from now on
// (see PeerClosed).
func (s *Session) peerDisconnect(err error) {
	s.pushCtl(FrameDisconnectAck, 0)
	s.st = stDisconnected
	s.PeerClosing()
	s.peerClosed, s.peerErr = true, err
	s.twLimit = s.now.Add(maxTimeWait)
	s.twEnd = s.now.Add(s.timeWait())
	s.ackq = s.ackq[:0]
}

// timeWait is how long a session that answered a Disconnect keeps
// answering its repeats.
func (s *Session) timeWait() time.Duration { return max(2*s.rto(), MinTimeWait) }

// enterDisconnecting starts sending Disconnect (docs/protocols/porous.md §3.8).
func (s *Session) enterDisconnecting() {
	s.st = stDisconnecting
	s.discAt = s.now
	s.ackq = s.ackq[:0]
}

// Challenges (RFC 5961's reason): a Disconnect, or a Connect with a new
// nonce, that arrives while connected may come from a blind attacker
// spoofing the peer's address. Before acting on it the session sends a
// Ping, and repeats it engine.ChallengeProbes times over the challenge, so
// that one lost Ping or answer does not decide it: a live session answers
// them (PingAck); a peer that is disconnecting, or a restarted one still
// connecting, ignores Pings (docs/protocols/porous.md §3.1). Only when no
// answer comes within an RTO (at least engine.ChallengeMin) is the
// announcement taken: the Disconnect answered, the restart adopted or
// refused. Until then it is ignored, and it must come again (the peer
// repeats both every 500 ms) once the challenge is over.
//
// A disconnecting peer running this package answers the challenge of its
// Disconnect with a proof of its close (closeProof), so that the close is
// taken one round trip after the Disconnect arrived rather than an RTO.
//
// The state is an engine.Challenge, shared with the other engines.

// challenged reports whether an announcement of kind k may be acted on: a
// challenge of that kind ran out unanswered. Otherwise it starts one, if
// none is running, and sends its Ping.
func (s *Session) challenged(k engine.ChallengeKind) bool {
	if s.cfg.NoChallenge {
		return true
	}
	d := max(s.rto(), engine.ChallengeMin)
	act, started := s.chal.Ask(s.now, k, uint32(s.pingID), s.now.Add(d))
	if started {
		s.chalEvery = d / engine.ChallengeProbes
		s.sendPing()
		s.Counters.Challenges++
	}
	return act
}

// answered ends the challenge a PingAck of id answers: the live session
// is there, so what was announced was spoofed.
func (s *Session) answered(id uint16) {
	if s.chal.Answer(s.now, uint32(id)) {
		s.Counters.SpoofsRefused++
		s.pingAt = s.now.Add(s.cfg.KeepAlive) // no more probes
	}
}

// challengeExpired, at the end of a challenge without an answer, lets the
// next announcement of its kind through; a Disconnect is taken at once
// (the peer may not repeat it before giving up).
func (s *Session) challengeExpired() {
	if s.chal.Expire(s.now) == engine.ChallengeClose {
		s.acceptClose()
	}
}

// closeProof is the nonce field of the ConnectAck with which a
// disconnecting session answers a Ping of id ping from the peer whose
// Connect carried nonce, in place of the PingAck a live session sends: the
// peer challenging our Disconnect takes it as proof that the close is
// real, without waiting an RTO for a PingAck that never comes.
//
// Why it proves the close: the value depends on the peer's nonce, 32
// random bits a blind attacker never saw, and on the id of the challenge
// Ping (so an old ConnectAck, such as a repeat from the handshake, never
// matches: it carried the nonce itself, and id + 1 is never 0). A
// spoofer would have to guess it within the challenge's RTO, one try per
// datagram; the PingAck that refutes a spoofed Disconnect is unchanged.
//
// Why the reference is unaffected: it sends Ping only while connected,
// where it ignores ConnectAck (docs/protocols/porous.md §3.1); a ConnectAck for another
// nonce ends only a connecting peer, which sends no Ping.
func closeProof(nonce uint32, ping uint16) uint32 { return nonce ^ (uint32(ping) + 1) }

// closeProven takes the peer's Disconnect at once when a ConnectAck with
// nonce proves it (closeProof) during its challenge; any other
// ConnectAck is ignored while connected, as by the reference.
func (s *Session) closeProven(nonce uint32) {
	ping := (nonce ^ s.nonce) - 1 // see closeProof
	if s.chal.Kind == engine.ChallengeClose && ping <= 0xFFFF && s.chal.Probed(ping) {
		s.chal.Kind = engine.ChallengeNone
		s.acceptClose()
	}
}

// PeerClosed reports whether the peer's Disconnect has been taken:
// nothing more will be delivered (a peer disconnects once its frames are
// acknowledged, docs/protocols/porous.md §3.8, so what it sent is already in Recv's queue).
// A reader can be told at once, while the session stays in TIME-WAIT to
// answer the peer's repeats and reaches StateClosed only after it. err
// is what Err will then report: nil, or an error wrapping
// engine.ErrPeerClosed (also when the peer disconnected during the
// handshake).
func (s *Session) PeerClosed() (closed bool, err error) { return s.peerClosed, s.peerErr }

// sendPing queues a Ping and remembers when it left.
func (s *Session) sendPing() {
	s.pushCtl(FramePing, uint32(s.pingID))
	s.pings[int(s.pingID)%maxPings] = pingRec{at: s.now.Sub(s.Created), id: s.pingID, ok: true}
	s.pinged = true
	s.pingAt = s.now.Add(s.cfg.KeepAlive)
	if s.chal.Running() {
		// Each Ping during a challenge is one of its probes.
		s.chal.Reprobe(uint32(s.pingID))
		if next := s.now.Add(s.chalEvery); next.Before(s.pingAt) {
			s.pingAt = next
		}
	}
	s.pingID++
	s.trim(false)
}

// Trim frees what an idle session keeps for traffic: the receive
// structures of the channels that hold nothing (as each ping does, see
// trim), the history of frames received when it has no gap, the
// transfer queue's slots and the session's queues when they are empty,
// the scratch slices, and the congestion controller's model when nothing
// is in flight. They are allocated again when needed. The buffer
// MessageBuffer returned goes back to the shared pools (see packetPools):
// the caller must not use it after Trim.
func (s *Session) Trim() {
	s.trim(true)
	s.cc.Trim()
	if s.lent != nil {
		freePacket(s.lent)
		s.lent = nil
	}
	s.unrel, s.needs, s.frame.Messages = nil, nil, nil
	if len(s.unstamped) == 0 {
		s.unstamped = nil
	}
	if len(s.ackq) == 0 {
		s.ackq = nil
	}
	if s.ring.n == 0 {
		s.ring.slots, s.ring.head = nil, 0
	}
	s.rxf.trim(s.ib)
	s.ctl.Trim()
	s.timeq.Trim()
	s.resendq.Trim()
	s.Inbox.Trim()
	s.recvCost.Trim()
}

// trim frees the receive structures of the channels that hold nothing, at
// each ping: a page table (8 KiB) and a spare page stay allocated while a
// channel receives, and cost an idle session most of its memory
// otherwise. A channel that received since the previous ping keeps them,
// so that one that empties often while receiving does not allocate them
// anew at every ping; one that did not frees them, and allocates them
// anew when it receives again, at most once per ping interval. Trim
// (all) frees them whenever the channel holds nothing.
func (s *Session) trim(all bool) {
	for i := range s.rxch {
		if c := &s.rxch[i]; c.n == 0 && (all || !c.recent) {
			c.pages, c.spare = nil, nil
		}
		s.rxch[i].recent = false
	}
}

// onPingAck takes an RTT sample from the answer to an outstanding ping no
// older than 3 s (docs/protocols/porous.md §3.7).
func (s *Session) onPingAck(id uint16) {
	r := &s.pings[int(id)%maxPings]
	if !r.ok || r.id != id {
		return
	}
	r.ok = false
	if d := s.now.Sub(s.Created) - r.at; d <= pingHistory {
		s.rtt.Sample(d)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
