package wirefox

import (
	"crypto/subtle"
	"fmt"
	"io"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

var (
	errNotOpening = fmt.Errorf("%w: wirefox: no connection: only INITIAL_CLIENT is accepted", engine.ErrRejected)
	errEarlyLNK   = fmt.Errorf("%w: wirefox: connected datagram before the handshake", engine.ErrRejected)
	errOOBCommand = fmt.Errorf("%w: wirefox: unexpected out-of-band command", engine.ErrRejected)
	errHandshake  = fmt.Errorf("%w: wirefox: unexpected handshake message", engine.ErrRejected)
)

// oobMsg is an out-of-band blob due; plain ones go out unencrypted
// whatever the session's keys (docs/protocols/wirefox.md §3.8: the
// messages before the key exchange).
type oobMsg struct {
	blob  []byte
	plain bool
}

// sendHandshake queues the CONNECT_ATTEMPT op with data, unencrypted
// until the session keys are set. A repeated one (INITIAL_CLIENT,
// INITIAL_SERVER, AUTH_MSG awaiting the peer's next) becomes the message
// the timer repeats until answered (§3.2), counting its attempts anew.
func (s *Session) sendHandshake(now time.Time, op uint8, data []byte, repeated bool) {
	h := Handshake{Version: Version, PeerID: s.cfg.PeerID, Op: op, Data: data}
	m := oobMsg{blob: AppendHandshake(nil, &h), plain: s.keys == nil}
	s.oob = append(s.oob, m)
	s.hsLast = m
	if repeated {
		s.hsSent = 1
		s.hsNext = now.Add(HandshakeInterval)
	}
}

// sendAgain queues the last handshake message again, unless it is still
// queued: the peer's repeat says our answer was lost.
func (s *Session) sendAgain(now time.Time) {
	if len(s.oob) > 0 || s.hsLast.blob == nil {
		return
	}
	s.oob = append(s.oob, s.hsLast)
	s.hsSent++
	s.hsNext = now.Add(HandshakeInterval)
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
		case wantsCrypto(h) != s.cfg.Encrypt:
			s.refuse(now, ResultIncompatibleSecurity, fmt.Errorf("%w: wirefox: peer's encryption (%t) differs from ours", engine.ErrIncompatible, wantsCrypto(h)))
		default:
			s.phase = phaseInitial
			s.sendHandshake(now, OpInitialServer, []byte{s.cryptoByte()}, true)
		}
		return nil
	case h.Op == OpInitialClient && h.PeerID == s.peerID:
		if s.phase == phaseInitial && s.keys == nil {
			s.sendAgain(now) // our answer was lost
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
	case h.Op == OpUnencryptedAck && h.PeerID == s.peerID && !s.cfg.Encrypt:
		s.established(now)
		return nil
	case h.Op == OpAuthMsg && h.PeerID == s.peerID && s.cfg.Encrypt:
		return s.serverAuth(now, h.Data)
	}
	return errHandshake
}

// wantsCrypto reports the crypto flag of INITIAL_CLIENT or INITIAL_SERVER.
func wantsCrypto(h *Handshake) bool { return len(h.Data) > 0 && h.Data[0]&cryptoFlag != 0 }

// cryptoByte is the crypto byte of this end's INITIAL_CLIENT or
// INITIAL_SERVER.
func (s *Session) cryptoByte() byte {
	if s.cfg.Encrypt {
		return cryptoFlag
	}
	return 0
}

// serverAuth processes the client's AUTH_MSG (§3.8). As in the reference,
// a message of a state other than the one expected is ignored, except a
// repeat of the one just answered, which is answered again.
func (s *Session) serverAuth(now time.Time, data []byte) error {
	if len(data) == 0 {
		return errHandshake
	}
	state := data[0]
	switch {
	case s.phase == phaseDone:
		return nil
	case state == AuthKeyExchange && s.keys == nil:
		if len(data) < 1+KeySize {
			return errHandshake
		}
		kx, err := GenerateKeyPair(s.rand)
		if err != nil {
			s.fail(err)
			return err
		}
		keys, err := ServerSessionKeys(kx, [KeySize]byte(data[1:]))
		if err != nil {
			return err
		}
		s.authWant = AuthDone
		if len(data) > 1+KeySize && data[1+KeySize]&cryptoFlag != 0 {
			s.authWant = AuthAuthentication
		}
		// Our key goes out in the clear; everything after it is sealed.
		s.sendHandshake(now, OpAuthMsg, append([]byte{AuthKeyExchange}, kx.Public[:]...), true)
		s.keys = &keys
	case state == AuthAuthentication && s.authWant == AuthAuthentication:
		id := KeyPair{}
		if s.cfg.Identity != nil {
			id = *s.cfg.Identity
		}
		plain, err := OpenChallenge(id, data[1:])
		if err != nil {
			// As the reference's server: EncryptionAuthenticator::HandleAuth
			// (source/EncryptionAuthenticator.cpp) writes the state byte,
			// fails to open, and HandshakerThreeWay::Handle
			// (source/HandshakerThreeWay.cpp) sends what was written and
			// completes with INCOMPATIBLE_SECURITY, locally; the client
			// finds no answer: INCORRECT_REMOTE_IDENTITY.
			s.sendHandshake(now, OpAuthMsg, []byte{AuthAuthentication}, false)
			s.failAfter = fmt.Errorf("%w: wirefox: identity challenge we cannot open", engine.ErrIncompatible)
			return nil
		}
		s.authWant = AuthDone
		s.sendHandshake(now, OpAuthMsg, append([]byte{AuthAuthentication}, plain...), true)
	case state == AuthDone && s.authWant == AuthDone && s.keys != nil:
		s.sendHandshake(now, OpAuthMsg, nil, false) // the reference's empty answer
		s.established(now)
	}
	return nil
}

