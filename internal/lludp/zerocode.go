package lludp

import (
	"fmt"
	"slices"

	"github.com/rudpkit/rudp/internal/engine"
)

// MaxDecoded is the largest zero-decoded region, and the largest datagram,
// this package accepts: the viewer's 8192-byte receive buffer (docs/protocols/lludp.md §1.3,
// §1.7).
const MaxDecoded = 8192

var errExpansion = fmt.Errorf("%w: lludp: zero-decoded data exceeds %d bytes", engine.ErrMalformed, MaxDecoded)

// zeroEncoder is the viewer's zero-run encoder (docs/protocols/lludp.md §1.3) working over
// several slices as one stream: a run of 1..255 zeros becomes 00 n, a
// longer run is cut into 00 FF pairs and a last pair. It never writes
// 00 00. It writes the encoding into out, which it never grows: when out
// is too short it stops with over set, so that AppendPacket learns
// whether the encoding is shorter than the plain form without writing
// beyond it.
type zeroEncoder struct {
	out  []byte // the encoding is out[:n]
	n    int
	run  int  // zeros held back
	over bool // out was too short; out[:n] is part of the encoding
}

// add encodes src, holding back a pending run.
func (z *zeroEncoder) add(src []byte) {
	out, n, run := z.out, z.n, z.run
	if z.over {
		return
	}
	for _, c := range src {
		if c == 0 {
			if run++; run == 0xFF {
				if uint(n+1) >= uint(len(out)) {
					z.over = true
					return
				}
				out[n], out[n+1] = 0, 0xFF
				n += 2
				run = 0
			}
			continue
		}
		if run > 0 {
			if uint(n+2) >= uint(len(out)) {
				z.over = true
				return
			}
			out[n], out[n+1], out[n+2] = 0, byte(run), c
			n += 3
			run = 0
			continue
		}
		if uint(n) >= uint(len(out)) {
			z.over = true
			return
		}
		out[n] = c
		n++
	}
	z.n, z.run = n, run
}

// flush writes the pending run, if any.
func (z *zeroEncoder) flush() {
	if z.run == 0 || z.over {
		return
	}
	if z.n+2 > len(z.out) {
		z.over = true
		return
	}
	z.out[z.n], z.out[z.n+1] = 0, byte(z.run)
	z.n += 2
	z.run = 0
}

// ZeroEncode appends the zerocoded form of src to dst and returns the
// extended slice (docs/protocols/lludp.md §1.3): every run of zeros becomes 00 n with n in
// 1..255, a run longer than 255 continues with a new pair (256 zeros are
// 00 FF 00 01), trailing zeros are encoded the same way, and 00 00 is
// never written. The result can be longer than src (a lone zero costs two
// bytes, so at most 2·len(src)); a sender keeps it only when it is
// strictly shorter, as AppendPacket does. It allocates only when dst
// lacks capacity for 2·len(src) more bytes.
func ZeroEncode(dst, src []byte) []byte {
	dst = slices.Grow(dst, 2*len(src))
	z := zeroEncoder{out: dst[len(dst) : len(dst)+2*len(src)]}
	z.add(src)
	z.flush()
	return dst[:len(dst)+z.n]
}

// ZeroDecode appends the expansion of the zerocoded src to dst and returns
// the extended slice, with the viewer's semantics (docs/protocols/lludp.md §1.3): a nonzero
// byte is copied; 00 n (n ≠ 0) gives n zeros; each further 00 right after
// a 00 adds 256 zeros before the count byte is read (00 00 02 gives 258);
// a 00 at the very end with no count byte gives one zero (00 00 at the end
// gives 257). An expansion longer than MaxDecoded bytes returns an error
// wrapping engine.ErrMalformed, with dst extended by what was decoded up
// to the cap. It allocates only when dst lacks capacity (MaxDecoded bytes
// beyond len(dst) always suffice).
func ZeroDecode(dst, src []byte) ([]byte, error) {
	limit := len(dst) + MaxDecoded
	for i := 0; i < len(src); {
		c := src[i]
		i++
		if c != 0 {
			if len(dst) == limit {
				return dst, errExpansion
			}
			dst = append(dst, c)
			continue
		}
		zeros := 0
		for i < len(src) && src[i] == 0 {
			zeros += 256
			i++
			if zeros > MaxDecoded {
				return dst, errExpansion
			}
		}
		if i == len(src) {
			zeros++
		} else {
			zeros += int(src[i])
			i++
		}
		if zeros > limit-len(dst) {
			return dst, errExpansion
		}
		n := len(dst)
		dst = slices.Grow(dst, zeros)[:n+zeros]
		clear(dst[n:])
	}
	return dst, nil
}
