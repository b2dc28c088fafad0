package avara

import (
	"encoding/binary"
	"net/netip"
)

// tocEntryLen is the length of one TOC entry: u32 host, u16 port (network
// order) and 2 padding bytes (docs/protocols/avara.md §3.1).
const tocEntryLen = 8

// TOCLen is the length of a TOC message's data: one entry per client.
const TOCLen = MaxClients * tocEntryLen

// TOC is a server's connection table (docs/protocols/avara.md §3.1):
// entry i is the external address of player i + 1, the zero AddrPort for
// an empty slot. Only IPv4 addresses fit; others are sent as empty.
type TOC [MaxClients]netip.AddrPort

// appendTOC appends the wire form of t.
func appendTOC(b []byte, t *TOC) []byte {
	for _, a := range t {
		var e [tocEntryLen]byte
		if ip := a.Addr().Unmap(); ip.Is4() {
			v4 := ip.As4()
			copy(e[:4], v4[:])
			binary.BigEndian.PutUint16(e[4:], a.Port())
		}
		b = append(b, e[:]...)
	}
	return b
}

// parseTOC reads a TOC message's data; entries missing from a short one
// are empty, zero entries (host 0 or port 0) are empty and the padding
// bytes are ignored.
func parseTOC(b []byte) TOC {
	var t TOC
	for i := range t {
		if len(b) < (i+1)*tocEntryLen {
			break
		}
		e := b[i*tocEntryLen:]
		host, port := [4]byte(e[:4]), binary.BigEndian.Uint16(e[4:])
		if host != [4]byte{} && port != 0 {
			t[i] = netip.AddrPortFrom(netip.AddrFrom4(host), port)
		}
	}
	return t
}