// clientHandshake processes a CONNECT_ATTEMPT at a client.
func (s *Session) clientHandshake(now time.Time, h *Handshake) error {
	if h.Op != OpError && s.peerID != 0 && h.PeerID != s.peerID {
		return errHandshake
	}
	switch {
	case h.Op == OpInitialServer && s.phase == phaseInitial && s.peerID == 0:
		if wantsCrypto(h) != s.cfg.Encrypt {
			s.refuse(now, ResultIncompatibleSecurity, fmt.Errorf("%w: wirefox: server's encryption (%t) differs from ours", engine.ErrIncompatible, wantsCrypto(h)))
			return nil
		}
		s.peerID = h.PeerID
		if s.cfg.Encrypt {
			kx, err := GenerateKeyPair(s.rand)
			if err != nil {
				s.fail(err)
				return err
			}
			s.kx = kx
			flag := byte(0)
			if s.cfg.ServerKey != nil {
				flag = cryptoFlag
			}
			data := append(append([]byte{AuthKeyExchange}, kx.Public[:]...), flag)
			s.sendHandshake(now, OpAuthMsg, data, true)
			s.authWant = AuthKeyExchange
			return nil
		}
		s.sendHandshake(now, OpUnencryptedAck, nil, false)
		s.established(now)
		return nil
	case h.Op == OpInitialServer && s.peerID != 0:
		// Our answer was lost: the reference client never sends
		// UNENCRYPTED_ACK again and the connection breaks (§4 bug 3);
		// this one does.
		if s.phase == phaseDone || s.keys == nil {
			s.sendAgain(now)
		}
		return nil
	case h.Op == OpAuthMsg && s.cfg.Encrypt && s.peerID != 0:
		return s.clientAuth(now, h.Data)
	case h.Op == OpError && s.phase == phaseInitial && len(h.Data) > 0:
		if s.authWant == AuthAuthentication && h.Data[0] == ResultIncompatibleSecurity {
			// The server could not open our challenge: it is not the
			// holder of Config.ServerKey's secret.
			s.fail(ErrIncorrectRemoteIdentity)
			return nil
		}
		s.fail(resultError(h.Data[0]))
		return nil
	}
	return errHandshake
}

// clientAuth processes the server's AUTH_MSG (§3.8): its key, then the
// answer to our challenge. The server's empty AUTH_MSG after DONE is
// ignored, and a repeat of a message already answered is answered again.
func (s *Session) clientAuth(now time.Time, data []byte) error {
	switch {
	case len(data) == 0:
		return nil // the server's answer to DONE
	case s.phase == phaseDone || data[0] != s.authWant:
		if data[0] < s.authWant || s.phase == phaseDone {
			s.sendAgain(now)
		}
		return nil
	case data[0] == AuthKeyExchange:
		if len(data) < 1+KeySize {
			return errHandshake
		}
		keys, err := ClientSessionKeys(s.kx, [KeySize]byte(data[1:]))
		if err != nil {
			return err
		}
		s.keys = &keys
		if s.cfg.ServerKey == nil {
			s.authDone(now)
			return nil
		}
		s.challenge = make([]byte, ChallengeSize)
		if _, err := io.ReadFull(s.rand, s.challenge); err != nil {
			s.fail(err)
			return err
		}
		sealed, err := SealChallenge(s.rand, s.cfg.ServerKey, s.challenge)
		if err != nil {
			s.fail(err)
			return err
		}
		s.authWant = AuthAuthentication
		s.sendHandshake(now, OpAuthMsg, append([]byte{AuthAuthentication}, sealed...), true)
	case data[0] == AuthAuthentication:
		if subtle.ConstantTimeCompare(data[1:], s.challenge) != 1 {
			s.fail(ErrIncorrectRemoteIdentity)
			return nil
		}
		s.authDone(now)
	}
	return nil
}

// authDone sends DONE and completes a client's encrypted handshake.
func (s *Session) authDone(now time.Time) {
	s.authWant = AuthDone
	s.sendHandshake(now, OpAuthMsg, []byte{AuthDone}, false)
	s.established(now)
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
	case ResultIncorrectIdentity:
		return ErrIncorrectRemoteIdentity
	}
	return fmt.Errorf("%w: ConnectResult %d", ErrConnectRefused, r)
}

// refuse sends ERROR_OCCURRED with result and ends the session with err
// once it is out.
func (s *Session) refuse(now time.Time, result uint8, err error) {
	s.sendHandshake(now, OpError, []byte{result}, false)
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
// a challenge ran out unanswered. Starting one sends a probe at once
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

// probe sends a reliable PONG on channel 0 now, whose packet ID is
// s.nextPkt at the time of the call: its acknowledgement, by packet ID,
// answers the challenge. Only Config.Challenge sends it, between peers
// running this package; the reference would assert on it
// (Peer::OnSystemPacket), and the keepalive, which carries no packet ID,
// cannot stand in for it.
func (s *Session) probe() {
	m := &outMsg{blob: []byte{CmdPong}, opts: OptReliable, internal: true, nseg: 1, next: 1, unacked: 1}
	p := &outPkt{msg: m, id: s.nextPkt}
	s.nextPkt++
	s.unackedN++
	s.byID.Push(p)
	s.due(p)
}
