package porous

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/trace"
)

// Transfer-layer constants (docs/protocols/porous.md §3.3, §3.4, §6).
const (
	// TransferWindow is N_P: a new frame is only created while fewer than
	// 32768 sequence numbers separate it from the oldest unacknowledged
	// frame (paper eq. 1; the reference's value, docs/protocols/porous.md §2 row 1).
	TransferWindow = 32768
	// SentinelFrameSpacing is S: a lost unreliable frame whose frame_seq
	// is ≡ S − 1 (mod S) is resent empty (paper eq. 4; docs/protocols/porous.md §2 row 2).
	SentinelFrameSpacing = 16384
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
	msgs  []sentMsg         // its reliable messages: what a resend carries
	pkt   congestion.Packet // the last transmission, as the controller counts it
	seq   uint32
	size  int    // bytes on the wire at the next (re)transmission
	sends uint32 // transmissions
	state frameState
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

	peak    int    // most frames queued since the last check
	checkAt uint32 // the base at which popDone next checks peak
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
		r.resize(max(minRingSlots, 2*len(r.slots)))
	}
	f := &r.slots[(r.head+r.n)&(len(r.slots)-1)]
	f.seq = r.base + uint32(r.n)
	f.msgs = f.msgs[:0]
	f.sends = 0
	r.n++
	r.peak = max(r.peak, r.n)
	return f
}

// popDone drops finished frames from the front, and halves the slots
// when no flight has used more than an eighth of them since the last
// check (see minRingSlots).
func (r *txRing) popDone() {
	for r.n > 0 {
		f := &r.slots[r.head]
		if f.state != fsDone {
			break
		}
		clear(f.msgs)
		f.msgs = f.msgs[:0]
		r.head = (r.head + 1) & (len(r.slots) - 1)
		r.n--
		r.base++
	}
	if int32(r.base-r.checkAt) < 0 {
		return
	}
	if len(r.slots) > minRingSlots && r.peak <= len(r.slots)/8 {
		r.resize(len(r.slots) / 2)
	}
	r.peak, r.checkAt = r.n, r.base+uint32(len(r.slots))
}

// minRingSlots is the least length of a transfer queue's slots once it
// has any. The queue doubles when full; it halves when the frames queued
// stayed within an eighth of its slots while as many frames as it has
// slots were done, so that a stream whose window shrank (to its share of
// a busy process, see the root package's budgets) does not keep the slots,
// and their message storage, of its largest flight, and a steady flight
// neither grows nor shrinks it.
const minRingSlots = 16

// resize moves the n frames queued to slots of length size, a power of
// two of at least n; the slots left behind take their message storage
// with them.
func (r *txRing) resize(size int) {
	slots := make([]txFrame, size)
	for i := range r.n {
		slots[i] = r.slots[(r.head+i)&(len(r.slots)-1)]
	}
	r.slots, r.head = slots, 0
	r.peak, r.checkAt = r.n, r.base+uint32(size)
}

