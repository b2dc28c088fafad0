package lludp

const (
	// seqMask keeps the 24 bits sequence numbers are compared on.
	seqMask = SeqWrap - 1
	// halfSpace is half the 24-bit space: a number less than this far
	// ahead of another is after it (serial arithmetic, docs/protocols/lludp.md §3.2).
	halfSpace = SeqWrap / 2
	// windowBits is how many sequence numbers behind the newest the
	// duplicate window remembers individually (8 KiB per session).
	windowBits = 1 << 16
)

// window remembers which peer sequence numbers arrived (docs/protocols/lludp.md §3.5). Numbers
// are compared on their low 24 bits with serial arithmetic, so the viewer's
// wrap from 0xFFFFFF to 0 and the 32-bit counters of OpenSim and
// LibreMetaverse both work.
//
// A bitmap covers the windowBits numbers up to the newest one seen. Older
// numbers are judged by the floor, the peer's latest OldestUnacked: every
// reliable number before it has been acknowledged by this end, so it is a
// duplicate. An older number not before the floor is taken as new: at that
// bound a duplicate can be delivered twice, which needs an
// acknowledgement lost for more than 65,536 peer datagrams in a row.
// Numbers inside the bitmap are judged by the bitmap alone, so a wrong
// OldestUnacked (the viewer's is not wrap-aware) cannot make this end drop
// a message it has not seen.
type window struct {
	bits     *[windowBits / 64]uint64 // allocated by the first number seen
	hi       uint32                   // newest number seen, 24 bits
	have     bool                     // hi is set
	floor    uint32                   // peer's OldestUnacked, 24 bits
	hasFloor bool
}

// seen records seq and reports whether it had been recorded before (or is
// known received from the floor).
func (w *window) seen(seq uint32) bool {
	dup := w.has(seq)
	s := seq & seqMask
	if w.bits == nil {
		w.bits = new([windowBits / 64]uint64)
	}
	if !w.have {
		w.have, w.hi = true, s
	} else if ahead := (s - w.hi) & seqMask; ahead != 0 && ahead < halfSpace {
		w.advance(ahead)
		w.hi = s
	} else if (w.hi-s)&seqMask >= windowBits {
		return dup // older than the bitmap: judged by the floor alone
	}
	w.bits[s/64%uint32(len(w.bits))] |= 1 << (s % 64)
	return dup
}

// has reports whether seq has been recorded (or is known received from
// the floor), recording nothing.
func (w *window) has(seq uint32) bool {
	s := seq & seqMask
	if !w.have {
		return false
	}
	if ahead := (s - w.hi) & seqMask; ahead != 0 && ahead < halfSpace {
		return false
	}
	age := (w.hi - s) & seqMask
	if age < windowBits {
		return w.bits[s/64%uint32(len(w.bits))]&(1<<(s%64)) != 0
	}
	f, ok := w.floorAge()
	return ok && int32(age) > f
}

// advance clears the bits of the d numbers after hi, a word at a time, so
// that a peer jumping its numbers ahead costs at most the 1,024 words of
// the bitmap per datagram.
func (w *window) advance(d uint32) {
	if d >= windowBits {
		clear(w.bits[:])
		return
	}
	// Bit x of the bitmap is number x mod windowBits; the range may wrap.
	from := (w.hi + 1) % windowBits
	if n := windowBits - from; d > n {
		w.clearBits(from, n)
		from, d = 0, d-n
	}
	w.clearBits(from, d)
}

// clearBits clears n bits from bit from, which do not pass the end of the
// bitmap.
func (w *window) clearBits(from, n uint32) {
	end := from + n
	if from/64 == end/64 {
		w.bits[from/64] &^= (uint64(1)<<n - 1) << (from % 64)
		return
	}
	if off := from % 64; off != 0 {
		w.bits[from/64] &^= ^uint64(0) << off
		from += 64 - off
	}
	clear(w.bits[from/64 : end/64])
	if off := end % 64; off != 0 {
		w.bits[end/64] &^= uint64(1)<<off - 1
	}
}

// floorAge returns how far the floor lies behind hi (−1 when it is hi+1),
// and false when there is no usable floor: none was set, or hi has moved
// so far (a quarter of the space) that the floor is stale.
func (w *window) floorAge() (int32, bool) {
	if !w.hasFloor {
		return 0, false
	}
	f := signed24(w.hi - w.floor)
	return f, f >= -1 && f < halfSpace/2
}

// setFloor takes the peer's OldestUnacked (docs/protocols/lludp.md §3.7). The floor never
// moves backwards and never beyond hi+1 (the peer cannot have had a number
// acknowledged that never arrived here).
func (w *window) setFloor(oldest uint32) {
	if !w.have {
		return
	}
	age := signed24(w.hi - oldest)
	switch {
	case age < -1:
		age = -1
	case age >= halfSpace/2:
		return
	}
	if cur, ok := w.floorAge(); ok && cur <= age {
		return
	}
	w.floor, w.hasFloor = (w.hi-uint32(age))&seqMask, true
}

// signed24 sign-extends the low 24 bits of x.
func signed24(x uint32) int32 { return int32(x<<8) >> 8 }
