package porous

import "github.com/rudpkit/rudp/internal/engine"

// Large frames: Data frames above MaxFrameSize, for peers known to take
// them (Config.LargeFrames) over a path known to carry them. The
// reference never sees one. Each carries up to 44 fragments, so a sender
// pays its per-datagram costs (the datagram's system call share, its
// acknowledgement, its congestion-control record) once for up to 44
// fragments instead of once for each.

var _ engine.LargeFramer = (*Session)(nil)

// FrameSizes implements engine.LargeFramer: MaxFrameSize and
// LargeFrameSize.
func (s *Session) FrameSizes() (usual, large int) { return MaxFrameSize, LargeFrameSize }

// SetMaxFrame lets new Data frames grow to n bytes, within
// [MaxFrameSize, LargeFrameSize]. Call it only once the peer is known to
// take such frames (its Config.LargeFrames) and the path to carry them
// (a loopback path); Poll's buf must then hold n bytes. A frame's size is
// fixed when it is built: a resend has the same size, unless it is split
// (below).
//
// The first large frames are a probe of the path. Once one is
// acknowledged the path is taken to carry them. If one is declared lost
// before that, large frames are given up for good, logged at Debug: new
// frames go back to MaxFrameSize, and every lost large frame is split
// into frames of at most MaxFrameSize for its resend, so that data sent
// into a path that drops large datagrams (a relay with a smaller MTU, say)
// still arrives. Later calls then change nothing. A large frame lost
// after the path has carried one is also resent split (see
// largeLostFrame), while new frames stay large.
func (s *Session) SetMaxFrame(n int) {
	if s.largeLost {
		return
	}
	s.maxFrame = min(max(n, MaxFrameSize), LargeFrameSize)
}

// MaxFrame returns the largest new Data frame, in bytes: MaxFrameSize
// unless SetMaxFrame raised it and large frames were not given up.
func (s *Session) MaxFrame() int { return s.maxFrame }

// LargeDue implements engine.LargeFramer: large frames are allowed, and
// more than a frame of the usual size is unsent, or the next lost frame
// to resend is large (see split).
func (s *Session) LargeDue() bool {
	if s.maxFrame <= MaxFrameSize {
		return false
	}
	if f := s.resendFront(); f != nil && f.size > MaxFrameSize {
		return true
	}
	unsent := 0
	for i := range s.txch {
		unsent += s.txch[i].unsent
	}
	return unsent > MaxFrameSize-DataHeaderSize
}

// largeAcked records that frame f was acknowledged.
func (s *Session) largeAcked(f *txFrame) {
	if f.size > MaxFrameSize {
		s.largeOK = true
	}
}

// probing reports whether frame f is a probe of the path: a large frame
// sent before any was acknowledged. Its loss says the path may not carry
// it, not that the path is congested, so the congestion controller
// forgets it rather than count it lost (as QUIC treats a lost probe of
// the path MTU, RFC 9000 §14.4).
func (s *Session) probing(f *txFrame) bool {
	return f.size > MaxFrameSize && !s.largeOK
}

// largeLostFrame is called for frame f, declared lost, before its resend
// is queued: a large frame lost before any was acknowledged gives large
// frames up; any lost large frame is split into frames of the usual
// size. Loss on a loopback path is a full socket buffer, in which a
// datagram of 64 KB finds room far less often than one of 1.5 KB: a
// large frame resent whole while a busy receiver's buffer stays nearly
// full could be lost every time, and its channel stall behind it.
func (s *Session) largeLostFrame(f *txFrame) {
	if s.probing(f) && !s.largeLost {
		s.largeLost = true
		s.maxFrame = s.usualFrame()
		s.cfg.Logger.Debug("porous: large frames given up: one was lost before any was acknowledged", "size", f.size)
	}
	if f.size > s.usualFrame() {
		s.split(f)
	}
}

// maxOverhead bounds Config.Overhead.
const maxOverhead = 64

// usualFrame is the largest frame that fits a datagram of the usual size
// with the layer below's Config.Overhead.
func (s *Session) usualFrame() int { return MaxFrameSize - s.cfg.Overhead }

// split keeps in lost frame f the messages that fit usualFrame and moves
// the others into new frames at the end of the transfer queue, each
// queued for resending as f is. The receiver tells fragments apart by
// their packet and fragment numbers, not by the frame that carried them,
// so which frame carries a message is the sender's choice. With the
// transfer window full, f stays whole.
func (s *Session) split(f *txFrame) {
	seq, msgs := f.seq, f.msgs // push may move the slots, not msgs
	usual := s.usualFrame()
	keep, _ := fitting(msgs, usual)
	i := keep
	for i < len(msgs) && s.ring.n < s.sendWindow() {
		n, size := fitting(msgs[i:], usual)
		g := s.ring.push()
		s.nextSeq++
		g.msgs = append(g.msgs, msgs[i:i+n]...)
		g.state, g.size = fsLost, size
		s.resendq.Push(g.seq)
		i += n
	}
	// f keeps its first keep messages and those the window had no room
	// to move.
	f = s.ring.get(seq)
	f.msgs = append(msgs[:keep], msgs[i:]...)
	clear(msgs[len(f.msgs):])
	f.size = DataHeaderSize
	for j := range f.msgs {
		f.size += f.msgs[j].size()
	}
}

// fitting returns how many of msgs, from the first, one frame of at most
// limit bytes carries (at least one), and that frame's size.
func fitting(msgs []sentMsg, limit int) (n, size int) {
	size = DataHeaderSize + msgs[0].size()
	for n = 1; n < len(msgs) && size+msgs[n].size() <= limit; n++ {
		size += msgs[n].size()
	}
	return n, size
}
