package stream

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// minRing is the first capacity a ring grows to, unless its limit is lower.
const minRing = 4096

// Ring buffers of a power-of-two size from minRing to maxPooled come from
// pools shared by every stream in the process, one per size. While more
// than keepRings streams of the process hold a ring of a kind, a ring of
// that kind goes back to its pool as soon as it holds nothing
// (sendRing.pop, Stream.Read), so that a thousand streams hold buffers in
// proportion to the bytes they hold; with fewer, a stream keeps its
// rings until Trim, so that a fast stream does not trade its warm buffer
// for another at every drain (about a tenth of a loopback stream's
// rate). Larger rings are left to the garbage collector.
const (
	ringClasses = 13                           // 4 KiB, 8 KiB, ..., 16 MiB
	maxPooled   = minRing << (ringClasses - 1) // 16 MiB
)

// block is a ring's buffer; bits, one per byte of data, only on a
// receive ring's, where they are all clear whenever the block is pooled.
type block struct {
	data []byte
	bits []uint64
}

var (
	sendBlocks [ringClasses]sync.Pool // *block without bits
	recvBlocks [ringClasses]sync.Pool // *block with bits
	sending    atomic.Int64           // send rings held, in the process
	receiving  atomic.Int64           // receive rings held, in the process
)

// keepRings is how many streams of the process may keep a drained ring
// of each kind (see sendBlocks).
const keepRings = 32

// ringSize rounds a capacity of want up to the next pooled size (want
// itself past maxPooled) and caps it at limit, itself rounded up so: a
// ring cut to a limit that is not a pooled size would be allocated anew
// each time its stream drains it, so a ring's buffer may exceed its
// limit by less than the limit itself (the bytes it holds never do).
func ringSize(want, limit int) int {
	return min(pooledSize(max(want, minRing)), pooledSize(limit))
}

// pooledSize rounds n up to a power of two, up to maxPooled; a larger n
// is returned as it is.
func pooledSize(n int) int {
	if n <= 1 || n > maxPooled {
		return n
	}
	return 1 << bits.Len(uint(n-1))
}

// class returns the pool index of a block of capacity c, or -1 when c is
// not a pooled size.
func class(c int) int {
	if c < minRing || c > maxPooled || c&(c-1) != 0 {
		return -1
	}
	return bits.Len(uint(c)) - bits.Len(minRing)
}

// getBlock returns a block of capacity c from pools (recv: with clear
// bits), or a new one.
func getBlock(pools *[ringClasses]sync.Pool, c int, recv bool) *block {
	if k := class(c); k >= 0 {
		if b, ok := pools[k].Get().(*block); ok {
			return b
		}
	}
	b := &block{data: make([]byte, c)}
	if recv {
		b.bits = make([]uint64, c/64)
	}
	return b
}

// putBlock gives b back to its pool, if its size is pooled.
func putBlock(pools *[ringClasses]sync.Pool, b *block) {
	if k := class(len(b.data)); k >= 0 {
		pools[k].Put(b)
	}
}

// sendRing is a FIFO of bytes in a ring buffer that grows by doubling up to
// a limit given by the caller.
type sendRing struct {
	blk  *block // nil while the ring holds nothing
	head int    // index of the first byte held
	n    int    // bytes held
	last int    // the capacity of the last buffer, which the next starts at
}

// buf is the ring's buffer; nil while it holds nothing.
func (r *sendRing) buf() []byte {
	if r.blk == nil {
		return nil
	}
	return r.blk.data
}

// push appends p. The caller guarantees r.n+len(p) <= limit.
func (r *sendRing) push(p []byte, limit int) {
	if len(p) == 0 {
		return
	}
	if need := r.n + len(p); need > len(r.buf()) {
		r.grow(need, limit)
	}
	buf := r.blk.data
	tail := r.head + r.n
	if tail >= len(buf) {
		tail -= len(buf)
	}
	c := copy(buf[tail:], p)
	copy(buf, p[c:])
	r.n += len(p)
}

func (r *sendRing) grow(need, limit int) {
	old := r.buf()
	nb := getBlock(&sendBlocks, ringSize(max(need, 2*len(old), r.last), max(limit, need)), false)
	k := copy(nb.data, old[r.head:min(r.head+r.n, len(old))])
	copy(nb.data[k:r.n], old)
	if r.blk != nil {
		putBlock(&sendBlocks, r.blk)
	} else {
		sending.Add(1)
	}
	r.blk, r.head, r.last = nb, 0, len(nb.data)
}

