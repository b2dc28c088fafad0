// Package avara implements the Avara UDP transport, wire-compatible with
// the game Avara's CUDPComm layer (avaraline/Avara at commit aaa5e63,
// network version 18). Section references (§) are to
// docs/protocols/avara.md in this repository, the notes that supplement
// the wiki page "Technical: Packets: UDP Header" with what the reference
// really does.
//
// ParseDatagram and AppendDatagram decode and encode datagrams as the
// reference puts them on the wire (§1): little-endian fields, a
// CRC-16/KERMIT computed with the network version in place of the CRC,
// the ack field with its AckMap flag, and messages whose optional fields
// are written exactly as the reference writes them.
package avara
