package airhook

// IsOpening reports whether datagram p can open a session at a listener:
// an Airhook packet (flag bit 7 clear) carrying the sender's session ID
// and no observed session, as a peer's first packets do
// (docs/protocols/airhook.md §3.2), at least as long as its header. It
// reads p in place and allocates nothing, so that a listener drops
// anything else from an unknown address before building any state.
func IsOpening(p []byte) bool {
	return len(p) >= headerLen+4 && p[0]&(flagOutOfBand|flagSession|flagObservedSession) == flagSession
}
