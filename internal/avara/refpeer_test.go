package avara

import (
	"bytes"
	"time"
)

// refPeer is a deterministic model of the reference program
// (avaraline/Avara aaa5e63) as a client of one of our server sessions,
// reduced to what decides delivery and timing:
//
//   - Its loop turns once per frame (refFrame, 16 ms, the default frame
//     time; longer on a busy host):
//     CUDPComm::ProcessQueue reads at most one datagram (CheckSockets in
//     src/net/AvaraTCP.cpp calls recvfrom once), hands the messages to
//     the game, then writes (CUDPComm::AsyncWrite).
//   - Its socket buffer holds refSocketDatagrams (64) datagrams; one
//     arriving when it is full is dropped, as the kernel does. The
//     reference leaves the system's default size (no SO_RCVBUF in
//     src/net/AvaraTCP.cpp); 64 is a small one, which the 16 messages
//     outstanding of ReferencePeer cannot fill.
//   - Receiving (CUDPConnection::ReceivedPacket): the next serial is
//     delivered with the held ones that follow; a later one is held; once
//     16 are held, the missing serial is skipped for good and the ack
//     field moves past it. A Logout kills the connection at once: nothing
//     is written to us again, so the Logout is never acknowledged.
//   - Acknowledging (ValidatePackets): every datagram from us resets the
//     resend throttle; AckMap bits with the x86 shift wrap; the ack field
//     acknowledges everything up to it.
//   - Sending (AsyncWrite, FindBestPacket, GetOutPacket): the byte quota
//     of pacing.go; a datagram's first message is the one due earliest,
//     more are packed while the datagram is under 64 bytes and under the
//     quota, the next min(cram levels) − 1 of them up to 5 s before their
//     time; a message sent before is not chosen after 3 resends without a
//     datagram from us; the window is 1024 messages; resends after the
//     initial retransmit time (its estimate learns only from game frames
//     and pings, which the model does not send); a pure acknowledgement
//     41 ms plus the retransmit time after its last datagram, when
//     something arrived since.
type refPeer struct {
	frame time.Duration // refFrame, longer for a busy host
	seed  int32
	id    int8 // −1 until the TOC

	// Sending.
	quota      int
	quotaAt    time.Time
	peerCram   int8
	nextSerial uint16
	out        []*refOut // queued, unacknowledged, serial order
	maxValid   uint16    // highest serial acknowledged by the ack field
	unheard    int       // resends since a datagram from us arrived
	owe        bool      // haveToSendAck
	nextAck    time.Time // nextAckTime

	// Receiving.
	sock     [][]byte
	expected uint16
	held     map[uint16]Message

	Delivered [][]byte // our game messages' data, in order
	Skipped   int      // serials given up
	Overflow  int      // datagrams dropped by the full socket buffer
	Closed    bool     // our Logout arrived
}

type refOut struct {
	m        Message
	sent     bool
	nextSend time.Time
}

const (
	refFrame           = 16 * ms
	refSocketDatagrams = 64
	refCram            = 3
	refWindow          = 2048 // serials: kMaxReceiveQueueLength messages
	refPackSize        = 64   // CRAMPACKSIZE
	refCramTime        = 5000 * ms
	refAckBase         = 41 * ms
)

// newRefPeer returns the model at now with its Login (empty password)
// queued.
func newRefPeer(now time.Time, seed int32) *refPeer {
	r := &refPeer{frame: refFrame, seed: seed, id: -1, quotaAt: now, maxValid: NothingReceived, held: map[uint16]Message{}}
	r.queue(now, Message{Command: CommandLogin, P3: seed, Data: []byte{0}})
	return r
}

// queue queues a message with the next serial, due at now.
func (r *refPeer) queue(now time.Time, m Message) {
	m.Serial = r.nextSerial
	r.nextSerial += 2
	m.Sender, m.HasSender = r.id, m.Serial <= SenderSerialMax
	m.Data = bytes.Clone(m.Data)
	r.out = append(r.out, &refOut{m: m, nextSend: now})
}

// arrive puts a datagram into the socket buffer, or drops it when full.
func (r *refPeer) arrive(b []byte) {
	if len(r.sock) >= refSocketDatagrams {
		r.Overflow++
		return
	}
	r.sock = append(r.sock, bytes.Clone(b))
}

// turn runs one loop turn at now and returns the datagrams written.
func (r *refPeer) turn(now time.Time) [][]byte {
	if r.Closed {
		return nil
	}
	r.quota += int(now.Sub(r.quotaAt)/ms) * (int(min(refCram, r.peerCram)) + 1) * quotaUnit
	r.quotaAt = now
	if len(r.sock) > 0 {
		b := r.sock[0]
		r.sock = r.sock[1:]
		r.read(now, b)
		if r.Closed {
			return nil
		}
	}
	var sent [][]byte
	for r.quota >= 0 {
		b := r.write(now)
		if b == nil {
			break
		}
		sent = append(sent, b)
	}
	return sent
}

