package wirefox

// historySize is how many IDs behind the newest a history remembers;
// longHistory with history.long, the packet history of a session whose
// peer may be the reference (Config.ReferencePeer).
const (
	historySize = 1 << 16
	longHistory = 1 << 20
)

// history is a duplicate history of 32-bit IDs compared wrap-aware: the
// reference remembers the IDs of the last 10 s (docs/protocols/wirefox.md
// §3.3); this one remembers the last historySize (or longHistory) IDs
// behind the newest seen, and takes anything older as a duplicate. A
// sender of this package keeps fewer than historySize/2 packet IDs
// outstanding (see Session.windowFull), so only a datagram delayed past
// 65,536 later ones is lost that way; the reference's packet IDs may
// spread over its whole queue (it sends small packets of later messages
// first, DatagramBuilder::MakeDatagram): its peer's packet history is
// long, 1,048,576 IDs, the packets of about 300,000 queued messages.
//
// An idle session frees the bitmap (trim) once every ID up to the newest
// counts as seen; the next ID after the newest keeps it so (an idle
// peer's keepalives come one after the other), and any other ID brings
// the bitmap back, all set.
type history struct {
	bits     []uint64 // nil: every ID up to newest counts as seen
	newest   uint32
	started  bool
	wrapped  bool // newest went past 2^32 − 1 to 0
	long     bool // remembers longHistory IDs
	anyFirst bool // the first ID may be any (datagram IDs, see firstDgramID)
}

// size is how many IDs behind the newest h remembers.
func (h *history) size() uint32 {
	if h.long {
		return longHistory
	}
	return historySize
}

// bit returns the word of h.bits holding id and id's bit in it.
func (h *history) bit(id uint32) (*uint64, uint64) {
	return &h.bits[id/64%(h.size()/64)], 1 << (id % 64)
}

// plausible reports whether id is at most half the history's size past
// the newest ID seen, or, before any, past 0, where packet IDs start
// (docs/protocols/wirefox.md §3.1); with anyFirst (datagram IDs: the
// reference's start at 0, this package's at random, see firstDgramID)
// any first ID is, which a server lets into its history only from a
// client whose address is proven (see Session.proves). The peer's IDs grow by one
// per datagram or packet, so a larger step means that many of its
// datagrams, or packets, in a row were lost: beyond its congestion
// window (and this package's packetWindow of reliable packets
// outstanding). A blind spoof of a far larger ID would move the newest
// so far that every genuine ID after it counts as too old: it is refused
// instead (HandleDatagram rejects its datagram), and one within half
// the size keeps the genuine IDs behind it inside the history. An ID
// behind the newest is plausible (has tells whether it was seen).
func (h *history) plausible(id uint32) bool {
	ahead := h.size() / 2
	if !h.started {
		return h.anyFirst || id <= ahead
	}
	return int64(int32(id-h.newest)) <= int64(ahead)
}

// has reports whether id was seen (or is too old to tell).
func (h *history) has(id uint32) bool {
	if !h.started {
		return false
	}
	d := int64(int32(id - h.newest))
	if d > 0 {
		return false
	}
	if d <= -int64(h.size()) || h.bits == nil {
		return true
	}
	w, b := h.bit(id)
	return *w&b != 0
}

// add records id, which must not be in the history.
func (h *history) add(id uint32) {
	if h.bits == nil && h.started && id == h.newest+1 {
		h.wrapped = h.wrapped || id == 0
		h.newest = id
		return
	}
	if h.bits == nil {
		h.bits = make([]uint64, h.size()/64)
		if h.started {
			for i := range h.bits {
				h.bits[i] = ^uint64(0) // trimmed: all seen
			}
		}
	}
	if !h.started {
		h.started, h.newest = true, id
	}
	if d := int64(int32(id - h.newest)); d > 0 {
		if d >= int64(h.size()) {
			clear(h.bits)
		} else {
			for x := h.newest + 1; x != id+1; x++ {
				w, b := h.bit(x)
				*w &^= b
			}
		}
		h.wrapped = h.wrapped || id < h.newest
		h.newest = id
	}
	w, b := h.bit(id)
	*w |= b
}

// trim frees the bitmap when every ID the history covers, from 0 (IDs
// start there, docs/protocols/wirefox.md §3.1) or its size behind the
// newest to the newest, was seen, or regardless with gapsSeen, which
// takes the missing ones as seen: right for datagram IDs, never reused (a
// datagram that turns up later is dropped and its packets come again in
// a new one), wrong for packet IDs that may still be resent.
func (h *history) trim(gapsSeen bool) {
	if h.bits == nil || !h.started {
		return
	}
	if !gapsSeen {
		lo := h.newest - (h.size() - 1)
		if !h.wrapped && h.newest < h.size()-1 {
			lo = 0
		}
		// A word at a time: the bits of [id, id+k) in the word of id.
		for id, n := lo, uint64(h.newest-lo)+1; n > 0; {
			off := uint64(id % 64)
			k := min(64-off, n)
			mask := ^uint64(0) >> (64 - k) << off
			if w, _ := h.bit(id); *w&mask != mask {
				return
			}
			id += uint32(k)
			n -= k
		}
	}
	h.bits = nil
}
