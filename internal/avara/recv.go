package avara

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

var (
	errNoLogin = fmt.Errorf("%w: avara: no connection yet: only a Login with the password opens one", engine.ErrRejected)
	errSender  = fmt.Errorf("%w: avara: sender byte names another player", engine.ErrRejected)
	errSerial  = fmt.Errorf("%w: avara: odd serial", engine.ErrRejected)
	errAck     = fmt.Errorf("%w: avara: ack field acknowledges a serial never sent", engine.ErrRejected)
)

// HandleDatagram processes one datagram received at now
// (docs/protocols/avara.md §1, §3). It returns:
//   - engine.ErrClosed in StateClosed;
//   - nil, doing nothing, for a 7-byte NAT punch datagram (§1.2): it is
//     part of the reference's traffic, neither delivered nor counted;
//   - an error wrapping engine.ErrMalformed if b does not parse (see
//     ParseDatagram, which checks the checksum with Config.Version);
//   - an error wrapping engine.ErrRejected for a server session not yet
//     opened by anything but a Login (serial 0) with the right password,
//     a message whose sender byte names another player than the
//     connection's (the Login's −1 excepted), an odd serial, or an ack
//     field beyond the last serial sent;
//   - nil otherwise.
//
// No error changes any state other than Stats.PacketsRejected, which
// counts the malformed and rejected datagrams. An accepted datagram's
// acknowledgements are applied first (an ack field older than the newest
// processed is ignored; AckMap bits only while no message more than 64
// serials beyond its base was ever sent, §4.1, §4.2), then its messages
// in order: the next expected serial is delivered, with any held
// messages that follow it; older serials are duplicates; later ones,
// within the window, are held until the missing ones arrive (or skipped
// past, with Config.SkipAfter). Every message, duplicates included, is
// acknowledged by the next datagram. Transport commands are consumed:
// Login (a server's first), TOC (a client's id and table), Control (the
// peer's cram level), Logout and a Kill naming us (the peer closed; it is
// acknowledged at once and the session ends; with Config.ChallengeClose
// an established session first challenges it, see challenge.go). Data
// are copied; b may be reused at once.
func (s *Session) HandleDatagram(now time.Time, b []byte) error {
	return s.Input(func() error {
		d := &s.dg
		err := s.parse(b, d)
		if errors.Is(err, ErrPunch) {
			return nil
		}
		if err == nil {
			err = s.check(d)
		}
		if err == nil {
			s.handle(now, d, len(b))
		}
		clear(d.Messages) // keep no reference to b
		return err
	})
}

// check refuses a parsed datagram before anything changes.
func (s *Session) check(d *Datagram) error {
	server := !s.cfg.Client
	if server && !s.login {
		if len(d.Messages) == 0 || !s.isLogin(&d.Messages[0]) {
			return errNoLogin
		}
	}
	for i := range d.Messages {
		m := &d.Messages[i]
		switch {
		case m.Serial&1 != 0:
			return errSerial
		case m.HasSender && m.Sender != s.peerID && m.Sender != s.prevID && !(server && m.Command == CommandLogin):
			return errSender
		}
	}
	if int16(d.Ack-(s.nextSerial-2)) > 0 {
		return errAck
	}
	return nil
}

// isLogin reports whether m is a Login with our password: serial 0, and
// data starting with the password as a Pascal string, compared byte for
// byte, length included (docs/protocols/avara.md §3.1).
func (s *Session) isLogin(m *Message) bool {
	if m.Serial != 0 || m.Command != CommandLogin || len(m.Data) == 0 {
		return false
	}
	n := int(m.Data[0])
	return n == len(s.cfg.Password) && 1+n <= len(m.Data) && bytes.Equal(m.Data[1:1+n], s.cfg.Password)
}

// handle applies an accepted datagram of n bytes.
func (s *Session) handle(now time.Time, d *Datagram, n int) {
	s.earn(now) // at the rate before a Control changes it
	s.now = now
	s.Heard(now, n)
	s.unheard = 0
	sample := s.applyAcks(now, d)
	for i := 0; i < len(d.Messages) && s.State() != engine.StateClosed; i++ {
		s.receive(now, &d.Messages[i])
	}
	s.detectLosses(now)
	s.updateCC(now, sample)
	s.checkClosed()
}

