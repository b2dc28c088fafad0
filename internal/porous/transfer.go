package porous

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Transfer-layer constants (notes §3.3, §3.4, §6).
const (
	// TransferWindow is N_P: a new frame is only created while fewer than
	// 32768 sequence numbers separate it from the oldest unacknowledged
	// frame (paper eq. 1; the reference's value, notes §2 row 1).
	TransferWindow = 32768
	// SentinelFrameSpacing is S: a lost unreliable frame whose frame_seq
	// is ≡ S − 1 (mod S) is resent empty (paper eq. 4; notes §2 row 2).
	SentinelFrameSpacing = 16384
	// MaxCwnd is the largest congestion window, in bytes: 1 GiB.
	MaxCwnd = 1 << 30
	// minSsthresh is 2·MTU.
	minSsthresh = 2 * MaxFrameSize
	// resetFactor is ρ: the window is reset when losses continue for
	// ρ·RTO without an acknowledgement (the paper's T_rst = ρ·T_rto; the
	// reference uses ρ·RTT, notes §2 row 10).
	resetFactor = 8
	// minCapRTT is the smallest RTT used for the congestion window cap
	// RTT × rate (see Session.maxCwnd).
	minCapRTT = time.Millisecond
)

type frameState uint8

const (
	fsInFlight frameState = iota // sent, waiting for its DataAck
	fsLost                       // timed out, waiting to be resent
	fsDone                       // acknowledged or forgotten
)

// sentMsg is a reliable message of a frame in the transfer queue, kept to
// resend the frame.
type sentMsg struct {
	pkt  *outPacket // MsgFragment
	seq  uint32     // MsgSentinel, MsgWindowAck
	frag uint16     // MsgFragment
	lead uint16     // MsgSentinel
	kind MessageType
	ch   uint8
}

func (m *sentMsg) size() int {
	switch m.kind {
	case MsgFragment:
		return FragmentHeaderSize + len(m.pkt.fragment(int(m.frag)))
	case MsgSentinel:
		return SentinelSize
	}
	return WindowAckSize
}

func (m *sentMsg) appendTo(b []byte) []byte {
	switch m.kind {
	case MsgFragment:
		p := m.pkt
		return appendFragment(b, m.ch, p.seq, p.lead, m.frag, p.last, p.fragment(int(m.frag)))
	case MsgSentinel:
		return appendSentinel(b, m.ch, m.seq, m.lead)
	}
	return appendWindowAck(b, m.ch, m.seq)
}

// txFrame is one frame of the transfer queue (paper §3.1.2).
type txFrame struct {
	msgs   []sentMsg // its reliable messages: what a resend carries
	sentAt time.Time // last transmission
	seq    uint32
	size   int    // bytes on the wire at the last transmission
	sends  uint32 // transmissions
	state  frameState
}

// timeEntry schedules the timeout of transmission number sends of frame
// seq; entries are in transmission order, so in timeout order.
type timeEntry struct {
	seq   uint32
	sends uint32
}

// txRing is the transfer queue: frames base, base+1, ... in a circular
// buffer of at most TransferWindow slots. Slots keep their message
// storage for reuse.
type txRing struct {
	slots []txFrame // power-of-two length
	head  int
	n     int
	base  uint32 // frame_seq of slots[head]
}

// get returns frame seq if it is in the queue.
func (r *txRing) get(seq uint32) *txFrame {
	i := seq - r.base
	if i >= uint32(r.n) {
		return nil
	}
	return &r.slots[(r.head+int(i))&(len(r.slots)-1)]
}

// push appends frame base+n and returns its slot.
func (r *txRing) push() *txFrame {
	if r.n == len(r.slots) {
		slots := make([]txFrame, max(16, 2*len(r.slots)))
		for i := range r.n {
			slots[i] = r.slots[(r.head+i)&(len(r.slots)-1)]
		}
		r.slots, r.head = slots, 0
	}
	f := &r.slots[(r.head+r.n)&(len(r.slots)-1)]
	f.seq = r.base + uint32(r.n)
	f.msgs = f.msgs[:0]
	f.sends = 0
	r.n++
	return f
}

