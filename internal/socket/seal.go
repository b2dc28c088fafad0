package socket

import (
	"encoding/binary"
	"hash/crc32"
)

// Every datagram of a stream association ends with a CRC-32C (Castagnoli)
// of the bytes before it, 4 bytes big-endian: the seal. None of the
// engines' wire formats has a checksum of its own, so a datagram corrupted
// past the UDP checksum (or a copy of one, corrupted) could pass an
// engine's checks and take the place of a genuine datagram: the stream
// would then stall or deliver wrong bytes. A datagram whose seal does not
// match is dropped before the engine sees it, as if lost. Message conns
// speak the protocols' own formats and carry none.
//
// Once both ends of a stream know each other's random start (see
// SealKey), the CRC starts from a key derived from both instead of 0: a
// source that does not see the stream's traffic must then guess 32 bits
// for each datagram it forges, whatever the engine would take, and a
// replay of another session's datagrams fails. It is no defence against
// an attacker who sees the traffic: crypto/tls over the stream is.

// SealLen is the length of the seal, in bytes.
const SealLen = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Seal appends the seal of b under key (0: the plain seal) to b; b must
// have room for it.
func Seal(b []byte, key uint32) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Update(key, castagnoli, b))
}

// Unseal returns b without its seal, and false if the seal under key (0:
// the plain seal) does not match.
func Unseal(b []byte, key uint32) ([]byte, bool) {
	n := len(b) - SealLen
	if n < 0 || binary.BigEndian.Uint32(b[n:]) != crc32.Update(key, castagnoli, b[:n]) {
		return nil, false
	}
	return b[:n], true
}

// SealKey returns the key of a stream whose two ends started their byte
// offsets at a and b (stream.Config.Start, random 64-bit values each end
// sends only to the other): the same at both ends, never 0.
func SealKey(a, b uint64) uint32 {
	x := a ^ b
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd // a 64-bit finalizer, so that every bit of both starts counts
	x ^= x >> 33
	return max(uint32(x^x>>32), 1)
}
