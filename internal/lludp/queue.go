package lludp

import (
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
)

// Bounds of the session's tables.
const (
	// maxPendingAcks bounds the acknowledgements owed to the peer. At the
	// bound a new one is dropped; the peer resends that datagram and it is
	// acknowledged then. Poll flushes a full PacketAck's worth (251) at
	// once, so the bound is reached only when Poll is not called.
	maxPendingAcks = 4096
	// maxPongs bounds the CompletePingCheck answers owed; further
	// StartPingChecks are not answered until Poll sends these.
	maxPongs = 16
	// MaxRecvQueue bounds the messages delivered and not yet taken by
	// Recv. At the bound, as while SetRecvOpen(false) holds, a datagram
	// carrying an application message that has not arrived before is
	// still taken for its appended acks, but its message is dropped,
	// counted in Stats.Refused: a reliable one is not acknowledged and
	// not entered in the duplicate window, so the peer resends it and it
	// is taken then. Transport messages and duplicates (acknowledged
	// again) are handled as always.
	MaxRecvQueue = engine.MaxRecvQueue
)

// outMsg is one message accepted by Send (or the client's UseCircuitCode).
type outMsg struct {
	number   uint32
	reliable bool
	hello    bool   // the client's UseCircuitCode
	body     []byte // Send's copy
	wire     []byte // reliable, once sent: the datagram without appended acks
	seq      uint32
	sentAt   time.Time         // last transmission
	pkt      congestion.Packet // the last transmission, as the controller counts it
	resends  int
	byRTO    bool // declared lost because its resend timeout expired
	list     msgState
	prev     *outMsg // resend or lost list
	next     *outMsg
}

// msgState says which list a sent reliable datagram is on.
type msgState uint8

const (
	inFlight msgState = iota // Session.resend
	suspect                  // Session.suspect
	lost                     // Session.lost
)

// msgList is a list of sent reliable datagrams awaiting an ack: those in
// flight or suspected lost, oldest transmission first, so that the front
// is the next timeout due; or those declared lost, in the order they are
// resent.
type msgList struct{ head, tail *outMsg }

func (l *msgList) pushBack(m *outMsg) {
	m.prev, m.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = m
	} else {
		l.head = m
	}
	l.tail = m
}

func (l *msgList) remove(m *outMsg) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		l.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		l.tail = m.prev
	}
	m.prev, m.next = nil, nil
}

// ackRing holds the sequence numbers owed an acknowledgement, oldest
// first.
type ackRing struct {
	ids        []uint32 // power-of-two length, up to maxPendingAcks; grows with use
	head, size int
}

func (r *ackRing) len() int { return r.size }

// push adds id, reporting false when the ring is full.
func (r *ackRing) push(id uint32) bool {
	if r.size == len(r.ids) {
		if r.size == maxPendingAcks {
			return false
		}
		ids := make([]uint32, max(64, 2*len(r.ids)))
		for i := range r.size {
			ids[i] = r.ids[(r.head+i)%len(r.ids)]
		}
		r.ids, r.head = ids, 0
	}
	r.ids[(r.head+r.size)%len(r.ids)] = id
	r.size++
	return true
}

func (r *ackRing) pop() uint32 {
	id := r.ids[r.head]
	r.head = (r.head + 1) % len(r.ids)
	r.size--
	return id
}

func (r *ackRing) reset() { r.head, r.size = 0, 0 }

// trim frees the ring when it is empty.
func (r *ackRing) trim() {
	if r.size == 0 {
		r.ids, r.head = nil, 0
	}
}
