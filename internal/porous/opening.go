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

// Refusal returns the datagrams with which a listener of channels
// channels answers a Connect it cannot accept (another version or
// channel count), holding no state for the peer:
//
//   - its own Connect (version, channel count, no bandwidth limit, nonce
//     0: no session is offered), which tells the peer what this end
//     speaks; a connecting peer, the reference included, gives up at once
//     on a Connect it is incompatible with (docs/protocols/porous.md §3.2), and a Session
//     ends with engine.ErrIncompatible;
//   - then a Disconnect, so that a compatible peer whose address a
//     spoofed Connect carried ends its handshake (engine.ErrPeerClosed)
//     rather than take the refusal for this end's Connect.
//
// Together 12 bytes, in answer to an 11-byte Connect.
func Refusal(channels int) [][]byte {
	c := Frame{Type: FrameConnect, Version: Version, Channels: channels, MaxRxBandwidth: NoBandwidthLimit}
	d := Frame{Type: FrameDisconnect}
	return [][]byte{c.AppendTo(nil), d.AppendTo(nil)}
}
