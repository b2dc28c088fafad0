package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
)

// Lifecycle is the lifecycle of one association, the part of the Engine
// contract that every engine runs alike: the State and why it ended (Err),
// the start of a graceful close (Close) and the times the end timers count
// from, which Deadline and the engine's timer pass in Poll read through
// the engine's End; what HandleDatagram does around the engine's own
// parsing (Input); the counters behind Stats; and the queue of delivered
// messages behind Recv and SetRecvOpen.
//
// An engine embeds one, made by NewLifecycle, which provides its State,
// Err, Recv and SetRecvOpen methods; the engine keeps what its wire does
// differently: when it is established (Establish), what Close sends,
// which timers end it and with what error, what it delivers (Inbox) and
// how it refuses new messages (Refusing). The zero Lifecycle is in
// StateHandshake.
type Lifecycle struct {
	// Counters are the engine's counters, which its Stats returns with
	// its estimates (Snapshot).
	Counters Stats
	// Inbox holds the messages delivered and not yet taken by Recv.
	Inbox FIFO[Message]
	// Created is when the engine was made: the handshake timeout counts
	// from it.
	Created time.Time
	// LastRecv is when the latest datagram from the peer was accepted:
	// the idle timeout counts from it, and keepalives (KeepAliveAt).
	LastRecv time.Time
	// CloseAt is when the graceful close began (BeginClose): Linger
	// counts from it.
	CloseAt time.Time
	err     error
	state   State
	shut    bool // SetRecvOpen(false)
}

// MaxRecvQueue bounds the messages delivered and not yet taken by Recv:
// at the bound an engine refuses new messages as with SetRecvOpen(false)
// (see Refusing).
const MaxRecvQueue = 4096

// NewLifecycle returns the lifecycle of an engine made at now: in
// StateHandshake, Created and LastRecv now.
func NewLifecycle(now time.Time) Lifecycle {
	return Lifecycle{Created: now, LastRecv: now}
}

// State returns the lifecycle state (Engine.State).
func (l *Lifecycle) State() State { return l.state }

// Err returns why the association ended once it is in StateClosed (nil
// after a graceful close), and nil before (Engine.Err).
func (l *Lifecycle) Err() error {
	if l.state != StateClosed {
		return nil
	}
	return l.err
}

// Establish moves an association in StateHandshake to StateEstablished:
// its handshake completed. In another state it does nothing (an
// association closing during its handshake stays in StateClosing).
func (l *Lifecycle) Establish() {
	if l.state == StateHandshake {
		l.state = StateEstablished
	}
}

// BeginClose begins the graceful close Engine.Close asks for at now. An
// association closing or closed already is left as it is, and one still
// in StateHandshake with nothing to close (nothing: no peer to tell,
// nothing pending; the engine says) ends at once, gracefully. Otherwise
// it enters StateClosing, Linger counting from CloseAt, now, and
// BeginClose reports true: the engine then starts its own close.
func (l *Lifecycle) BeginClose(now time.Time, nothing bool) bool {
	switch {
	case l.state >= StateClosing:
		return false
	case l.state == StateHandshake && nothing:
		l.Fail(nil)
		return false
	}
	l.state, l.CloseAt = StateClosing, now
	return true
}

// PeerClosing enters StateClosing without Close, the peer having closed
// first while the engine still answers it (POROUS's TIME-WAIT): CloseAt,
// and with it Linger, does not change.
func (l *Lifecycle) PeerClosing() { l.state = StateClosing }

// Fail ends the association: StateClosed, with err as Err (nil for a
// graceful end).
func (l *Lifecycle) Fail(err error) {
	l.state, l.err = StateClosed, err
}

// Deadline returns what Engine.Deadline returns: zero in StateClosed,
// else the earlier of end, the engine's timers that end the association,
// and next(), the earliest of its other timers.
func (l *Lifecycle) Deadline(end End, next func() time.Time) time.Time {
	if l.state == StateClosed {
		return time.Time{}
	}
	d := Earliest{next()}
	d.Add(end.At, end.OK)
	return d.Time()
}

// Linger returns the Linger timer, which runs in StateClosing: linger
// after CloseAt, ending with ErrLingerTimeout (reported as LingerError
// when it fires).
func (l *Lifecycle) Linger(linger time.Duration) (e End) {
	if l.state == StateClosing {
		e.Add(l.CloseAt.Add(linger), ErrLingerTimeout)
	}
	return e
}

