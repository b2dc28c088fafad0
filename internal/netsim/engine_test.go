package netsim

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// srEngine is a minimal selective-repeat engine for testing the Sim: every
// message is its own datagram, retransmitted every rto until acknowledged;
// every data datagram is acknowledged individually.
//
// Wire format: kind (1 byte: srData or srAck), sequence number (4 bytes,
// big endian), then the message for srData.
type srEngine struct {
	now     time.Time
	rto     time.Duration
	maxQ    int
	next    uint32
	unacked []*srOut // in sequence order
	acks    []uint32
	seen    map[uint32]bool
	inbox   []engine.Message
	st      engine.Stats
	closed  bool
	maxMsg  int
}

type srOut struct {
	seq  uint32
	data []byte
	due  time.Time // zero: never sent
}

const (
	srData = 'D'
	srAck  = 'A'
	srHdr  = 5
)

var _ engine.Engine = (*srEngine)(nil)

func newSR(rto time.Duration, maxQ int) *srEngine {
	return &srEngine{rto: rto, maxQ: maxQ, seen: make(map[uint32]bool), maxMsg: 1000}
}

func (e *srEngine) reject(format string, args ...any) error {
	e.st.PacketsRejected++
	return fmt.Errorf("%w: "+format, append([]any{engine.ErrMalformed}, args...)...)
}

func (e *srEngine) HandleDatagram(now time.Time, p []byte) error {
	e.now = now
	if len(p) < srHdr {
		return e.reject("%d bytes", len(p))
	}
	seq := binary.BigEndian.Uint32(p[1:])
	switch p[0] {
	case srData:
		e.acks = append(e.acks, seq)
		if e.seen[seq] {
			e.st.Duplicates++
			break
		}
		e.seen[seq] = true
		e.inbox = append(e.inbox, engine.Message{Data: append([]byte(nil), p[srHdr:]...), Reliable: true})
	case srAck:
		for i, m := range e.unacked {
			if m.seq == seq {
				e.unacked = append(e.unacked[:i], e.unacked[i+1:]...)
				break
			}
		}
	default:
		return e.reject("kind %q", p[0])
	}
	e.st.PacketsReceived++
	e.st.BytesReceived += uint64(len(p))
	return nil
}

func (e *srEngine) Send(p []byte, _ engine.SendOptions) error {
	switch {
	case e.closed:
		return engine.ErrClosed
	case len(p) == 0:
		return engine.ErrEmptyMessage
	case len(p) > e.maxMsg:
		return engine.ErrMessageTooLarge
	case len(e.unacked) >= e.maxQ:
		return engine.ErrQueueFull
	}
	e.unacked = append(e.unacked, &srOut{seq: e.next, data: append([]byte(nil), p...)})
	e.next++
	return nil
}

func (e *srEngine) Poll(now time.Time, buf []byte) int {
	e.now = now
	if len(e.acks) > 0 {
		buf[0] = srAck
		binary.BigEndian.PutUint32(buf[1:], e.acks[0])
		e.acks = e.acks[1:]
		return e.sent(srHdr)
	}
	for _, m := range e.unacked {
		if m.due.After(now) {
			continue
		}
		if m.due.IsZero() {
			e.st.MessagesSent++
		} else {
			e.st.Retransmits++
		}
		m.due = now.Add(e.rto)
		buf[0] = srData
		binary.BigEndian.PutUint32(buf[1:], m.seq)
		return e.sent(srHdr + copy(buf[srHdr:], m.data))
	}
	return 0
}

func (e *srEngine) sent(n int) int {
	e.st.PacketsSent++
	e.st.BytesSent += uint64(n)
	return n
}

func (e *srEngine) Recv() (engine.Message, bool) {
	if len(e.inbox) == 0 {
		return engine.Message{}, false
	}
	m := e.inbox[0]
	e.inbox = e.inbox[1:]
	e.st.MessagesRecv++
	return m, true
}

// SetRecvOpen is a no-op: the Sim's tests never refuse data.
func (e *srEngine) SetRecvOpen(bool) {}

func (e *srEngine) Deadline() time.Time {
	if len(e.acks) > 0 {
		return e.now
	}
	var d time.Time
	for _, m := range e.unacked {
		if d.IsZero() || m.due.Before(d) {
			d = m.due
		}
	}
	return d
}

func (e *srEngine) Close(time.Time) { e.closed = true }

func (e *srEngine) State() engine.State {
	switch {
	case !e.closed:
		return engine.StateEstablished
	case len(e.unacked) > 0:
		return engine.StateClosing
	}
	return engine.StateClosed
}

func (e *srEngine) Err() error          { return nil }
func (e *srEngine) Pending() int        { return len(e.unacked) }
func (e *srEngine) SendRoom(uint8) int  { return 1 << 20 }
func (e *srEngine) Stats() engine.Stats { return e.st }

func (e *srEngine) Capabilities() engine.Capabilities {
	return engine.Capabilities{MaxMessage: e.maxMsg, MaxQueued: e.maxQ, Channels: 1}
}

// stubEngine misbehaves on demand: a fixed Deadline, an echo of every
// datagram, an error from every HandleDatagram.
type stubEngine struct {
	deadline time.Time
	echo     bool
	err      error
	out      [][]byte
	handled  int
}

var _ engine.Engine = (*stubEngine)(nil)

func (e *stubEngine) HandleDatagram(_ time.Time, p []byte) error {
	e.handled++
	if e.echo {
		e.out = append(e.out, append([]byte(nil), p...))
	}
	return e.err
}

func (e *stubEngine) Poll(_ time.Time, buf []byte) int {
	if len(e.out) == 0 {
		return 0
	}
	n := copy(buf, e.out[0])
	e.out = e.out[1:]
	return n
}

func (e *stubEngine) Send([]byte, engine.SendOptions) error { return engine.ErrUnsupported }
func (e *stubEngine) Recv() (engine.Message, bool)          { return engine.Message{}, false }
func (e *stubEngine) SetRecvOpen(bool)                      {}
func (e *stubEngine) Deadline() time.Time                   { return e.deadline }
func (e *stubEngine) Close(time.Time)                       {}
func (e *stubEngine) State() engine.State                   { return engine.StateEstablished }
func (e *stubEngine) Err() error                            { return nil }
func (e *stubEngine) Pending() int                          { return 0 }
func (e *stubEngine) SendRoom(uint8) int                    { return 0 }
func (e *stubEngine) Stats() engine.Stats                   { return engine.Stats{} }
func (e *stubEngine) Capabilities() engine.Capabilities     { return engine.Capabilities{} }