// pop moves up to len(dst) bytes from the front of the ring into dst and
// returns how many. An emptied ring gives its buffer back while more
// than keepRings streams hold one.
func (r *sendRing) pop(dst []byte) int {
	k := min(len(dst), r.n)
	if k == 0 {
		return 0
	}
	buf := r.blk.data
	c := copy(dst[:k], buf[r.head:])
	copy(dst[c:k], buf)
	r.head += k
	if r.head >= len(buf) {
		r.head -= len(buf)
	}
	r.n -= k
	if r.n == 0 {
		r.head = 0
		if sending.Load() > keepRings {
			r.release()
		}
	}
	return k
}

// release drops the ring's contents and gives its buffer back.
func (r *sendRing) release() {
	if r.blk != nil {
		putBlock(&sendBlocks, r.blk)
		sending.Add(-1)
	}
	*r = sendRing{last: r.last}
}

// recvRing holds received stream bytes at position offset mod size(),
// with one bit per position recording out-of-order bytes received past the
// in-order point. size() is a multiple of 64, so a 64-byte aligned block
// of offsets maps to exactly one word of bits.
//
// The owner keeps every byte it stores within a span of size() offsets
// (from the reader's offset), so positions never alias, and sets bits only
// for offsets at or past the in-order point, clearing them as that point
// passes: a set bit always means exactly one live offset.
type recvRing struct {
	blk  *block // nil while the ring holds nothing
	last uint64 // the capacity of the last buffer, which the next starts at
}

func roundUp64(n uint64) uint64 { return (n + 63) &^ 63 }

// size is the ring's capacity in bytes.
func (r *recvRing) size() uint64 {
	if r.blk == nil {
		return 0
	}
	return uint64(len(r.blk.data))
}

// ensure grows the ring to hold span bytes (span <= limit, a multiple of
// 64), keeping the bytes of [lo, hi) and the bits of [from, hi).
func (r *recvRing) ensure(span, limit, lo, from, hi uint64) {
	if span <= r.size() {
		return
	}
	c := uint64(ringSize(int(max(span, 2*r.size(), r.last)), int(limit)))
	nb := getBlock(&recvBlocks, int(c), true)
	if r.size() > 0 {
		for off := lo; off < hi; {
			p, q := off%r.size(), off%c
			n := min(hi-off, r.size()-p, c-q)
			copy(nb.data[q:q+n], r.blk.data[p:p+n])
			off += n
		}
		for off := from; off < hi; {
			p := off % r.size()
			b := p % 64
			n := min(64-b, hi-off)
			x := r.blk.bits[p/64] >> b
			for i := uint64(0); x != 0 && i < n; i, x = i+1, x>>1 {
				if x&1 != 0 {
					q := (off + i) % c
					nb.bits[q/64] |= 1 << (q % 64)
				}
			}
			off += n
		}
	}
	r.release()
	r.blk, r.last = nb, c
	receiving.Add(1)
}

// put copies p to the positions of offsets [off, off+len(p)).
func (r *recvRing) put(off uint64, p []byte) {
	for len(p) > 0 {
		pos := off % r.size()
		n := copy(r.blk.data[pos:], p)
		p = p[n:]
		off += uint64(n)
	}
}

// get copies the bytes of offsets [off, off+len(dst)) into dst.
func (r *recvRing) get(off uint64, dst []byte) {
	for len(dst) > 0 {
		pos := off % r.size()
		n := copy(dst, r.blk.data[pos:])
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
			r.blk.bits[pos/64] |= m
		} else {
			r.blk.bits[pos/64] &^= m
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
		run := min(uint64(bits.TrailingZeros64(^(r.blk.bits[pos/64] >> b))), 64-b, hi-off)
		if run == 0 {
			break
		}
		r.blk.bits[pos/64] &^= ^uint64(0) >> (64 - run) << b
		off += run
		if b+run < 64 {
			break
		}
	}
	return off
}

// release drops the ring's contents and gives its buffer back, its bits
// cleared.
func (r *recvRing) release() {
	if r.blk != nil {
		clear(r.blk.bits)
	}
	r.drained()
}

// drained gives the buffer back when the ring holds no byte past the
// in-order point, so that every bit is clear already (see recvRing):
// clearing them would cost a sixty-fourth of the ring's size each time a
// fast reader catches up.
func (r *recvRing) drained() {
	if r.blk != nil {
		putBlock(&recvBlocks, r.blk)
		receiving.Add(-1)
	}
	*r = recvRing{last: r.last}
}