// HandshakeTimeout returns the handshake timeout, which runs in
// StateHandshake when timeout is positive: timeout after Created, ending
// with ErrHandshakeTimeout.
func (l *Lifecycle) HandshakeTimeout(timeout time.Duration) (e End) {
	if l.state == StateHandshake && timeout > 0 {
		e.Add(l.Created.Add(timeout), ErrHandshakeTimeout)
	}
	return e
}

// IdleTimeout returns the idle timeout, which runs when timeout is
// positive: timeout after LastRecv, ending with ErrIdleTimeout.
func (l *Lifecycle) IdleTimeout(timeout time.Duration) (e End) {
	if timeout > 0 {
		e.Add(l.LastRecv.Add(timeout), ErrIdleTimeout)
	}
	return e
}

// Input runs what every engine's HandleDatagram does around its own
// parsing and handling of a datagram (Engine.HandleDatagram): in
// StateClosed it returns ErrClosed without calling handle; otherwise it
// returns handle's error, and counts it in Counters.PacketsRejected when
// it wraps ErrMalformed or ErrRejected.
func (l *Lifecycle) Input(handle func() error) error {
	if l.state == StateClosed {
		return ErrClosed
	}
	err := handle()
	if errors.Is(err, ErrMalformed) || errors.Is(err, ErrRejected) {
		l.Counters.PacketsRejected++
	}
	return err
}

// Recv returns the next delivered message, from Inbox (Engine.Recv), and
// counts it in Counters.MessagesRecv.
func (l *Lifecycle) Recv() (Message, bool) {
	m, ok := l.Inbox.Take()
	if ok {
		l.Counters.MessagesRecv++
	}
	return m, ok
}

// SetRecvOpen opens or closes the engine to new data from the peer
// (Engine.SetRecvOpen), which the engine applies through Refusing or
// RecvOpen.
func (l *Lifecycle) SetRecvOpen(open bool) { l.shut = !open }

// RecvOpen reports whether SetRecvOpen left the engine open to new data.
func (l *Lifecycle) RecvOpen() bool { return !l.shut }

// Refusing reports whether the engine refuses new messages now: it is
// closed to new data (SetRecvOpen), or MaxRecvQueue messages wait in
// Inbox.
func (l *Lifecycle) Refusing() bool { return l.shut || l.Inbox.Len() >= MaxRecvQueue }

// Heard records a datagram of n bytes from the peer, accepted at now:
// LastRecv, and Counters.PacketsReceived and BytesReceived.
func (l *Lifecycle) Heard(now time.Time, n int) {
	l.LastRecv = now
	l.Counters.PacketsReceived++
	l.Counters.BytesReceived += uint64(n)
}

// Sent counts a datagram of n bytes that Poll returns (none when n is 0)
// in Counters.PacketsSent and BytesSent, and returns n.
func (l *Lifecycle) Sent(n int) int {
	if n > 0 {
		l.Counters.PacketsSent++
		l.Counters.BytesSent += uint64(n)
	}
	return n
}

// Snapshot returns what Engine.Stats returns: Counters, with the engine's
// round-trip estimate (SRTT, RTTVar, RTO: each engine says where they come
// from) and the figures of its congestion controller cc.
func (l *Lifecycle) Snapshot(srtt, rttVar, rto time.Duration, cc *congestion.Controller) Stats {
	st := l.Counters
	st.SRTT, st.RTTVar, st.RTO = srtt, rttVar, rto
	st.Congestion = cc.Stats()
	return st
}

// LingerError returns Err when Linger ran out with pending messages not
// yet confirmed by the peer: nil when there are none, else an error
// wrapping ErrLingerTimeout that counts them.
func LingerError(pending int) error {
	return Unconfirmed(ErrLingerTimeout, pending)
}

// Unconfirmed returns nil when pending is 0, else err (ErrLingerTimeout,
// ErrPeerClosed) wrapped with the count of messages left unconfirmed: "3
// messages unconfirmed".
func Unconfirmed(err error, pending int) error {
	if pending == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d messages unconfirmed", err, pending)
}
