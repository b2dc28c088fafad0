package porous

import (
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Poll applies the timers at now, then writes the next frame due into buf
// and returns its length, or 0 when nothing is due. Call it until it
// returns 0. buf must hold at least MaxFrameSize bytes; with a shorter buf
// nothing is written.
//
// Frames leave in the reference's flush order (docs/protocols/porous.md §3.1): queued
// control frames (Connect, ConnectAck, Ping, PingAck, Disconnect,
// DisconnectAck) in the order they were queued, then, only while
// connected, DataAcks for every frame accepted since the previous one,
// then Data frames: resends first, then new frames as the congestion and
// transfer windows allow.
func (s *Session) Poll(now time.Time, buf []byte) int {
	if s.st == stZombie || len(buf) < MaxFrameSize {
		return 0
	}
	s.setNow(now)
	s.stamp(s.now)
	s.applyTimers()
	n := 0
	if s.st == stZombie {
		if s.finalDisc {
			s.finalDisc = false
			n = s.writeCtl(buf, ctlFrame{typ: FrameDisconnect})
		}
	} else {
		n = s.next(buf)
	}
	if n > 0 {
		s.stats.PacketsSent++
		s.stats.BytesSent += uint64(n)
	}
	return n
}

// next writes the next frame due, or returns 0.
func (s *Session) next(buf []byte) int {
	if s.ctl.Len() > 0 {
		c := *s.ctl.Front()
		s.ctl.Pop()
		return s.writeCtl(buf, c)
	}
	if s.st != stConnected {
		return 0
	}
	if n := s.writeDataAck(buf); n > 0 {
		return n
	}
	if n := s.writeData(buf); n > 0 {
		return n
	}
	if s.closing && s.flushed() {
		s.enterDisconnecting()
		s.discAt = s.now.Add(DisconnectInterval)
		return s.writeCtl(buf, ctlFrame{typ: FrameDisconnect})
	}
	return 0
}

// flushed reports whether everything queued was sent and acknowledged,
// which a graceful close waits for (docs/protocols/porous.md §3.8).
func (s *Session) flushed() bool {
	return s.pending == 0 && s.ring.n == 0 && s.active[High].Len() == 0 && s.active[Low].Len() == 0
}

// sendsConnect reports whether Connect is repeated: while connecting and
// unacknowledged, and, with Config.Accept, once the peer's Connect came.
func (s *Session) sendsConnect() bool {
	return s.st == stConnecting && !s.ourAcked && (!s.cfg.Accept || s.accepted)
}

// applyTimers runs the timers due at s.now: the handshake timeout, the
// idle watchdog, Linger, TIME-WAIT, and the repeats of Connect, Ping and
// Disconnect, and declares lost the frames whose RTO ran out.
func (s *Session) applyTimers() {
	now := s.now
	idle := s.cfg.IdleTimeout > 0 && !now.Before(s.lastRx.Add(s.cfg.IdleTimeout))
	linger := s.closing && !now.Before(s.closeAt.Add(s.cfg.Linger))
	switch s.st {
	case stConnecting:
		switch {
		case idle, s.cfg.HandshakeTimeout > 0 && !now.Before(s.created.Add(s.cfg.HandshakeTimeout)):
			s.fail(engine.ErrHandshakeTimeout)
		case linger:
			s.fail(s.lingerError())
			s.finalDisc = s.gotConnect
		case s.sendsConnect() && !now.Before(s.connectAt):
			s.pushCtl(FrameConnect, s.nonce)
			s.connectAt = now.Add(ConnectInterval)
		}
	case stConnected:
		switch {
		case idle:
			s.fail(engine.ErrIdleTimeout)
		case linger:
			s.fail(s.lingerError())
			s.finalDisc = true
		default:
			if s.chalKind != challengeNone && !now.Before(s.chalUntil) {
				s.challengeExpired()
				if s.st != stConnected {
					break // the challenged Disconnect was taken
				}
			}
			s.detectLosses()
			s.updateCC(0)
			if !now.Before(s.pingAt) {
				s.sendPing()
			}
		}
	case stDisconnecting:
		switch {
		case idle || linger:
			s.fail(s.lingerError())
		case !now.Before(s.discAt):
			s.pushCtl(FrameDisconnect, 0)
			s.discAt = now.Add(DisconnectInterval)
		}
	case stDisconnected:
		if !now.Before(s.twEnd) {
			s.st = stZombie
		}
	}
}

// writeCtl writes control frame c.
func (s *Session) writeCtl(buf []byte, c ctlFrame) int {
	f := Frame{Type: c.typ}
	switch c.typ {
	case FrameConnect:
		f.Version, f.Channels, f.MaxRxBandwidth, f.Nonce = Version, s.cfg.Channels, s.cfg.MaxRxBandwidth, c.v
	case FrameConnectAck:
		f.Nonce = c.v
	case FramePing, FramePingAck:
		f.PingID = uint16(c.v)
	}
	return len(f.AppendTo(buf[:0]))
}

// Deadline returns when Poll must next be called: s's latest time when a
// frame is due at once, else the earliest of the frame timeouts and the
// Connect, Ping and Disconnect repeats, the handshake timeout, the idle
// watchdog, Linger and TIME-WAIT. It is zero in StateClosed. A caller
// that polls at the deadline always makes progress: either a frame is
// written or the deadline moves.
func (s *Session) Deadline() time.Time {
	if s.st == stZombie {
		return time.Time{}
	}
	if s.ctl.Len() > 0 {
		return s.now
	}
	var d time.Time
	at := func(t time.Time) {
		if d.IsZero() || t.Before(d) {
			d = t
		}
	}
	if s.cfg.IdleTimeout > 0 && s.st <= stDisconnecting {
		at(s.lastRx.Add(s.cfg.IdleTimeout))
	}
	if s.closing && s.st <= stDisconnecting {
		at(s.closeAt.Add(s.cfg.Linger))
	}
	switch s.st {
	case stConnecting:
		if s.cfg.HandshakeTimeout > 0 {
			at(s.created.Add(s.cfg.HandshakeTimeout))
		}
		if s.sendsConnect() {
			at(s.connectAt)
		}
	case stConnected:
		if len(s.ackq) > 0 || s.closing && s.flushed() {
			return s.now
		}
		if t, ok := s.dataAt(); ok {
			at(t)
		}
		at(s.pingAt)
		if t, ok := s.lossAt(); ok {
			at(t)
		}
		if s.chalKind != challengeNone {
			at(s.chalUntil)
		}
	case stDisconnecting:
		at(s.discAt)
	case stDisconnected:
		at(s.twEnd)
	}
	return d
}
