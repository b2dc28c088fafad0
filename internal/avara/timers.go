package avara

import (
	"fmt"
	"math"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// The reference's round-trip estimate (docs/protocols/avara.md §3.4), in
// milliseconds.
const (
	initialRetransmit = 2000 * time.Millisecond
	maxRetransmit     = 4000 * time.Millisecond
	// frameTime is the reference's default frame time; the retransmit
	// time is at least two frames.
	frameTime     = 16 * time.Millisecond
	minRetransmit = 2 * frameTime
	initialMean   = 500.0
	initialVar    = 64 * 64
	// fpsScale is the frame time over the classic 64 ms frame.
	fpsScale = float64(frameTime) / float64(64*time.Millisecond)
	// earlySerials: while the highest serial acknowledged is at most
	// this, samples only lower the mean.
	earlySerials = 10
)

// estimator is the reference's RTT estimate: a mean and variance fed by
// the acknowledgements of game frames and pings, and the retransmit time
// derived from them. There is no back-off.
type estimator struct {
	mean, vari float64 // ms, ms²
	retransmit time.Duration
}

func newEstimator() estimator {
	return estimator{mean: initialMean, vari: initialVar, retransmit: initialRetransmit}
}

// sample feeds the round trip d of a message with command cmd and p3,
// acknowledged while the highest serial acknowledged was early or not.
//
// The reference counts in whole milliseconds (its ClockTick): the round
// trip, a ping's round trip × 0.82 and the retransmit time, mean +
// 2.5 × deviation, are each cut to an integer (avaraline/Avara aaa5e63,
// src/net/CUDPConnection.cpp, CUDPConnection::ValidatePacket).
func (e *estimator) sample(d time.Duration, cmd int8, p3 int32, early bool) {
	ms := float64(d / time.Millisecond)
	if early {
		if ms < e.mean {
			e.mean, e.vari = ms, min(ms*ms, initialVar)
		}
		return
	}
	var weight float64
	switch {
	case cmd == CommandKeyAndMouse:
		weight = fpsScale
	case cmd == CommandPing && p3 > 0:
		weight = 25.6
		ms = math.Trunc(ms * 0.82)
		if diff := ms - e.mean; diff > 64 {
			weight /= max(4, diff*diff/max(e.vari, 1))
		}
	default:
		return
	}
	alpha := weight / 100
	diff := ms - e.mean
	e.mean += alpha * diff
	e.vari = (1 - alpha) * (e.vari + alpha*diff*diff)
	rt := time.Duration(e.mean+math.Trunc(2.5*math.Sqrt(e.vari))) * time.Millisecond
	e.retransmit = max(minRetransmit, min(rt, maxRetransmit))
}

func (e *estimator) srtt() time.Duration { return time.Duration(e.mean * float64(time.Millisecond)) }
func (e *estimator) dev() time.Duration {
	return time.Duration(math.Sqrt(e.vari) * float64(time.Millisecond))
}

// rto is the time after which a message is sent again: the reference's
// retransmit time, or the RFC 6298 RTO with Config.AckRTT.
func (s *Session) rto() time.Duration {
	if s.rtt != nil {
		return s.rtt.RTO()
	}
	return s.est.retransmit
}

// Deadline returns when Poll must next be called: the earliest of the
// next message due (a new one at once, within the window and as the
// congestion controller and the quota of Config.ReferencePeer allow; a
// resend at its time), the pure acknowledgement, and the handshake, dead,
// idle, linger and Logout timers. It is zero in StateClosed. A time not
// after the latest time passed in means "now".
func (s *Session) Deadline() time.Time { return s.Lifecycle.Deadline(s.endAt(), s.deadline) }

// deadline is the earliest of the timers other than endAt.
func (s *Session) deadline() time.Time {
	var d engine.Earliest
	d.Add(s.ackDue())
	d.Add(s.pokeAt())
	if t, ok := s.dueAt(); ok {
		if t.After(s.now) {
			d.Add(t, true)
		} else {
			// Due now: the congestion controller decides (never, when the
			// window is full: an acknowledgement or a resend timer comes
			// first).
			// With Config.ReferencePeer the quota decides too: the
			// later of both.
			n := s.cc.NextSend(s.now, packSize)
			if q := s.quotaReady(); !n.IsZero() && q.After(n) {
				n = q
			}
			d.Add(n, !n.IsZero())
		}
	}
	d.Add(s.lossAt())
	d.Add(s.challengeAt())
	return d.Time()
}

// lossAt returns when the next datagram still counted in flight is found
// lost: the resend time of a message whose latest transmission it is.
// The congestion controller may hold resends back until then.
func (s *Session) lossAt() (time.Time, bool) {
	var t time.Time
	for _, m := range s.flight {
		if !m.acked && m.dg != nil && m.dg.pkt.InFlight() && (t.IsZero() || m.nextSend.Before(t)) {
			t = m.nextSend
		}
	}
	return t, !t.IsZero()
}

// dueAt returns when the next message is due, ignoring the congestion
// controller: now for a message never sent that may go, else the
// earliest resend; false when there is none.
func (s *Session) dueAt() (time.Time, bool) {
	if s.sendable() {
		return s.now, true
	}
	var t time.Time
	for _, m := range s.flight {
		if !m.acked && (t.IsZero() || m.nextSend.Before(t)) {
			t = m.nextSend
			if s.unheard >= throttleResends {
				break // throttled: the oldest alone
			}
		}
	}
	return t, !t.IsZero()
}

// ackDue returns when a pure acknowledgement is due: AckDelay after
// something arrived, at once when the peer logged out; and, even if
// nothing arrived, heldAckInterval after the last datagram sent while
// messages are held behind a gap or, with Config.ReferencePeer, while
// fewer than ackRepeats datagrams went out since a message last arrived.
// A reference sender whose last resends, or our acknowledgement of them,
// were lost waits for a datagram from us before it resends anything (see
// heldAckInterval): with a gap the missing message never comes; without
// one, its messages stay unacknowledged until its 120 s dead timeout
// ends the connection. The repeats make that need every one of
// ackRepeats datagrams lost.
func (s *Session) ackDue() (time.Time, bool) {
	switch {
	case !s.owe && (s.nHeld > 0 || s.cfg.ReferencePeer && s.acksSent < ackRepeats):
		return s.lastSent.Add(s.heldAckInterval()), true
	case !s.owe:
		return time.Time{}, false
	case s.loggedOut:
		return s.now, true
	}
	return s.oweSince.Add(s.cfg.AckDelay), true
}

// heldAckInterval is how long a receiver holding messages behind a gap
// waits after its last datagram before acknowledging again although
// nothing arrived. A reference sender that has resent 3 messages without
// hearing from us sends nothing old until a datagram from us arrives
// (avaraline/Avara aaa5e63, src/net/CUDPConnection.cpp:
// CUDPConnection::FindBestPacket skips messages sent before while
// numResendsWithoutReceive is MAX_RESENDS_WITHOUT_RECEIVE, and only
// CUDPConnection::ValidatePackets, run for every datagram read from the
// peer, resets it), so the missing message would never come again. The
// interval is the one at which a reference receiver itself acknowledges
// (kAckRetransmitBase, 41 ms, plus its retransmit time after its last
// datagram, CUDPConnection::GetOutPacket): AckDelay plus our retransmit
// time, 73 ms to 4.041 s with the defaults, so at most one small
// datagram per retransmit time while the gap lasts, and a resend held
// back by the peer's throttle goes out within about a retransmit time.
func (s *Session) heldAckInterval() time.Duration { return s.cfg.AckDelay + s.rto() }

// endAt returns the timers that end the session by themselves: the
// handshake timeout, the dead timeout of the oldest unacknowledged
// message, the idle timeout, Linger (engine.ErrLingerTimeout, which Poll
// turns into Err, see endError) and, with Config.ReferencePeer, the
// Logout's last wait.
func (s *Session) endAt() (end engine.End) {
	switch {
	case s.State() != engine.StateHandshake || s.cfg.HandshakeTimeout < 0:
	case s.cfg.Client || s.login:
		end.Add(s.Created.Add(s.cfg.HandshakeTimeout), engine.ErrHandshakeTimeout)
	}
	for _, m := range s.flight {
		if !m.acked {
			from := m.firstSent
			if s.lastAcked.After(from) {
				from = s.lastAcked
			}
			end.Add(from.Add(s.cfg.DeadTimeout), engine.ErrRetransmitLimit)
			break
		}
	}
	end.Join(s.IdleTimeout(s.cfg.IdleTimeout))
	end.Join(s.Linger(s.cfg.Linger))
	if s.State() == engine.StateClosing {
		if s.cfg.ReferencePeer && len(s.flight) == 1 && s.queue.Len() == 0 && len(s.ctl) == 0 {
			// The Logout alone is unacknowledged (it waited for all
			// else, see Close): a reference peer, which never
			// acknowledges it, has gone once it went out logoutSends
			// times.
			if m := s.flight[0]; m.params.Command == CommandLogout && m.sendCount >= logoutSends {
				end.Add(m.nextSend, nil)
			}
		}
	}
	return end
}

// endError is Err when the end timer that fires ends with err.
func (s *Session) endError(err error) error {
	switch {
	case err == engine.ErrHandshakeTimeout && s.cfg.Client:
		return fmt.Errorf("%w: avara: no connection table from the server within %v: the password may be wrong or the server full",
			engine.ErrHandshakeTimeout, s.cfg.HandshakeTimeout)
	case err == engine.ErrHandshakeTimeout:
		return fmt.Errorf("%w: avara: the client did not acknowledge its connection table within %v",
			engine.ErrHandshakeTimeout, s.cfg.HandshakeTimeout)
	case err == engine.ErrRetransmitLimit:
		return fmt.Errorf("%w: avara: nothing acknowledged for %v", engine.ErrRetransmitLimit, s.cfg.DeadTimeout)
	case err == engine.ErrLingerTimeout:
		return engine.LingerError(s.pending)
	}
	return err
}
