package lludp

// IsOpening reports whether datagram p can open a circuit at a listener:
// a reliable UseCircuitCode with a whole body, not zerocoded (its template
// is Unencoded; docs/protocols/lludp.md §3.1), which is the only message a
// region accepts off-circuit. The message number follows the header and
// the extra header, if any, follows the number (§2 erratum 1). It reads p
// in place and allocates nothing, so that a listener drops anything else
// from an unknown address before building any state.
func IsOpening(p []byte) bool {
	const number = 4 // Low numbers: FF FF, then the 16-bit number
	if len(p) < HeaderLen+number+circuitLen || p[0]&FlagReliable == 0 || p[0]&FlagZerocoded != 0 {
		return false
	}
	n, l := ParseNumber(p[HeaderLen:])
	return l == number && n == UseCircuitCode && len(p) >= HeaderLen+number+int(p[5])+circuitLen
}
