package wirefox

import (
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

var (
	errNotOpening = fmt.Errorf("%w: wirefox: no connection: only INITIAL_CLIENT is accepted", engine.ErrRejected)
	errEarlyLNK   = fmt.Errorf("%w: wirefox: connected datagram before the handshake", engine.ErrRejected)
	errOOBCommand = fmt.Errorf("%w: wirefox: unexpected out-of-band command", engine.ErrRejected)
	errHandshake  = fmt.Errorf("%w: wirefox: unexpected handshake message", engine.ErrRejected)
)

// sendHandshake queues the CONNECT_ATTEMPT op with data and, for the
// messages that are repeated until answered (INITIAL_CLIENT,
// INITIAL_SERVER), restarts the repeat timer (§3.2).
func (s *Session) sendHandshake(now time.Time, op uint8, data []byte) {
	h := Handshake{Version: Version, PeerID: s.cfg.PeerID, Op: op, Data: data}
	s.oob = append(s.oob, AppendHandshake(nil, &h))
	if op == OpInitialClient || op == OpInitialServer {
		s.hsSent++
		s.hsNext = now.Add(HandshakeInterval)
	}
}

// handleOOB processes an out-of-band datagram d.
func (s *Session) handleOOB(now time.Time, d *Datagram) error {
	blob, err := ParseOOB(d)
	if err != nil {
		return err
	}
	switch blob[0] {
	case CmdConnectAttempt:
		var h Handshake
		if err := ParseHandshake(blob, &h); err != nil {
			return err
		}
		return s.handleHandshake(now, &h)
	case CmdDisconnectAck:
		if s.cfg.Accept && s.phase == phaseWait {
			return errNotOpening
		}
		if s.discSent {
			s.state = engine.StateClosed
			s.err = s.lingerError()
		}
		return nil
	case CmdPing, CmdAdvertisement:
		if s.cfg.Accept && s.phase == phaseWait {
			return errNotOpening
		}
		return nil
	}
	return errOOBCommand
}

// handleHandshake processes a CONNECT_ATTEMPT (§3.2).
func (s *Session) handleHandshake(now time.Time, h *Handshake) error {
	if s.cfg.Client {
		return s.clientHandshake(now, h)
	}
	switch {
	case s.phase == phaseWait && h.Op != OpInitialClient:
		return errNotOpening
	case s.phase == phaseWait:
		s.peerID = h.PeerID
		switch {
		case h.Version != Version:
			s.refuse(now, ResultIncompatibleVersion, fmt.Errorf("%w: wirefox: peer speaks version %d", engine.ErrIncompatible, h.Version))
		case len(h.Data) > 0 && h.Data[0]&cryptoFlag != 0:
			s.refuse(now, ResultIncompatibleSecurity, fmt.Errorf("%w: wirefox: peer wants encryption", engine.ErrIncompatible))
		default:
			s.phase = phaseInitial
			s.sendHandshake(now, OpInitialServer, []byte{0})
		}
		return nil
	case h.Op == OpInitialClient && h.PeerID == s.peerID:
		if s.phase == phaseInitial && len(s.oob) == 0 {
			s.sendHandshake(now, OpInitialServer, []byte{0}) // our answer was lost
		}
		return nil
	case h.Op == OpInitialClient:
		// A new client at the peer's address: the peer restarted, or a
		// spoof. The reference ignores it; this end challenges it
		// (Config.Challenge) and ends with engine.ErrPeerRestarted, so
		// that a listener takes the client's next INITIAL_CLIENT.
		if s.phase != phaseDone || !s.challenged(now, engine.ChallengeRestart) {
			return nil
		}
		s.fail(engine.ErrPeerRestarted)
		return engine.ErrPeerRestarted
	case h.Op == OpUnencryptedAck && h.PeerID == s.peerID:
		s.established(now)
		return nil
	}
	return errHandshake
}

// clientHandshake processes a CONNECT_ATTEMPT at a client.
func (s *Session) clientHandshake(now time.Time, h *Handshake) error {
	switch {
	case h.Op == OpInitialServer && s.phase == phaseInitial:
		if len(h.Data) > 0 && h.Data[0]&cryptoFlag != 0 {
			s.refuse(now, ResultIncompatibleSecurity, fmt.Errorf("%w: wirefox: server wants encryption", engine.ErrIncompatible))
			return nil
		}
		s.peerID = h.PeerID
		s.sendHandshake(now, OpUnencryptedAck, nil)
		s.established(now)
		return nil
	case h.Op == OpInitialServer && s.phase == phaseDone && h.PeerID == s.peerID:
		// Our UNENCRYPTED_ACK was lost: the reference client never sends
		// it again and the connection breaks (§4 bug 3); this one does.
		s.sendHandshake(now, OpUnencryptedAck, nil)
		return nil
	case h.Op == OpError && s.phase == phaseInitial && len(h.Data) > 0:
		s.fail(resultError(h.Data[0]))
		return nil
	}
	return errHandshake
}

// resultError maps an ERROR_OCCURRED result to Err.
func resultError(r uint8) error {
	switch r {
	case ResultIncompatibleProtocol, ResultIncompatibleVersion, ResultIncompatibleSecurity:
		return fmt.Errorf("%w: wirefox: server answered ConnectResult %d", engine.ErrIncompatible, r)
	case ResultNoFreeSlots:
		return ErrNoFreeSlots
	case ResultAlreadyConnected:
		return ErrAlreadyConnected
	}
	return fmt.Errorf("%w: ConnectResult %d", ErrConnectRefused, r)
}

// refuse sends ERROR_OCCURRED with result and ends the session with err
// once it is out.
func (s *Session) refuse(now time.Time, result uint8, err error) {
	s.sendHandshake(now, OpError, []byte{result})
	s.failAfter = err
}

// established completes the handshake.
func (s *Session) established(now time.Time) {
	if s.phase == phaseDone {
		return
	}
	s.phase = phaseDone
	if s.state == engine.StateHandshake {
		s.state = engine.StateEstablished
	}
	if s.state == engine.StateClosing {
		s.closeAt = now // Linger counts from the end of the handshake
	}
	s.lastSend = now
}

// challenged reports whether an announcement of kind k may be acted on
// (see engine.Challenge): always without Config.Challenge; otherwise once
// a challenge ran out unanswered. Starting one sends a keepalive at once
// whose acknowledgement answers it.
func (s *Session) challenged(now time.Time, k engine.ChallengeKind) bool {
	if !s.cfg.Challenge || s.state != engine.StateEstablished {
		return true
	}
	act, started := s.chal.Ask(k, s.nextPkt, now.Add(max(2*s.rto()+challengeSlack, engine.ChallengeMin)))
	if started {
		s.stats.Challenges++
		s.probe()
	}
	return act
}

// probe sends a keepalive now: a reliable PONG on channel 0, whose packet
// ID is s.nextPkt at the time of the call.
func (s *Session) probe() {
	m := &outMsg{blob: []byte{1}, opts: OptReliable, internal: true, nseg: 1, next: 1, unacked: 1}
	p := &outPkt{msg: m, id: s.nextPkt}
	s.nextPkt++
	s.unackedN++
	s.byID.Push(p)
	s.due(p)
}
