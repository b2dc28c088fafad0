package wirefox

// historySize is how many IDs behind the newest a history remembers.
const historySize = 1 << 16

// history is a duplicate history of 32-bit IDs compared wrap-aware: the
// reference remembers the IDs of the last 10 s (docs/protocols/wirefox.md
// §3.3); this one remembers the last historySize IDs behind the newest
// seen, and takes anything older as a duplicate. A sender keeps fewer
// than historySize/2 packet IDs outstanding (see Session.windowFull), so
// only a datagram delayed past 65,536 later ones is lost that way.
//
// An idle session frees the bitmap (trim) once every ID up to the newest
// counts as seen; it comes back, all set, with the next ID added.
type history struct {
	bits    []uint64 // nil: every ID up to newest counts as seen
	newest  uint32
	started bool
	wrapped bool // newest went past 2^32 − 1 to 0
}

// maxAhead is how far past the newest ID seen an ID is plausible. The
// peer's IDs grow by one per datagram or packet, so a larger step means
// maxAhead of its datagrams, or packets, in a row were lost: beyond its
// congestion window (and this package's packetWindow of reliable
// packets outstanding). A blind spoof of a far larger ID would move the
// newest so far that every genuine ID after it counts as too old: the
// histories refuse it instead (HandleDatagram rejects its datagram), and
// one within maxAhead keeps the genuine IDs, at most maxAhead behind it,
// inside the history's historySize.
const maxAhead = historySize / 2

// plausible reports whether id is at most maxAhead past the newest ID
// seen, or, before any, past 0, the first ID of either counter
// (docs/protocols/wirefox.md §3.1). An ID behind the newest is plausible
// (has tells whether it was seen).
func (h *history) plausible(id uint32) bool {
	if !h.started {
		return id <= maxAhead
	}
	return int32(id-h.newest) <= maxAhead
}

// has reports whether id was seen (or is too old to tell).
func (h *history) has(id uint32) bool {
	if !h.started {
		return false
	}
	d := int32(id - h.newest)
	if d > 0 {
		return false
	}
	if d <= -historySize || h.bits == nil {
		return true
	}
	return h.bits[id/64%(historySize/64)]&(1<<(id%64)) != 0
}

// add records id, which must not be in the history.
func (h *history) add(id uint32) {
	if h.bits == nil {
		h.bits = make([]uint64, historySize/64)
		if h.started {
			for i := range h.bits {
				h.bits[i] = ^uint64(0) // trimmed: all seen
			}
		}
	}
	if !h.started {
		h.started, h.newest = true, id
	}
	if d := int32(id - h.newest); d > 0 {
		if d >= historySize {
			clear(h.bits)
		} else {
			for x := h.newest + 1; x != id+1; x++ {
				h.bits[x/64%(historySize/64)] &^= 1 << (x % 64)
			}
		}
		h.wrapped = h.wrapped || id < h.newest
		h.newest = id
	}
	h.bits[id/64%(historySize/64)] |= 1 << (id % 64)
}

// trim frees the bitmap when every ID the history covers, from 0 (IDs
// start there, docs/protocols/wirefox.md §3.1) or historySize behind the
// newest to the newest, was seen, or regardless with gapsSeen, which
// takes the missing ones as seen: right for datagram IDs, never reused (a
// datagram that turns up later is dropped and its packets come again in
// a new one), wrong for packet IDs that may still be resent.
func (h *history) trim(gapsSeen bool) {
	if h.bits == nil || !h.started {
		return
	}
	if !gapsSeen {
		lo := h.newest - (historySize - 1)
		if !h.wrapped && h.newest < historySize-1 {
			lo = 0
		}
		for id := lo; id != h.newest+1; id++ {
			if h.bits[id/64%(historySize/64)]&(1<<(id%64)) == 0 {
				return
			}
		}
	}
	h.bits = nil
}
