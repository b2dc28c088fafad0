package lludp

import (
	"fmt"
	"slices"

	"github.com/rudpkit/rudp/internal/engine"
)

// MaxDecoded is the largest zero-decoded region, and the largest datagram,
// this package accepts: the viewer's 8192-byte receive buffer (notes §1.3,
// §1.7).
const MaxDecoded = 8192

var errExpansion = fmt.Errorf("%w: lludp: zero-decoded data exceeds %d bytes", engine.ErrMalformed, MaxDecoded)

// zeroEncoder is the viewer's zero-run encoder (notes §1.3) working over
// several slices as one stream: a run of 1..255 zeros becomes 00 n, a
// longer run is cut into 00 FF pairs and a last pair. It never writes
// 00 00.
type zeroEncoder struct{ run int }

// add appends the encoding of src to dst, holding back a pending run.
func (z *zeroEncoder) add(dst, src []byte) []byte {
	for _, c := range src {
		if c == 0 {
			if z.run++; z.run == 0xFF {
				dst = append(dst, 0, 0xFF)
				z.run = 0
			}
			continue
		}
		if z.run > 0 {
			dst = append(dst, 0, byte(z.run))
			z.run = 0
		}
		dst = append(dst, c)
	}
	return dst
}

// flush appends the pending run, if any.
func (z *zeroEncoder) flush(dst []byte) []byte {
	if z.run > 0 {
		dst = append(dst, 0, byte(z.run))
		z.run = 0
	}
	return dst
}

// zeroCounter computes the length zeroEncoder would produce.
type zeroCounter struct{ run, n int }

func (z *zeroCounter) add(src []byte) {
	for _, c := range src {
		if c == 0 {
			if z.run++; z.run == 0xFF {
				z.n += 2
				z.run = 0
			}
			continue
		}
		if z.run > 0 {
			z.n += 2
			z.run = 0
		}
		z.n++
	}
}

func (z *zeroCounter) total() int {
	if z.run > 0 {
		return z.n + 2
	}
	return z.n
}

// ZeroEncode appends the zerocoded form of src to dst and returns the
// extended slice (notes §1.3): every run of zeros becomes 00 n with n in
// 1..255, a run longer than 255 continues with a new pair (256 zeros are
// 00 FF 00 01), trailing zeros are encoded the same way, and 00 00 is
// never written. The result can be longer than src (a lone zero costs two
// bytes); a sender keeps it only when it is strictly shorter, as
// AppendPacket does. It allocates only when dst lacks capacity.
func ZeroEncode(dst, src []byte) []byte {
	var z zeroEncoder
	return z.flush(z.add(dst, src))
}

// ZeroDecode appends the expansion of the zerocoded src to dst and returns
// the extended slice, with the viewer's semantics (notes §1.3): a nonzero
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
