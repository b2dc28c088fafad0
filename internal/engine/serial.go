package engine

// Serial-number arithmetic (RFC 1982) for the sequence spaces engines use.
// a is "before" b when the forward distance from a to b is less than half
// the space.

// Less8 reports whether a precedes b in 8-bit serial space.
func Less8(a, b uint8) bool { return int8(a-b) < 0 }

// Less16 reports whether a precedes b in 16-bit serial space.
func Less16(a, b uint16) bool { return int16(a-b) < 0 }

// Less32 reports whether a precedes b in 32-bit serial space.
func Less32(a, b uint32) bool { return int32(a-b) < 0 }

// Within8 reports whether x lies in the inclusive range [lo, hi] walked
// forward from lo, modulo 256.
func Within8(x, lo, hi uint8) bool { return x-lo <= hi-lo }

// Within16 reports whether x lies in the inclusive range [lo, hi] walked
// forward from lo, modulo 65536.
func Within16(x, lo, hi uint16) bool { return x-lo <= hi-lo }
