package stream

import "math/bits"

// minRing is the first capacity a ring grows to, unless its limit is lower.
const minRing = 4096

// sendRing is a FIFO of bytes in a ring buffer that grows by doubling up to
// a limit given by the caller.
type sendRing struct {
	buf  []byte
	head int // index of the first byte held
	n    int // bytes held
}

// push appends p. The caller guarantees r.n+len(p) <= limit.
func (r *sendRing) push(p []byte, limit int) {
	if len(p) == 0 {
		return
	}
	if need := r.n + len(p); need > len(r.buf) {
		r.grow(need, limit)
	}
	tail := r.head + r.n
	if tail >= len(r.buf) {
		tail -= len(r.buf)
	}
	c := copy(r.buf[tail:], p)
	copy(r.buf, p[c:])
	r.n += len(p)
}

func (r *sendRing) grow(need, limit int) {
	c := max(need, 2*len(r.buf), minRing)
	c = min(c, max(limit, need))
	nb := make([]byte, c)
	k := copy(nb, r.buf[r.head:min(r.head+r.n, len(r.buf))])
	copy(nb[k:r.n], r.buf)
	r.buf, r.head = nb, 0
}

// pop moves up to len(dst) bytes from the front of the ring into dst and
// returns how many.
func (r *sendRing) pop(dst []byte) int {
	k := min(len(dst), r.n)
	if k == 0 {
		return 0
	}
	c := copy(dst[:k], r.buf[r.head:])
	copy(dst[c:k], r.buf)
	r.head += k
	if r.head >= len(r.buf) {
		r.head -= len(r.buf)
	}
	r.n -= k
	if r.n == 0 {
		r.head = 0
	}
	return k
}

// release drops the ring and its contents.
func (r *sendRing) release() { *r = sendRing{} }

// recvRing holds received stream bytes at position offset mod len(data),
// with one bit per position recording out-of-order bytes received past the
// in-order point. len(data) is a multiple of 64, so a 64-byte aligned block
// of offsets maps to exactly one word of bits.
//
// The owner keeps every byte it stores within a span of len(data) offsets
// (from the reader's offset), so positions never alias, and sets bits only
// for offsets at or past the in-order point, clearing them as that point
// passes: a set bit always means exactly one live offset.
type recvRing struct {
	data []byte
	bits []uint64
}

func roundUp64(n uint64) uint64 { return (n + 63) &^ 63 }

// size is the ring's capacity in bytes.
func (r *recvRing) size() uint64 { return uint64(len(r.data)) }

// ensure grows the ring to hold span bytes (span <= limit, a multiple of
// 64), keeping the bytes of [lo, hi) and the bits of [from, hi).
func (r *recvRing) ensure(span, limit, lo, from, hi uint64) {
	if span <= r.size() {
		return
	}
	c := min(roundUp64(max(span, 2*r.size(), minRing)), limit)
	nr := recvRing{data: make([]byte, c), bits: make([]uint64, c/64)}
	if r.size() > 0 {
		for off := lo; off < hi; {
			p, q := off%r.size(), off%c
			n := min(hi-off, r.size()-p, c-q)
			copy(nr.data[q:q+n], r.data[p:p+n])
			off += n
		}
		for off := from; off < hi; {
			p := off % r.size()
			b := p % 64
			n := min(64-b, hi-off)
			x := r.bits[p/64] >> b
			for i := uint64(0); x != 0 && i < n; i, x = i+1, x>>1 {
				if x&1 != 0 {
					q := (off + i) % c
					nr.bits[q/64] |= 1 << (q % 64)
				}
			}
			off += n
		}
	}
	*r = nr
}

// put copies p to the positions of offsets [off, off+len(p)).
func (r *recvRing) put(off uint64, p []byte) {
	for len(p) > 0 {
		pos := off % r.size()
		n := copy(r.data[pos:], p)
		p = p[n:]
		off += uint64(n)
	}
}

// get copies the bytes of offsets [off, off+len(dst)) into dst.
func (r *recvRing) get(off uint64, dst []byte) {
	for len(dst) > 0 {
		pos := off % r.size()
		n := copy(dst, r.data[pos:])
		dst = dst[n:]
		off += uint64(n)
	}
}

// mark sets (set true) or clears the bits of offsets [lo, hi).
func (r *recvRing) mark(lo, hi uint64, set bool) {
	for lo < hi {
		pos := lo % r.size()
		b := pos % 64
		n := min(64-b, hi-lo)
		m := ^uint64(0) >> (64 - n) << b
		if set {
			r.bits[pos/64] |= m
		} else {
			r.bits[pos/64] &^= m
		}
		lo += n
	}
}

// absorb clears the run of set bits starting at offset off, stopping at hi,
// and returns the first offset past the run.
func (r *recvRing) absorb(off, hi uint64) uint64 {
	for off < hi {
		pos := off % r.size()
		b := pos % 64
		run := min(uint64(bits.TrailingZeros64(^(r.bits[pos/64] >> b))), 64-b, hi-off)
		if run == 0 {
			break
		}
		r.bits[pos/64] &^= ^uint64(0) >> (64 - run) << b
		off += run
		if b+run < 64 {
			break
		}
	}
	return off
}

// release drops the ring and its contents.
func (r *recvRing) release() { *r = recvRing{} }
