package avara

import "encoding/binary"

// IsOpening reports whether datagram p can open a connection at a
// listener speaking network version version: a checksummed datagram
// without an AckMap whose first message is a Login (serial 0, command
// −8), as a reference client's first datagram is
// (docs/protocols/avara.md §3.1). The password is the session's to check.
// It reads p in place and allocates nothing, so that a listener drops
// anything else from an unknown address before building any state.
func IsOpening(p []byte, version uint16) bool {
	const login = HeaderLen + 5 // serial, send count, flags, command
	return len(p) >= login && len(p) <= MaxReceived && len(p) != PunchLen &&
		p[2]&1 == 0 && binary.LittleEndian.Uint16(p[4:]) == 0 && int8(p[8]) == CommandLogin &&
		binary.LittleEndian.Uint16(p) == Checksum(p, version)
}
