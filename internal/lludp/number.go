package lludp

// Message numbers in the template's full form (docs/protocols/lludp.md §1.2, §1.6): High n is
// n (1..254), Medium n is 0xFF00|n (1..254), Low n is 0xFFFF0000|n
// (1..65529) and Fixed numbers are 0xFFFFFFFA..0xFFFFFFFF.
const (
	// StartPingCheck (High 1, body: u8 PingID, u32 LE OldestUnacked) is
	// sent by the session every Config.KeepAlive; the application may not
	// send it (docs/protocols/lludp.md §3.7).
	StartPingCheck uint32 = 0x01
	// CompletePingCheck (High 2, body: u8 PingID) answers a StartPingCheck;
	// engine-owned (docs/protocols/lludp.md §3.7).
	CompletePingCheck uint32 = 0x02
	// TestMessage (Low 1) is the template's test message, marked
	// Zerocoded; its number is itself zerocoded on the wire (FF FF 00 01
	// becomes FF FF 00 01 01). It is an ordinary message for this package.
	TestMessage uint32 = 0xFFFF0001
	// UseCircuitCode (Low 3, body: u32 LE Code, SessionID, AgentID) opens a
	// circuit; engine-owned (docs/protocols/lludp.md §3.1).
	UseCircuitCode uint32 = 0xFFFF0003
	// PacketAck (Fixed 0xFFFFFFFB, body: u8 count, count × u32 LE IDs)
	// carries acknowledgements; engine-owned (docs/protocols/lludp.md §3.3).
	PacketAck uint32 = 0xFFFFFFFB
	// OpenCircuit (Fixed 0xFFFFFFFC) is blacklisted on UDP by the viewer;
	// engine-owned, never sent, ignored on receive (docs/protocols/lludp.md §1.6).
	OpenCircuit uint32 = 0xFFFFFFFC
	// CloseCircuit (Fixed 0xFFFFFFFD, no body) ends a circuit; engine-owned
	// (docs/protocols/lludp.md §3.1).
	CloseCircuit uint32 = 0xFFFFFFFD
	// StreamMessage (Low 65000, FF FF FD E8 on the wire) is reserved by
	// rudp for the frames of its byte streams. It lies outside the range
	// the Second Life template uses (Low 1..431), so a Second Life peer
	// drops it as an unknown message; to this package it is an ordinary
	// message number.
	StreamMessage uint32 = 0xFFFFFDE8
)

// NumberLen returns the length in bytes of message number n on the wire
// before zerocoding (docs/protocols/lludp.md §1.2): 1 for High (n ≤ 0xFE), 2 for Medium
// (0xFF00..0xFFFE), 4 for Low and Fixed (0xFFFF0000 and above), and 0 for
// a number that has no encoding. The numbers 0, 0xFF00 and 0xFFFF0000
// (number 0 of a frequency) are encodable but unused by the template, and
// Send refuses them.
func NumberLen(n uint32) int {
	switch {
	case n < 0xFF:
		return 1
	case n >= 0xFF00 && n < 0xFFFF:
		return 2
	case n >= 0xFFFF0000:
		return 4
	}
	return 0
}

// PutNumber writes the wire form of n, before zerocoding, into b (at
// least 4 bytes) and returns its length (docs/protocols/lludp.md §1.2). A number without an
// encoding is written in its 4-byte Low form, FF FF and its low 16 bits.
func PutNumber(b []byte, n uint32) int {
	switch NumberLen(n) {
	case 1:
		b[0] = byte(n)
		return 1
	case 2:
		b[0], b[1] = 0xFF, byte(n)
		return 2
	}
	b[0], b[1], b[2], b[3] = 0xFF, 0xFF, byte(n>>8), byte(n)
	return 4
}

// ParseNumber reads a message number in its wire form, before
// zerocoding, at the start of b and returns it with its length, or 0, 0
// when b is too short (docs/protocols/lludp.md §1.2: byte 0 ≠ FF is High, else byte 1 ≠ FF
// is Medium, else Low/Fixed from bytes 2–3).
func ParseNumber(b []byte) (uint32, int) {
	switch {
	case len(b) >= 1 && b[0] != 0xFF:
		return uint32(b[0]), 1
	case len(b) >= 2 && b[1] != 0xFF:
		return 0xFF00 | uint32(b[1]), 2
	case len(b) >= 4:
		return 0xFFFF0000 | uint32(b[2])<<8 | uint32(b[3]), 4
	}
	return 0, 0
}

// transport reports whether n is one of the numbers the session itself
// sends and consumes (docs/protocols/lludp.md §1.6); Send refuses them.
func transport(n uint32) bool {
	switch n {
	case StartPingCheck, CompletePingCheck, UseCircuitCode, PacketAck, OpenCircuit, CloseCircuit:
		return true
	}
	return false
}

// sendable reports whether the application may send message number n: it
// is in a template range (High 1..254, Medium 1..254, Low 1..65529, Fixed
// 0xFFFFFFFA..0xFFFFFFFF) and is not a transport message.
func sendable(n uint32) bool {
	return NumberLen(n) > 0 && n != 0 && n != 0xFF00 && n != 0xFFFF0000 && !transport(n)
}
