// Package wirefox implements Wirefox, wire-compatible with iridinite/wirefox
// at commit 0897fcf (the project's WireFormat.md is out of date; see the
// notes). Section references (§) are to docs/protocols/wirefox.md in this
// repository, the notes that give the exact bytes the reference puts on
// the wire and its behaviour.
//
// ParseDatagram and AppendDatagram encode and decode the datagram header
// (§1.2): flags most significant bit first, a big-endian datagram ID, ACK
// and NAK lists of 1..256 IDs with count − 1 on the wire, and the
// data-length field, which is written exactly and never relied upon on
// receive (§4 bug 1). ParsePacket and AppendPacket do the same for the
// packet header (§1.3): SEG and BIG flags, packet ID, options, channel,
// per-channel sequence, length before offset, split fields.
// ParseHandshake, AppendHandshake and AppendOOB build the out-of-band
// CONNECT_ATTEMPT messages (§1.5).
package wirefox
