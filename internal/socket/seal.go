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
// match is dropped before the engine sees it, as if lost. The seal is no
// defence against an attacker, who can compute it: crypto/tls over the
// stream is. Message conns speak the protocols' own formats and carry
// none.
// SealLen is the length of the seal, in bytes.
const SealLen = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Seal appends the seal of b to b; b must have room for it.
func Seal(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// Unseal returns b without its seal, and false if the seal does not
// match.
func Unseal(b []byte) ([]byte, bool) {
	n := len(b) - SealLen
	if n < 0 || binary.BigEndian.Uint32(b[n:]) != crc32.Checksum(b[:n], castagnoli) {
		return nil, false
	}
	return b[:n], true
}
