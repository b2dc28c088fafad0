package porous

// IsOpening reports whether datagram p can open a session at a listener:
// a Connect frame of the right size (docs/protocols/porous.md §1.1,
// §3.2), whatever its version and channel count (the session answers an
// incompatible one). It reads p in place and allocates nothing, so that a
// listener drops anything else from an unknown address before building
// any state.
func IsOpening(p []byte) bool {
	return len(p) == fixedSize[FrameConnect] && FrameType(p[0]) == FrameConnect
}