// popDone drops finished frames from the front.
func (r *txRing) popDone() {
	for r.n > 0 {
		f := &r.slots[r.head]
		if f.state != fsDone {
			return
		}
		clear(f.msgs)
		f.msgs = f.msgs[:0]
		r.head = (r.head + 1) & (len(r.slots) - 1)
		r.n--
		r.base++
	}
}

// writeData writes the next Data frame into buf (notes §3.3): first a lost
// frame due for its resend, else a new frame assembled from the queues. It
// returns 0 when the congestion or transfer window allows neither.
func (s *Session) writeData(buf []byte) int {
	if f := s.resendFront(); f != nil {
		if s.flight > 0 && s.flight+f.size > s.cwnd {
			return 0
		}
		s.resendq.Pop()
		n := s.encode(buf, f, nil)
		s.stats.Retransmits++
		s.transmitted(f, n)
		return n
	}
	limit, ok := s.buildLimit()
	if !ok {
		return 0
	}
	f := s.ring.push()
	size := DataHeaderSize
	unrel := s.unrel[:0]
	for {
		q := s.frontQueue()
		if q == nil {
			break
		}
		it := q.Front()
		sz := it.size()
		if size+sz > limit {
			break
		}
		size += sz
		m, reliable := s.take(q, it)
		if reliable {
			f.msgs = append(f.msgs, m)
		} else {
			unrel = append(unrel, m)
		}
	}
	s.nextSeq++
	n := s.encode(buf, f, unrel)
	for i := range unrel {
		p := unrel[i].pkt
		if p.left--; p.left == 0 {
			s.release(p)
		}
	}
	clear(unrel)
	s.unrel = unrel[:0]
	s.transmitted(f, n)
	return n
}

// encode writes f with its reliable messages first, then unrel (notes §2
// row 20), and returns the frame's size.
func (s *Session) encode(buf []byte, f *txFrame, unrel []sentMsg) int {
	b := append(buf[:0], byte(FrameData))
	b = binary.BigEndian.AppendUint32(b, f.seq)
	b = binary.BigEndian.AppendUint16(b, uint16(len(f.msgs)+len(unrel)))
	for i := range f.msgs {
		b = f.msgs[i].appendTo(b)
	}
	for i := range unrel {
		b = unrel[i].appendTo(b)
	}
	return len(b)
}

// transmitted records that f (n bytes) left now.
func (s *Session) transmitted(f *txFrame, n int) {
	f.sentAt, f.size, f.state = s.now, n, fsInFlight
	f.sends++
	s.flight += n
	s.timeq.Push(timeEntry{seq: f.seq, sends: f.sends})
}

// resendFront returns the next lost frame waiting for its resend, dropping
// stale entries.
func (s *Session) resendFront() *txFrame {
	for s.resendq.Len() > 0 {
		if f := s.ring.get(*s.resendq.Front()); f != nil && f.state == fsLost {
			return f
		}
		s.resendq.Pop()
	}
	return nil
}

// frontQueue returns the queue the next message comes from: high
// priority first.
func (s *Session) frontQueue() *engine.FIFO[qItem] {
	for i := range s.queues {
		if s.queues[i].Len() > 0 {
			return &s.queues[i]
		}
	}
	return nil
}

// buildLimit returns the largest frame a new frame may be, and whether
// a new frame can be created now: the transfer window has room, the
// congestion window is not full and the next message fits what is left of
// it (the whole frame when nothing is in flight).
func (s *Session) buildLimit() (int, bool) {
	q := s.frontQueue()
	if q == nil || s.ring.n >= TransferWindow {
		return 0, false
	}
	limit := MaxFrameSize
	if s.flight > 0 {
		limit = min(limit, s.cwnd-s.flight)
	}
	return limit, DataHeaderSize+q.Front().size() <= limit
}

// dataDue reports whether writeData would write a frame now.
func (s *Session) dataDue() bool {
	if f := s.resendFront(); f != nil {
		return s.flight == 0 || s.flight+f.size <= s.cwnd
	}
	_, ok := s.buildLimit()
	return ok
}

