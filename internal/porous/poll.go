package porous

import (
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Poll applies the timers at now, then writes the next frame due into buf
// and returns its length, or 0 when nothing is due. Call it until it
// returns 0. buf must hold at least MaxFrameSize bytes, and the size
// given to SetMaxFrame if it was called; with a buf shorter than
// MaxFrameSize nothing is written.
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
	return s.Sent(n)
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
	return s.pending == 0 && s.ring.n == 0 && s.active[High].Len() == 0 && s.active[Low].Len() == 0 &&
		s.newly[High].Len() == 0 && s.newly[Low].Len() == 0
}

// sendsConnect reports whether Connect is repeated: while connecting and
// unacknowledged, and, with Config.Accept, once the peer's Connect came.
func (s *Session) sendsConnect() bool {
	return s.st == stConnecting && !s.ourAcked && (!s.cfg.Accept || s.accepted)
}

// timer is one of the session's timers (see timers).
type timer uint8

const (
	tIdle       timer = iota // the idle watchdog
	tHandshake               // the handshake timeout
	tLinger                  // Linger after Close
	tConnect                 // the next Connect repeat
	tChallenge               // the end of a challenge (see challenged)
	tStall                   // a channel blocked for IdleTimeout (stallDue)
	tLoss                    // the RTO or RACK time of the oldest frame in flight (lossAt)
	tPing                    // the next Ping
	tDisconnect              // the next Disconnect repeat
	tTimeWait                // the end of TIME-WAIT
)

// timers yields each running timer of the session and when it fires,
// those that end the session first, in the order applyTimers fires them.
// It is the one place both Deadline and applyTimers learn the timers
// from, so that a Poll at the deadline always finds something due.
func (s *Session) timers(yield func(timer, time.Time) bool) {
	if s.cfg.IdleTimeout > 0 && s.st <= stDisconnecting && !yield(tIdle, s.LastRecv.Add(s.cfg.IdleTimeout)) {
		return
	}
	if s.st == stConnecting && s.cfg.HandshakeTimeout > 0 && !yield(tHandshake, s.Created.Add(s.cfg.HandshakeTimeout)) {
		return
	}
	if s.closing && s.st <= stDisconnecting && !yield(tLinger, s.CloseAt.Add(s.cfg.Linger)) {
		return
	}
	switch s.st {
	case stConnecting:
		if s.sendsConnect() {
			yield(tConnect, s.connectAt)
		}
	case stConnected:
		if s.chal.Running() && !yield(tChallenge, s.chal.Until) {
			return
		}
		if t, ok := s.stallDue(); ok && !yield(tStall, t) {
			return
		}
		if t, ok := s.lossAt(); ok && !yield(tLoss, t) {
			return
		}
		yield(tPing, s.pingDue())
	case stDisconnecting:
		yield(tDisconnect, s.discAt)
	case stDisconnected:
		yield(tTimeWait, s.twEnd)
	}
}

// pingDue returns when the next Ping is due: at pingAt or, with
// Config.PingWhenQuiet and once the first Ping has gone, KeepAlive after
// the last frame from the peer if that is later; a challenge's Pings go
// at pingAt, however busy the peer.
func (s *Session) pingDue() time.Time {
	if s.cfg.PingWhenQuiet && s.pinged && !s.chal.Running() {
		if quiet := s.LastRecv.Add(s.cfg.KeepAlive); quiet.After(s.pingAt) {
			return quiet
		}
	}
	return s.pingAt
}

// applyTimers fires, in the order timers lists them, the timers due at
// s.now, and stops once one of them changed the session's state: the
// handshake timeout, the idle watchdog, a channel's stall and Linger end
// it, a challenge that ran out may take the peer's Disconnect, TIME-WAIT
// ends in StateClosed; Connect, Ping and Disconnect are queued again, and the
// frames whose RTO ran out are declared lost.
func (s *Session) applyTimers() {
	st := s.st
	for k, at := range s.timers {
		if s.now.Before(at) {
			continue
		}
		s.fire(k)
		if s.st != st {
			return
		}
	}
}

// fire runs timer k.
func (s *Session) fire(k timer) {
	switch k {
	case tIdle:
		switch s.st {
		case stConnecting:
			s.fail(engine.ErrHandshakeTimeout)
		case stConnected:
			s.fail(engine.ErrIdleTimeout)
		default:
			s.fail(engine.LingerError(s.pending))
		}
	case tHandshake:
		s.fail(engine.ErrHandshakeTimeout)
	case tLinger:
		// One last Disconnect if the peer is connected.
		final := s.st == stConnected || s.st == stConnecting && s.gotConnect
		s.fail(engine.LingerError(s.pending))
		s.finalDisc = final
	case tConnect:
		s.pushCtl(FrameConnect, s.nonce)
		s.connectAt = s.now.Add(ConnectInterval)
	case tChallenge:
		s.challengeExpired()
	case tStall:
		s.stallCheck()
	case tLoss:
		s.detectLosses()
		s.updateCC(0)
	case tPing:
		if s.pinged && !s.chal.Running() { // not the first Ping, nor a challenge's
			engine.TraceKeepAlive(s.cfg.Tracer, s.now)
		}
		s.sendPing()
	case tDisconnect:
		s.pushCtl(FrameDisconnect, 0)
		s.discAt = s.now.Add(DisconnectInterval)
	case tTimeWait:
		s.fail(s.peerErr)
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
// frame is due at once, else the earliest of the pacer's time for the
// next Data frame and the timers (see timers): the frame timeouts, the
// Connect, Ping and Disconnect repeats, the handshake timeout, the idle
// watchdog, a channel's stall, Linger, a challenge and TIME-WAIT. It is
// zero in StateClosed.
// A caller that polls at the deadline always makes progress: either a
// frame is written or the deadline moves.
func (s *Session) Deadline() time.Time {
	if s.st == stZombie {
		return time.Time{}
	}
	if s.ctl.Len() > 0 || s.st == stConnected && (len(s.ackq) > 0 || s.closing && s.flushed()) {
		return s.now
	}
	var d engine.Earliest
	if s.st == stConnected {
		d.Add(s.dataAt())
	}
	for _, t := range s.timers {
		d.Add(t, true)
	}
	return d.Time()
}
