package porous

import (
	"errors"
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Spoofed Data frames (the threat of RFC 5961: an attacker who knows both
// addresses and ports, sees no traffic, and sends datagrams from the
// peer's address). A Data frame has no field the attacker cannot guess
// but its frame_seq: the peer numbers its frames from this end's nonce
// (docs/protocols/porous.md §3.2), 32 random bits. The reference takes a
// frame anywhere in [i_b − 32768, i_b + 32768) (§3.4), so a sweep of 2^16
// frames lands one; its packets then go to their channel as the peer's.
// What a Session takes instead is what the peer could have sent:
//
//   - Duplicates: a frame numbered like one accepted before as the next
//     after the newest is acknowledged again, as the reference does, but
//     its messages are not applied again: the peer resends a frame
//     unchanged or with fewer messages (docs/protocols/porous.md §3.3),
//     and a third party is very unlikely to have been first with exactly
//     that number. So behind i_b only the frames the peer lost, and those
//     that arrived after a gap, take new data. The numbers before the
//     peer's first frame count as accepted: it sent nothing there.
//   - Forward bound: from a ReliablePeer, a frame RxAhead or more numbers
//     beyond the oldest one not accepted yet is dropped unacknowledged,
//     and so i_b moves only that far ahead of what the peer delivered,
//     however many forged frames land. Such a peer resends each frame
//     until it is acknowledged, so the oldest missing frame always comes
//     and the bound moves on; a loss with more than RxAhead frames in
//     flight beyond it costs resends of the frames past the bound. From
//     another peer (the reference), whose Unreliable frames are never
//     resent, the reference's window applies: only its sentinel frames
//     (every 16384) keep i_b moving.
//   - Channels of a ReliablePeer are delivered strictly in order: a
//     packet is delivered only at its channel's base, so no message can
//     move a base past a packet that has not arrived. Its dependent_lead
//     is not used, Sentinels are ignored, and a fragment announcing a
//     packet larger than MaxPacket, which the peer never sends, is
//     ignored rather than stored as a dud. Two copies of one packet that
//     differ (dependent_lead, fragment count, or the bytes of one
//     fragment) end the session with an error wrapping ErrSpoofed: the
//     peer resends a packet unchanged, so one of them was forged.
//   - Stalls: a channel that holds packets it cannot deliver, its base
//     unmoved, for Config.IdleTimeout ends the session with an error
//     wrapping engine.ErrIdleTimeout and ErrStalled, even while the peer
//     answers. A peer resends a missing packet within its RTO, so this
//     happens only when it will not: it took a DataAck for a frame it
//     sent as the acknowledgement of a forged frame of the same number.
//
// A forged frame from a ReliablePeer's address still lands with
// probability about RxAhead / 2^32 per datagram (plus the numbers the
// peer lost recently): 2^19 datagrams for one. One that lands can take
// packet numbers the peer has not used yet: if it carries exactly the
// next packet of a channel and that packet is delivered before the
// peer's copy comes, the peer's copy is then a duplicate and is dropped,
// which only the layer above can notice (a stream sees a gap in its byte
// offsets). A copy that comes while the forged one is still held ends
// the session (ErrSpoofed), and so does a channel left waiting
// (ErrStalled).

// RxAhead is how far, in frame numbers, a Data frame from a ReliablePeer
// may be beyond the oldest frame it has not delivered yet, and how far
// beyond its oldest unacknowledged frame a sender to a ReliablePeer
// numbers new frames (see Session.sendWindow): the longest run of frames
// in flight past a loss (8192 frames are 12 MB of 1472-byte frames; at
// 4096, a 90 MB/s stream on a 20 ms path with 2 % loss stalled behind a
// loss whose resend was lost too).
const RxAhead = 8192

// ErrSpoofed is wrapped by Err when a ReliablePeer's channel received two
// different copies of one packet: one of them was forged by a third
// party sending from the peer's address, and which one is unknown.
var ErrSpoofed = fmt.Errorf("%w: porous: two different copies of one packet", engine.ErrSpoofed)

// ErrStalled is wrapped, with engine.ErrIdleTimeout, by Err when a
// channel held packets it could not deliver, its base unmoved, for
// Config.IdleTimeout.
var ErrStalled = errors.New("porous: channel stalled behind a missing packet")

// rxFrames is what the session knows of the peer's frame numbers below
// i_b (see spoof.go): low, the oldest one not accepted yet (i_b when none,
// never below i_b − TransferWindow), and two bits for each of the
// TransferWindow numbers below i_b, at index seq mod TransferWindow: recv,
// accepted; conf, accepted as the next frame after the newest (seq =
// i_b then). nil stands for all bits set, the state before the peer's
// first frame (it sent nothing there) and, after Trim, with no gap; the
// 8 KiB are allocated at the first gap.
type rxFrames struct {
	recv, conf *[TransferWindow / 64]uint64
	low        uint32
}

type frameBits = [TransferWindow / 64]uint64

func bitOf(b *frameBits, seq uint32) bool {
	i := seq % TransferWindow
	return b == nil || b[i/64]&(1<<(i%64)) != 0
}

// setBit sets or clears the bit of seq, allocating *b when it must be
// cleared.
func setBit(b **frameBits, seq uint32, v bool) {
	if *b == nil {
		if v {
			return
		}
		*b = new(frameBits)
		for i := range *b {
			(*b)[i] = ^uint64(0)
		}
	}
	i := seq % TransferWindow
	if v {
		(*b)[i/64] |= 1 << (i % 64)
	} else {
		(*b)[i/64] &^= 1 << (i % 64)
	}
}

// taken reports whether frame seq, below ib and at most TransferWindow
// below it, was accepted as the next frame after the newest. Only such a
// frame is taken as a duplicate: one that filled a gap, or left one
// behind it, may have come from a third party first, and the peer's
// copy must then still be applied.
func (r *rxFrames) taken(seq uint32) bool { return bitOf(r.conf, seq) }

// accept records frame seq as accepted, ib being i_b before it; it
// returns the new i_b.
func (r *rxFrames) accept(seq, ib uint32) uint32 {
	if d := seq - ib; d < TransferWindow { // at or beyond i_b: [ib, seq) are gaps
		for n := range d {
			setBit(&r.recv, ib+n, false)
			setBit(&r.conf, ib+n, false)
		}
		setBit(&r.conf, seq, d == 0)
		ib = seq + 1
		if ib-r.low > TransferWindow {
			r.low = ib - TransferWindow
		}
	}
	setBit(&r.recv, seq, true)
	for r.low != ib && bitOf(r.recv, r.low) {
		r.low++
	}
	return ib
}

// trim frees the bits when no frame below ib is missing.
func (r *rxFrames) trim(ib uint32) {
	if r.low == ib {
		r.recv, r.conf = nil, nil
	}
}

// inWindow reports whether a Data frame numbered seq may be taken with
// the receive base at ib: within [ib − 32768, ib + 32768), as the
// reference, and from a ReliablePeer less than RxAhead beyond low.
func (s *Session) inWindow(seq uint32) bool {
	if seq-(s.ib-TransferWindow) >= 2*TransferWindow {
		return false
	}
	return !s.cfg.ReliablePeer || seq-s.ib >= TransferWindow || seq-s.rxf.low < RxAhead
}

// plausible reports whether fragment m, valid, is one a ReliablePeer can
// send: of a packet of at most MaxPacket bytes.
func (s *Session) plausible(m *Message) bool {
	n := int(m.LastFragmentID) * FragmentSize
	if m.FragmentID == m.LastFragmentID {
		n += len(m.Data)
	}
	return !s.cfg.ReliablePeer || n <= s.cfg.MaxPacket
}

// conflict ends the session: copies of packet seq of channel ch differ.
func (s *Session) conflict(ch uint8, seq uint32, what string) {
	s.fail(fmt.Errorf("%w: channel %d packet %d: %s", ErrSpoofed, ch, seq, what))
}

// deliverInOrder delivers channel ch of a ReliablePeer: the complete
// packets at its base, one after the other.
func (s *Session) deliverInOrder(ch uint8) {
	c := &s.rxch[ch]
	for {
		e := c.get(c.base)
		if e == nil || !e.complete() {
			return
		}
		s.handOver(ch, e)
		s.consume(ch, 0)
	}
}

// watch notes, after delivery on channel ch from base old, whether the
// channel is blocked: it holds packets it cannot deliver (a ReliablePeer:
// any; another peer: the walk stopped at a dependency). Its stall clock
// starts when it becomes blocked, and again whenever its base moves.
func (s *Session) watch(ch uint8, old uint32, blocked bool) {
	c := &s.rxch[ch]
	switch {
	case !blocked:
		c.stuck = time.Time{}
	case c.stuck.IsZero() || c.base != old:
		c.stuck = s.now
		if s.stallAt.IsZero() || s.now.Before(s.stallAt) {
			s.stallAt = s.now
		}
	}
}

// stallDue returns when the oldest blocked channel stalls, if one may:
// s.stallAt, the earliest stall clock started since the last check, plus
// Config.IdleTimeout; none while new data is refused (SetRecvOpen). It is
// early when that channel moved on since; fire then finds the true time
// (stallCheck).
func (s *Session) stallDue() (time.Time, bool) {
	if s.stallAt.IsZero() || s.cfg.IdleTimeout <= 0 || !s.RecvOpen() {
		return time.Time{}, false
	}
	return s.stallAt.Add(s.cfg.IdleTimeout), true
}

// stallCheck ends the session if a channel has been blocked for
// Config.IdleTimeout; otherwise it sets s.stallAt to the oldest stall
// clock still running.
func (s *Session) stallCheck() {
	s.stallAt = time.Time{}
	for i := range s.rxch {
		c := &s.rxch[i]
		if c.stuck.IsZero() {
			continue
		}
		if !s.now.Before(c.stuck.Add(s.cfg.IdleTimeout)) {
			s.fail(fmt.Errorf("%w: %w: channel %d, packet %d missing for %v, %d held after it",
				engine.ErrIdleTimeout, ErrStalled, i, c.base, s.now.Sub(c.stuck), c.n))
			return
		}
		if s.stallAt.IsZero() || c.stuck.Before(s.stallAt) {
			s.stallAt = c.stuck
		}
	}
}

// restartStallClocks starts the stall clock of every waiting channel
// anew, now.
func (s *Session) restartStallClocks() {
	for i := range s.rxch {
		if c := &s.rxch[i]; !c.stuck.IsZero() {
			c.stuck, s.stallAt = s.now, s.now
		}
	}
}