// applyAcks applies the datagram's ack field and AckMap
// (docs/protocols/avara.md §3.3) and returns the RTT sample of the newest
// message sent once that it acknowledged (0 if none).
func (s *Session) applyAcks(now time.Time, d *Datagram) time.Duration {
	// The RTT sample is the newest message acknowledged, if it was sent
	// once and no message acknowledged with it was sent again: a resend
	// that fills a gap acknowledges at once the messages the receiver
	// held behind it, whose time since sending includes that wait.
	var sample time.Duration
	var newest *outMsg
	resent := false
	ack := func(m *outMsg) {
		s.acked(now, m, d.Ack)
		resent = resent || m.sendCount > 1
		if newest == nil || int16(m.serial-newest.serial) > 0 {
			newest = m
		}
	}
	// Map bits are trusted only while nothing more than 64 serials beyond
	// the base was ever sent: a reference receiver holding more sets
	// aliased bits (§4.1).
	if d.HasAckMap && s.nextSerial-2-d.Ack <= mapSerials {
		for _, m := range s.flight {
			off := m.serial - d.Ack
			if !m.acked && off >= 2 && off <= mapSerials && d.AckMap&(1<<(off/2-1)) != 0 {
				ack(m)
			}
		}
	}
	if int16(d.Ack-s.peerAck) > 0 { // older fields are stale (§4.2)
		s.peerAck, s.behindSince = d.Ack, time.Time{}
		for _, m := range s.flight {
			if int16(m.serial-d.Ack) > 0 {
				break
			}
			if !m.acked {
				ack(m)
			}
		}
	} else {
		s.ackBehind(now, d.Ack)
	}
	if newest != nil && !resent {
		sample = now.Sub(newest.firstSent)
		if s.rtt != nil {
			s.rtt.Sample(sample)
		}
	}
	i := 0
	for i < len(s.flight) && s.flight[i].acked {
		s.flight[i] = nil
		i++
	}
	s.flight = s.flight[i:]
	if len(s.flight) == 0 {
		s.flight = s.flight[:0:0]
	}
	return sample
}

// acked marks m acknowledged, by a datagram whose ack field is maxValid,
// and feeds the reference's estimator.
func (s *Session) acked(now time.Time, m *outMsg, maxValid uint16) {
	m.acked = true
	s.lastAcked = now
	s.probeAcked(now, m)
	if m == s.toc {
		s.validated()
	}
	if m.dg != nil {
		if m.dg.pkt.InFlight() {
			s.cc.OnAcked(now, &m.dg.pkt)
		}
		m.dg.refs--
		m.dg = nil
	}
	// The reference samples every message, resent or not (§3.4), and
	// takes it as early from the datagram's ack field, before the AckMap
	// (maxValid in avaraline/Avara aaa5e63, src/net/CUDPConnection.cpp,
	// CUDPConnection::ValidatePackets); +2 keeps NothingReceived (−2)
	// below serial 0.
	s.est.sample(now.Sub(m.firstSent), m.params.Command, m.params.P3, maxValid+2 <= earlySerials+2)
	if !m.transport {
		s.pending--
		s.pendBytes -= len(m.data)
	}
	m.data = nil
}

// slot returns the ring slot of serial.
func (s *Session) slot(serial uint16) *held { return &s.ring[serial/2%heldSlots] }

// isHeld reports whether serial is held.
func (s *Session) isHeld(serial uint16) bool {
	if s.ring == nil {
		return false
	}
	h := s.slot(serial)
	return h.ok && h.serial == serial
}

