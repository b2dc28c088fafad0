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
			s.Fail(engine.LingerError(s.pending))
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
		s.Fail(engine.ErrPeerRestarted)
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
		kx, err := GenerateKeyPair(s.cfg.Rand)
		if err != nil {
			s.Fail(err)
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
			kx, err := GenerateKeyPair(s.cfg.Rand)
			if err != nil {
				s.Fail(err)
				return err
			}
			s.cryptoOf().kx = kx
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
			s.Fail(ErrIncorrectRemoteIdentity)
			return nil
		}
		s.Fail(resultError(h.Data[0]))
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
		keys, err := ClientSessionKeys(s.crypt.kx, [KeySize]byte(data[1:]))
		if err != nil {
			return err
		}
		s.keys = &keys
		if s.cfg.ServerKey == nil {
			s.authDone(now)
			return nil
		}
		s.crypt.challenge = make([]byte, ChallengeSize)
		if _, err := io.ReadFull(s.cfg.Rand, s.crypt.challenge); err != nil {
			s.Fail(err)
			return err
		}
		sealed, err := SealChallenge(s.cfg.Rand, s.cfg.ServerKey, s.crypt.challenge)
		if err != nil {
			s.Fail(err)
			return err
		}
		s.authWant = AuthAuthentication
		s.sendHandshake(now, OpAuthMsg, append([]byte{AuthAuthentication}, sealed...), true)
	case data[0] == AuthAuthentication:
		if subtle.ConstantTimeCompare(data[1:], s.crypt.challenge) != 1 {
			s.Fail(ErrIncorrectRemoteIdentity)
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
	case ResultIncompatibleProtocol:
		return fmt.Errorf("%w: wirefox: the server refused the handshake as another protocol (ConnectResult %d)", engine.ErrIncompatible, r)
	case ResultIncompatibleVersion:
		return fmt.Errorf("%w: wirefox: the server speaks another protocol version (ConnectResult %d)", engine.ErrIncompatible, r)
	case ResultIncompatibleSecurity:
		return fmt.Errorf("%w: wirefox: the server's encryption differs from ours: both ends must set Config.WirefoxEncrypt alike (ConnectResult %d)", engine.ErrIncompatible, r)
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

// established completes the handshake on the wire. An unencrypted server
// then waits for the proof of the client's address (phaseProof, see
// proves); an encrypted one has it: the client's DONE is sealed with keys
// that need the server's key-exchange key, sent only to that address.
func (s *Session) established(now time.Time) {
	switch {
	case s.phase == phaseDone || s.phase == phaseProof:
		return
	case !s.cfg.Client && !s.cfg.Encrypt && !s.cfg.ProvenAbove:
		s.phase = phaseProof
		s.hsSent, s.hsNext = 0, now
		return
	}
	s.connected(now)
}

// proves reports whether acks, the ACK list of a connected datagram the
// client sent in phaseProof, acknowledges one of the probes sent since
// (every connected datagram this end sent so far, hsSent of them ending
// before nextDgram). A probe is a keepalive (see writeKeepAlive), which
// the reference and this package acknowledge; its ID, counted from a
// random first ID (firstDgramID), reaches only the client's true
// address, so that a blind source, whatever it sends, never gets a
// session past its handshake. Until then the client's connected
// datagrams are dropped unacknowledged (the reference sends its packets
// again after its timeout; docs/protocols/wirefox.md §3.2, §5).
func (s *Session) proves(acks []uint32) bool {
	for _, id := range acks {
		if d := s.nextDgram - id; d > 0 && d <= s.hsSent {
			return true
		}
	}
	return false
}

// connected completes the handshake: the session is established.
func (s *Session) connected(now time.Time) {
	s.phase = phaseDone
	s.Establish()
	if s.State() == engine.StateClosing {
		s.CloseAt = now // Linger counts from the end of the handshake
	}
}

// challenged reports whether an announcement of kind k may be acted on
// (see engine.Challenge): a close without Config.Challenge, anything
// before the session is established, or once a challenge ran out
// unanswered. Starting one sends a probe at once.
func (s *Session) challenged(now time.Time, k engine.ChallengeKind) bool {
	if k == engine.ChallengeClose && !s.cfg.Challenge || s.State() != engine.StateEstablished {
		return true
	}
	act, started := s.chal.Ask(now, k, s.nextDgram, now.Add(s.challengeWait()))
	if started {
		s.Counters.Challenges++
		if !now.Before(s.lastKA.Add(s.probeInterval())) {
			s.kaDue, s.lastKA = true, now
		}
	}
	return act
}

// probeInterval is the least time between two keepalives a challenge
// sends: challengeWait/engine.ChallengeProbes. A challenge that starts
// sooner after the last keepalive sends its first probe when the interval
// ends, so an attacker whose spoofs start challenge after challenge gets
// one keepalive per interval out of this end, not one per spoof.
func (s *Session) probeInterval() time.Duration {
	return s.challengeWait() / engine.ChallengeProbes
}

// challengeWait is how long a challenge waits for the live peer: two
// timeouts and challengeSlack, at least engine.ChallengeMin.
func (s *Session) challengeWait() time.Duration {
	return max(2*s.rto()+challengeSlack, engine.ChallengeMin)
}

// The probes of a challenge are the datagrams sent while it runs: a
// keepalive at once (or once probeInterval has passed since the last) and
// every probeInterval
// (see Config.KeepAlive; the reference acknowledges it, and a peer of
// this package once it sent its DISCONNECT_REQUEST acknowledges nothing),
// and whatever data goes out meanwhile. The peer's ACK of any of them,
// whose IDs it learns only at its true address, answers the challenge.

// answers reports whether id, a datagram ID the peer acknowledged, is
// that of a probe of the running challenge: sent since it began.
func (s *Session) answers(id uint32) bool {
	return s.chal.Running() && id-s.chal.Probe < s.nextDgram-s.chal.Probe
}