// onDataAck removes the acknowledged frames from the transfer queue;
// unknown, repeated and already acknowledged IDs are ignored, so each
// frame counts once (notes §4 bug 1). The congestion window grows, and a
// frame sent once gives an RTT sample (Karn's rule).
func (s *Session) onDataAck(acks []uint32) {
	flight := s.flight
	acked := 0
	sample := time.Duration(-1)
	for _, seq := range acks {
		f := s.ring.get(seq)
		if f == nil || f.state == fsDone {
			continue
		}
		if f.state == fsInFlight {
			s.flight -= f.size
			if f.sends == 1 {
				sample = s.now.Sub(f.sentAt)
			}
		}
		acked += f.size
		f.state = fsDone
		for i := range f.msgs {
			if p := f.msgs[i].pkt; p != nil {
				if p.left--; p.left == 0 {
					s.release(p)
				}
			}
		}
		clear(f.msgs)
		f.msgs = f.msgs[:0]
	}
	s.ring.popDone()
	if acked == 0 {
		return
	}
	if sample >= 0 {
		s.rtt.Sample(sample)
	}
	s.backoff = 0
	s.lossSeen = false
	if 2*flight >= s.cwnd {
		s.grow(acked)
	}
}

// grow opens the congestion window for acked bytes (notes §3.3): by the
// bytes acknowledged in slow start, by one frame per window of bytes
// acknowledged in congestion avoidance, never above maxCwnd.
func (s *Session) grow(acked int) {
	if s.cwnd < s.ssthresh {
		s.cwnd += acked
	} else if s.caAcked += acked; s.caAcked >= s.cwnd {
		s.caAcked -= s.cwnd
		s.cwnd += MaxFrameSize
	}
	s.cwnd = max(MaxFrameSize, min(s.cwnd, s.maxCwnd()))
}

// maxCwnd is the cap of the congestion window: RTT × send rate limit,
// clamped to [MaxFrameSize, MaxCwnd] (paper eq. 10, notes §3.3). The RTT
// used is at least minCapRTT (1 ms): the reference rounds it to whole
// milliseconds, down to 0 below 0.5 ms, which pins it to one frame per
// round trip on a fast link (notes §4 bug 7). Without a rate limit the
// cap is thus at least 4 GB/s × 1 ms ≈ 4 MiB.
func (s *Session) maxCwnd() int {
	rtt := max(s.srtt(), minCapRTT)
	c := uint64(rtt) * uint64(s.rate) / uint64(time.Second)
	return int(max(MaxFrameSize, min(c, MaxCwnd)))
}

// checkTimeouts declares lost the frames unacknowledged one RTO after
// their last transmission (notes §3.3): a frame with reliable messages
// waits for its resend, stripped of its unreliable ones; an unreliable
// frame is forgotten, unless its frame_seq is ≡ 16383 (mod 16384), when it
// is resent empty as a sentinel frame. Any loss is a congestion signal.
func (s *Session) checkTimeouts() {
	rto := s.rto()
	lost := false
	var sentAt time.Time // latest transmission among the lost frames
	for s.timeq.Len() > 0 {
		e := s.timeq.Front()
		f := s.ring.get(e.seq)
		if f == nil || f.state != fsInFlight || f.sends != e.sends {
			s.timeq.Pop()
			continue
		}
		if s.now.Before(f.sentAt.Add(rto)) {
			break
		}
		s.timeq.Pop()
		lost = true
		if f.sentAt.After(sentAt) {
			sentAt = f.sentAt
		}
		s.flight -= f.size
		switch {
		case len(f.msgs) > 0:
			f.state = fsLost
			f.size = DataHeaderSize
			for i := range f.msgs {
				f.size += f.msgs[i].size()
			}
			s.resendq.Push(f.seq)
		case f.seq%SentinelFrameSpacing == SentinelFrameSpacing-1:
			f.state, f.size = fsLost, DataHeaderSize
			s.resendq.Push(f.seq)
		default:
			f.state = fsDone
		}
	}
	s.ring.popDone()
	if lost {
		s.congestion(sentAt)
	}
}