// writeData writes the next Data frame into buf (docs/protocols/porous.md §3.3): first a lost
// frame due for its resend, else a new frame assembled from the queues. It
// returns 0 when the congestion or transfer window allows neither, and
// leaves a lost frame larger than buf for a Poll with a larger one; a new
// frame is at most len(buf) bytes.
//
// A frame whose first message comes from a High channel that just became
// active with at most a fragment unsent (see goesAhead) leaves even when
// the congestion window or the pacer holds the bulk back: it goes ahead
// of them as congestion.Controller.AheadRoom allows (at most
// MaxFrameSize bytes in flight beyond the window, the pacer's credit
// taken as a bounded debt that the frames after it repay), and carries
// only the messages of such channels. A lost frame sent ahead is resent
// ahead too.
func (s *Session) writeData(buf []byte) int {
	if f := s.resendFront(); f != nil {
		if f.size > len(buf) {
			return 0 // see engine.LargeFramer's LargeDue
		}
		ahead := false
		if !s.cc.CanSend(s.now, f.size) {
			if !f.pkt.Ahead() || s.cc.AheadRoom(s.now) < f.size {
				return 0
			}
			ahead = true
		}
		s.resendq.Pop()
		n := s.encode(buf, f, nil)
		s.Counters.Retransmits++
		s.transmitted(f, n, ahead)
		return n
	}
	limit, ok, ahead := s.buildLimit()
	limit = min(limit, len(buf))
	if !ok {
		if c, _ := s.nextItem(); c == nil && s.cc.Room() > 0 {
			s.cc.AppLimited() // room to send and nothing to send
		}
		return 0
	}
	f := s.ring.push()
	size := DataHeaderSize
	unrel := s.unrel[:0]
	for {
		c, it := s.nextItem()
		if c == nil || ahead && !goesAhead(c) {
			break
		}
		sz := it.size()
		if size+sz > limit {
			break
		}
		size += sz
		m, reliable := s.take(c, it)
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
	s.transmitted(f, n, ahead)
	return n
}

// encode writes f with its reliable messages first, then unrel (docs/protocols/porous.md §2
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

// transmitted records that f (n bytes) left now, ahead of the window
// and the pacer if ahead (see writeData).
func (s *Session) transmitted(f *txFrame, n int, ahead bool) {
	if ahead {
		s.cc.OnSentAhead(s.now, &f.pkt, n, f.sends > 0)
	} else {
		s.cc.OnSent(s.now, &f.pkt, n, f.sends > 0)
	}
	f.size, f.state = n, fsInFlight
	f.sends++
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

// buildLimit returns the largest frame a new frame may be, whether a
// new frame can be created now, and whether it goes ahead of the window
// and the pacer (see writeData). A new frame can be created when the
// transfer window has room and either the congestion window is not full,
// the next message fits what is left of it (the whole frame when nothing
// is in flight) and the pacer lets it leave, or the next message goes
// ahead and fits congestion.Controller.AheadRoom, which then bounds the
// frame.
func (s *Session) buildLimit() (limit int, ok, ahead bool) {
	c, it := s.nextItem()
	if c == nil || s.ring.n >= s.sendWindow() {
		return 0, false, false
	}
	size := DataHeaderSize + it.size()
	if s.cc.CanSend(s.now, size) {
		limit = s.maxFrame
		if s.cc.InFlight() > 0 {
			limit = min(limit, s.cc.Room())
		}
		return limit, true, false
	}
	if room := s.cc.AheadRoom(s.now); goesAhead(c) && room >= size {
		return min(s.maxFrame, room), true, true
	}
	return 0, false, false
}

// sendWindow is how many frame numbers, from the oldest unacknowledged
// frame on, new frames may take: TransferWindow, or to a ReliablePeer
// RxAhead, beyond which that peer refuses frames unacknowledged (see
// spoof.go). Its oldest frame not accepted yet is never older than this
// end's oldest unacknowledged one, so a frame within this bound is never
// refused for being too far ahead, and a sender with more than RxAhead
// frames in flight behind a loss holds the frames beyond instead of
// sending each twice.
func (s *Session) sendWindow() int {
	if s.cfg.ReliablePeer {
		return RxAhead
	}
	return TransferWindow
}

// goesAhead reports whether c's messages may go ahead of the window and
// the pacer: a High channel in its first quantum since it became active
// (see nextItem) with at most FragmentSize bytes unsent, a message that
// fits one frame. A channel refilled with more is bulk, and is paced: a
// stream's channel, which its writer keeps a window ahead, never goes
// ahead.
func goesAhead(c *txChannel) bool { return c.fresh && c.prio == High && c.unsent <= FragmentSize }

// dataAt returns when writeData next writes a frame: s.now if at once,
// the pacer's time if only pacing holds it back, and false when it waits
// for acknowledgements or for something to send. Deadline and next read
// the same state, so they always agree.
func (s *Session) dataAt() (time.Time, bool) {
	size, ahead := 0, false
	if f := s.resendFront(); f != nil {
		size, ahead = f.size, f.pkt.Ahead()
	} else if c, it := s.nextItem(); c != nil && s.ring.n < s.sendWindow() {
		size, ahead = DataHeaderSize+it.size(), goesAhead(c)
	} else {
		return time.Time{}, false
	}
	if ahead && s.cc.AheadRoom(s.now) >= size {
		return s.now, true
	}
	at := s.cc.NextSend(s.now, size)
	return at, !at.IsZero()
}

// onDataAck removes the acknowledged frames from the transfer queue;
// unknown, repeated and already acknowledged IDs are ignored, so each
// frame counts once (docs/protocols/porous.md §4 bug 1). A frame sent once gives an RTT
// sample (Karn's rule). The controller then learns what was delivered,
// and which frames the acknowledgement shows lost (RACK).
func (s *Session) onDataAck(acks []uint32) {
	acked := false
	sample := time.Duration(0)
	for _, seq := range acks {
		f := s.ring.get(seq)
		if f == nil || f.state == fsDone {
			continue
		}
		if f.state == fsInFlight && f.sends == 1 {
			sample = max(s.now.Sub(f.pkt.SentAt), 1)
		}
		if f.state == fsLost && f.sends == 1 {
			s.cc.Spurious(s.now) // declared lost, yet its only transmission arrived
		}
		s.cc.OnAcked(s.now, &f.pkt)
		s.largeAcked(f)
		acked = true
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
	if !acked {
		return
	}
	if sample > 0 {
		s.rtt.Sample(sample)
	}
	s.backoff = 0
	s.detectLosses()
	s.updateCC(sample)
}

// maxBackoff bounds the RTO doublings (Session.backoff) since the last
// acknowledgement: the RTO stays within MaxRTO anyway.
const maxBackoff = 8

// updateCC ends a controller event with the RTT as the session knows it;
// a window reset after persistent loss (AIMD) doubles the RTO, up to 8
// times (a local choice: the path may be gone; any acknowledgement clears
// it).
func (s *Session) updateCC(sample time.Duration) {
	rtt := congestion.RTT{Latest: sample, Smoothed: s.srtt(), RTO: s.rto()}
	if s.cc.Update(s.now, rtt) {
		s.backoff = min(s.backoff+1, maxBackoff)
	}
}

// detectLosses declares lost the frames in flight whose RTO ran out since
// their last transmission (with BBR, since the latest DataAck if later:
// congestion.Controller.TimeoutAt), or that RACK shows lost (a frame sent after
// them was acknowledged and a reordering window passed; docs/protocols/porous.md §3.3 uses
// the timeout only, as does the AIMD controller): a frame with reliable
// messages waits for its resend, stripped of its unreliable ones; an
// unreliable frame is forgotten, unless its frame_seq is ≡ 16383 (mod
// 16384), when it is resent empty as a sentinel frame. Frames are checked
// in transmission order and the walk stops at the first one not lost.
//
// With RACK, a timeout stops at the oldest frame it declares lost for a
// resend, and doubles the RTO until the next DataAck, as TCP resends the
// earliest segment when its RTO runs out (RFC 6298 §5.4): on a path whose
// queue suddenly grew, the flight is late, not lost, and its
// acknowledgements then come before the frames after the oldest time out,
// where resending them all would send the flight twice. If the flight was
// lost, the resend's acknowledgement shows the frames sent before it lost
// by RACK. Once the RTO is at MaxRTO, every frame whose RTO ran out is
// declared lost, as without RACK.
func (s *Session) detectLosses() {
	rto := s.rto()
	srtt := s.srtt()
	probed := false // a frame was declared lost by timeout (with RACK)
	for s.timeq.Len() > 0 {
		e := s.timeq.Front()
		f := s.ring.get(e.seq)
		if f == nil || f.state != fsInFlight || f.sends != e.sends {
			s.timeq.Pop()
			continue
		}
		reason := trace.LossTimeout
		if probed || s.now.Before(s.cc.TimeoutAt(&f.pkt, rto)) {
			at, ok := s.cc.LostAt(&f.pkt, srtt)
			if !ok || s.now.Before(at) {
				break
			}
			reason = trace.LossTime
		}
		s.timeq.Pop()
		if s.probing(f) {
			s.cc.Forget(&f.pkt)
		} else {
			s.cc.OnLost(s.now, &f.pkt, reason)
		}
		switch {
		case len(f.msgs) > 0:
			f.state = fsLost
			f.size = DataHeaderSize
			for i := range f.msgs {
				f.size += f.msgs[i].size()
			}
			s.resendq.Push(f.seq)
			s.largeLostFrame(f)
		case f.seq%SentinelFrameSpacing == SentinelFrameSpacing-1:
			f.state, f.size = fsLost, DataHeaderSize
			s.resendq.Push(f.seq)
		default:
			f.state = fsDone
		}
		if reason == trace.LossTimeout && f.state == fsLost && s.cc.RACK() {
			// The resend probes the path; the rest waits for the doubled
			// RTO, unless the RTO is at its bound already.
			before := s.rto()
			s.backoff = min(s.backoff+1, maxBackoff)
			probed = s.rto() > before
		}
	}
	s.ring.popDone()
}

// lossAt returns when detectLosses next declares a frame lost: the
// earlier of the oldest frame's RTO and its RACK time.
func (s *Session) lossAt() (time.Time, bool) {
	for s.timeq.Len() > 0 {
		e := s.timeq.Front()
		if f := s.ring.get(e.seq); f != nil && f.state == fsInFlight && f.sends == e.sends {
			at := s.cc.TimeoutAt(&f.pkt, s.rto())
			if r, ok := s.cc.LostAt(&f.pkt, s.srtt()); ok && r.Before(at) {
				at = r
			}
			return at, true
		}
		s.timeq.Pop()
	}
	return time.Time{}, false
}

// handleData applies a Data frame received while connected (docs/protocols/porous.md §3.4):
// outside the receive window [i_b − 32768, i_b + 32768), or [i_b − 32768,
// i_b + RxAhead) from a ReliablePeer, it is refused; otherwise it is
// queued for acknowledgement, duplicates included, and its messages go to
// their channels, except those of a frame accepted before (see spoof.go). A frame is refused unacknowledged
// (the peer resends it) when maxAckQueue IDs already wait for a DataAck
// or when its messages do not fit the receive memory (see admit). While
// new data is refused (see SetRecvOpen), a frame carrying a Fragment or
// Sentinel that has not arrived before is left unacknowledged too, and
// only its WindowAcks are applied.
func (s *Session) handleData(f *Frame) error {
	k := f.Seq
	if !s.inWindow(k) {
		return errOutOfWindow
	}
	if k-s.ib >= TransferWindow && s.rxf.taken(k) {
		// Accepted before: acknowledged again, its messages not applied
		// again (see spoof.go).
		if len(s.ackq) >= maxAckQueue {
			return errBusy
		}
		s.ackq = append(s.ackq, k)
		s.ackSorted = false
		if len(f.Messages) > 0 {
			s.Counters.Duplicates++
		}
		return nil
	}
	if !s.RecvOpen() && s.refuse(f) {
		return nil
	}
	if len(s.ackq) >= maxAckQueue || !s.admit(f) {
		return errBusy
	}
	defer clear(s.exempt[:])
	s.ib = s.rxf.accept(k, s.ib)
	s.ackq = append(s.ackq, k)
	s.ackSorted = false
	for i := range f.Messages {
		m := &f.Messages[i]
		if int(m.Channel) >= s.cfg.Channels {
			continue // ignored, the frame is still acknowledged (docs/protocols/porous.md §1.2)
		}
		if s.st == stZombie {
			return nil // a conflict ended the session (see conflict)
		}
		switch m.Type {
		case MsgFragment:
			if !s.sinkFragment(m) {
				s.onFragment(m)
			}
		case MsgSentinel:
			s.onSentinel(m)
		case MsgWindowAck:
			s.txch[m.Channel].onWindowAck(s, m.PacketSeq)
		}
	}
	if s.st != stZombie {
		s.deliverTouched()
	}
	return nil
}

// writeDataAck writes one DataAck with up to MaxAcks of the frame IDs
// waiting, each listed once (docs/protocols/porous.md §4 bug 1), or returns 0. Unless
// Config.AckOnce is set, the IDs of the previous DataAck are listed again
// after the new ones (as room allows), so that losing one DataAck does
// not make the peer resend what arrived; a reference peer ignores an ID
// whose frame it no longer holds (docs/protocols/porous.md §3.3), and the bug of docs/protocols/porous.md §4
// concerns repeats within one DataAck only.
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
	fresh := s.ackq[:k]
	b := append(buf[:0], byte(FrameDataAck), 0, 0)
	for _, a := range fresh {
		b = binary.BigEndian.AppendUint32(b, a)
	}
	n := k
	if !s.cfg.AckOnce {
		for _, a := range s.lastAcks {
			if n == MaxAcks {
				break
			}
			if _, dup := slices.BinarySearch(fresh, a); !dup {
				b = binary.BigEndian.AppendUint32(b, a)
				n++
			}
		}
		s.lastAcks = append(s.lastAcks[:0], fresh...)
	}
	binary.BigEndian.PutUint16(b[1:], uint16(n))
	s.ackq = s.ackq[:copy(s.ackq, s.ackq[k:])]
	return len(b)
}