// receive processes one message (docs/protocols/avara.md §3.3).
func (s *Session) receive(now time.Time, m *Message) {
	if !s.owe {
		s.owe, s.oweSince = true, now
	}
	s.acksSent = 0
	if s.cfg.KeepAlive > 0 && m.Command == CommandPing && m.P3 == 0 {
		s.oweSince = now.Add(-s.cfg.AckDelay) // a keepalive: answered at once
	}
	if s.loggedOut {
		return
	}
	off := m.Serial - s.expected
	if int16(off) >= 0 && s.refuseAfterLogout(m) {
		s.Counters.Refused++
		return
	}
	switch {
	case s.isHeld(m.Serial) && int16(off) >= 0 && s.cfg.ReliablePeer && !s.sameAsHeld(m):
		s.spoofed(m.Serial)
	case off == 0 && s.isHeld(m.Serial):
		// Held already and refused when its turn came (SetRecvOpen):
		// taken from the ring, so that no stale copy stays there.
		s.Counters.Duplicates++
		s.drainHeld(now)
	case off == 0:
		p := paramsOf(m)
		if s.take(now, p, m.Data, true) {
			s.recordTaken(m.Serial, p, m.Data)
			s.expected += 2
			s.drainHeld(now)
		}
	case int16(off) < 0 && !s.sameAsTaken(m):
		s.spoofed(m.Serial)
	case int16(off) < 0:
		s.Counters.Duplicates++
		if m.Command == CommandLogin && s.toc != nil {
			s.resendHandshake(now)
		}
	case off >= windowSerials:
		// Beyond the window: the peer sends it again once it may.
	case s.isHeld(m.Serial):
		s.Counters.Duplicates++
	case m.Command >= 0 && s.Refusing():
		s.Counters.Refused++
	case s.cfg.ChallengeClose && s.isClose(m.Command, m.P1):
		// Not held: a spoofed one would take the slot of the peer's
		// message. A genuine close is sent again until acknowledged.
	default:
		if s.ring == nil {
			s.ring = make([]held, heldSlots)
		}
		*s.slot(m.Serial) = held{ok: true, serial: m.Serial, data: bytes.Clone(m.Data), params: paramsOf(m)}
		s.nHeld++
		// A held message at the expected serial is one refused: never
		// skipped, it is delivered once the session takes messages.
		for s.cfg.SkipAfter > 0 && s.nHeld >= s.cfg.SkipAfter && !s.isHeld(s.expected) {
			s.skip()
			s.drainHeld(now)
		}
	}
}

// skip gives up the expected serial for good, as the reference does
// (Config.SkipAfter): it is counted in Stats.Skipped and logged at Debug
// level, and if it arrives later it is a duplicate, never delivered.
func (s *Session) skip() {
	s.Counters.Skipped++
	if s.cfg.Logger != nil {
		s.cfg.Logger.Debug("avara: skipped a missing message for good", "serial", s.expected, "held", s.nHeld)
	}
	s.expected += 2
}

// drainHeld delivers the held messages that now come in order.
func (s *Session) drainHeld(now time.Time) {
	for s.nHeld > 0 && !s.loggedOut && s.isHeld(s.expected) {
		h := s.slot(s.expected)
		if !s.take(now, h.params, h.data, false) {
			return
		}
		s.recordTaken(s.expected, h.params, h.data)
		*h = held{}
		s.nHeld--
		s.expected += 2
	}
}

// take consumes the in-order message with params p and data, copying
// data when copyData, and reports false when it is refused (a game
// message while refusing: it stays unacknowledged).
func (s *Session) take(now time.Time, p engine.Params, data []byte, copyData bool) bool {
	if p.Command >= 0 {
		if s.Refusing() {
			s.Counters.Refused++
			return false
		}
		if copyData {
			data = bytes.Clone(data)
		}
		if data == nil {
			data = []byte{}
		}
		s.Inbox.Push(engine.Message{Data: data, Reliable: true, Params: p})
		return true
	}
	switch p.Command {
	case CommandLogin:
		if !s.cfg.Client && !s.login {
			s.login, s.seed = true, p.P3
			var t TOC
			if s.cfg.Table != nil {
				t = s.cfg.Table()
			}
			s.toc = s.queueTOC(&t)
			s.queueControl()
		}
	case CommandTOC:
		if s.cfg.Client && p.P3 == s.cfg.Seed && p.P1 >= 1 && p.P1 <= MaxClients {
			s.id, s.table = p.P1, parseTOC(data)
			if s.State() == engine.StateHandshake {
				s.Establish()
				s.queueControl()
			}
		}
	case CommandControl:
		if p.P1 == 0 {
			s.peerCram = int8(max(0, min(p.P2, MaxCram)))
		}
	case CommandLogout, CommandKill:
		if !s.isClose(p.Command, p.P1) {
			break
		}
		if !s.challenged(now) {
			return false // dropped unacknowledged: taken when sent again after the challenge
		}
		s.loggedOut = true
	}
	return true
}

// checkClosed ends a closing session once everything, its Logout
// included, is acknowledged.
func (s *Session) checkClosed() {
	if s.State() == engine.StateClosing && len(s.flight) == 0 && len(s.ctl) == 0 && s.queue.Len() == 0 {
		s.Fail(nil)
	}
}