// read processes one datagram from us.
func (r *refPeer) read(now time.Time, b []byte) {
	var d Datagram
	if ParseDatagram(b, &d, DefaultVersion) != nil {
		return
	}
	r.unheard = 0
	if d.HasAckMap {
		keep := r.out[:0]
		for _, o := range r.out {
			k := int(int16(o.m.Serial-d.Ack))>>1 - 1
			if d.AckMap&(1<<(k&31)) == 0 {
				keep = append(keep, o)
			}
		}
		r.out = keep
	}
	if int16(d.Ack-r.maxValid) > 0 {
		r.maxValid = d.Ack
		keep := r.out[:0]
		for _, o := range r.out {
			if int16(o.m.Serial-d.Ack) > 0 {
				keep = append(keep, o)
			}
		}
		r.out = keep
	}
	for _, m := range d.Messages {
		r.owe = true
		off := int16(m.Serial - r.expected)
		switch {
		case off < 0:
		case off == 0:
			r.deliver(now, m)
			r.expected += 2
			r.drain(now)
		default:
			if _, ok := r.held[m.Serial]; ok {
				continue
			}
			m.Data = bytes.Clone(m.Data)
			r.held[m.Serial] = m
			if len(r.held) >= ReferenceSkipAfter {
				r.Skipped++
				r.expected += 2
				r.drain(now)
			}
		}
		if r.Closed {
			return
		}
	}
}

// drain delivers the held messages now in order and drops older ones.
func (r *refPeer) drain(now time.Time) {
	for !r.Closed {
		for s := range r.held {
			if int16(s-r.expected) < 0 {
				delete(r.held, s)
			}
		}
		m, ok := r.held[r.expected]
		if !ok {
			return
		}
		delete(r.held, r.expected)
		r.deliver(now, m)
		r.expected += 2
	}
}

// deliver hands an in-order message to the game or the transport.
func (r *refPeer) deliver(now time.Time, m Message) {
	switch {
	case m.Command >= 0:
		r.Delivered = append(r.Delivered, bytes.Clone(m.Data))
	case m.Command == CommandTOC && m.P3 == r.seed:
		r.id = m.P1
		r.queue(now, Message{Command: CommandControl, P2: refCram})
	case m.Command == CommandControl && m.P1 == 0:
		r.peerCram = int8(m.P2)
	case m.Command == CommandLogout:
		r.Closed = true
	}
}

// best returns the queued message FindBestPacket would take at now with
// the given allowance for early sending, skipping those in taken.
func (r *refPeer) best(now time.Time, early time.Duration, taken []*refOut) *refOut {
	var b *refOut
	for _, o := range r.out {
		if o.m.Serial-r.maxValid > refWindow || o.sent && r.unheard >= throttleResends || containsOut(taken, o) {
			continue
		}
		if b == nil || o.nextSend.Before(b.nextSend) {
			b = o
		}
	}
	if b == nil || b.nextSend.Add(-early).After(now) {
		return nil
	}
	return b
}

func containsOut(l []*refOut, o *refOut) bool {
	for _, x := range l {
		if x == o {
			return true
		}
	}
	return false
}

// write builds the next datagram at now, or returns nil.
func (r *refPeer) write(now time.Time) []byte {
	first := r.best(now, 0, nil)
	if first == nil && !(r.owe && !now.Before(r.nextAck)) {
		return nil
	}
	r.quota = min(r.quota, quotaCap)
	d := Datagram{Ack: r.expected - 2}
	if len(r.held) > 0 {
		d.HasAckMap = true
		for s := range r.held {
			d.AckMap |= 1 << ((int(s-d.Ack)>>1 - 1) & 31)
		}
	}
	var taken []*refOut
	cram := int(min(refCram, r.peerCram)) - 1
	for o := first; o != nil; {
		taken = append(taken, o)
		d.Messages = append(d.Messages, o.m)
		n := len(AppendDatagram(nil, &d, DefaultVersion))
		if n >= refPackSize || n >= r.quota {
			break
		}
		early := time.Duration(0)
		if cram > 0 {
			early = refCramTime
		}
		cram--
		o = r.best(now, early, taken)
	}
	for _, o := range taken {
		if o.sent {
			r.unheard++
		}
		o.sent = true
		o.m.SendCount = min(o.m.SendCount+1, 0xFF)
		o.nextSend = now.Add(initialRetransmit)
	}
	b := AppendDatagram(nil, &d, DefaultVersion)
	r.quota -= quotaHeader + len(b)
	r.owe = false
	r.nextAck = now.Add(refAckBase + initialRetransmit)
	return b
}