// congestion reacts to frames timing out (notes §3.3), sentAt being the
// latest transmission among them. The window backs off at most once per
// RTT, and only for a frame sent after the previous back-off (frames
// already in flight then belong to the same congestion event, as in TCP's
// recovery), in the paper's order (eq. 11–12: cwnd =
// max(cwnd/2, MTU), then ssthresh = max(cwnd, 2·MTU), so that the window
// grows linearly again; notes §2 row 11); when losses go on for ρ·RTO
// without an acknowledgement it resets (ssthresh = max(cwnd/2, 2·MTU),
// cwnd = MTU).
// A reset also doubles the RTO, up to MaxRTO (a local choice: the path
// may be gone; any acknowledgement clears it).
func (s *Session) congestion(sentAt time.Time) {
	srtt := s.srtt()
	switch {
	case !s.lossSeen:
		s.lossSeen, s.firstLoss = true, s.now
	case s.now.Sub(s.firstLoss) >= resetFactor*s.rto():
		s.ssthresh = max(s.cwnd/2, minSsthresh)
		s.cwnd = MaxFrameSize
		s.firstLoss = s.now
		s.noBackoff = s.now.Add(srtt)
		s.caAcked = 0
		s.backoff = min(s.backoff+1, 8)
	}
	if !s.now.Before(s.noBackoff) && sentAt.After(s.lastBackoff) {
		s.lastBackoff = s.now
		s.cwnd = max(s.cwnd/2, MaxFrameSize)
		s.ssthresh = max(s.cwnd, minSsthresh)
		s.noBackoff = s.now.Add(srtt)
		s.caAcked = 0
	}
}

// nextTimeout returns when the oldest transmission in flight times out,
// dropping stale entries.
func (s *Session) nextTimeout() (time.Time, bool) {
	for s.timeq.Len() > 0 {
		e := s.timeq.Front()
		if f := s.ring.get(e.seq); f != nil && f.state == fsInFlight && f.sends == e.sends {
			return f.sentAt.Add(s.rto()), true
		}
		s.timeq.Pop()
	}
	return time.Time{}, false
}

// handleData applies a Data frame received while connected (notes §3.4):
// outside the receive window [i_b − 32768, i_b + 32768) it is refused;
// otherwise it is queued for acknowledgement, duplicates included, and
// its messages go to their channels. A frame is refused unacknowledged
// (the peer resends it) when maxAckQueue IDs already wait for a DataAck
// or when its messages do not fit the receive memory (see admit).
func (s *Session) handleData(f *Frame) error {
	k := f.Seq
	if k-(s.ib-TransferWindow) >= 2*TransferWindow {
		return errOutOfWindow
	}
	if len(s.ackq) >= maxAckQueue || !s.admit(f) {
		return errBusy
	}
	defer clear(s.exempt[:])
	if k-s.ib < TransferWindow {
		s.ib = k + 1
	}
	s.ackq = append(s.ackq, k)
	s.ackSorted = false
	for i := range f.Messages {
		m := &f.Messages[i]
		if int(m.Channel) >= s.cfg.Channels {
			continue // ignored, the frame is still acknowledged (notes §1.2)
		}
		switch m.Type {
		case MsgFragment:
			s.onFragment(m)
		case MsgSentinel:
			s.onSentinel(m)
		case MsgWindowAck:
			s.txch[m.Channel].onWindowAck(s, m.PacketSeq)
		}
	}
	s.deliverTouched()
	return nil
}

// writeDataAck writes one DataAck with up to MaxAcks of the frame IDs
// waiting, each listed once (notes §4 bug 1), or returns 0.
func (s *Session) writeDataAck(buf []byte) int {
	if len(s.ackq) == 0 {
		return 0
	}
	if !s.ackSorted {
		slices.Sort(s.ackq)
		s.ackq = slices.Compact(s.ackq)
		s.ackSorted = true
	}
	k := min(len(s.ackq), MaxAcks)
	b := append(buf[:0], byte(FrameDataAck))
	b = binary.BigEndian.AppendUint16(b, uint16(k))
	for _, a := range s.ackq[:k] {
		b = binary.BigEndian.AppendUint32(b, a)
	}
	s.ackq = s.ackq[:copy(s.ackq, s.ackq[k:])]
	return len(b)
}
