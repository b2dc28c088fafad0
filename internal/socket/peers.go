package socket

import (
	"encoding/binary"
	"maps"
	"slices"
)

// peerTable maps remote addresses to their Peers. An IPv4 address, what
// nearly every peer has, goes by one uint64 (address and port), which a
// Go map hashes and compares in one step and stores in a third of the
// room of a Key: a listener with thousands of idle conns looks one up for
// every datagram, and a smaller table stays in cache. Other addresses go
// by their Key.
//
// A Go map keeps the room it grew to: once the entries fall to a quarter
// of their peak (of at least shrinkPeak), they move to new maps, so that a
// listener whose conns ended keeps only what its live ones need.
type peerTable struct {
	v4    map[uint64]Peer
	other map[Key]Peer
	peak  int // the most entries the table has held since its maps were made
}

// shrinkPeak is the least peak of entries whose room remove gives back.
const shrinkPeak = 64

// compact returns k's IPv4 address and port as one number, and whether k
// is an IPv4 address.
func (k Key) compact() (uint64, bool) {
	a := k.ap.Addr()
	if k.s != "" || !a.Is4() {
		return 0, false
	}
	b := a.As4()
	return uint64(binary.BigEndian.Uint32(b[:]))<<16 | uint64(k.ap.Port()), true
}

// get returns the Peer of k, nil if none.
func (t *peerTable) get(k Key) Peer {
	if c, ok := k.compact(); ok {
		return t.v4[c]
	}
	return t.other[k]
}

// add registers p under k, which has none.
func (t *peerTable) add(k Key, p Peer) {
	if c, ok := k.compact(); ok {
		if t.v4 == nil {
			t.v4 = make(map[uint64]Peer)
		}
		t.v4[c] = p
	} else {
		if t.other == nil {
			t.other = make(map[Key]Peer)
		}
		t.other[k] = p
	}
	t.peak = max(t.peak, t.len())
}

// remove unregisters p from k if it is k's Peer.
func (t *peerTable) remove(k Key, p Peer) {
	if c, ok := k.compact(); ok && t.v4[c] == p {
		delete(t.v4, c)
	} else if !ok && t.other[k] == p {
		delete(t.other, k)
	} else {
		return
	}
	if n := t.len(); t.peak >= shrinkPeak && n <= t.peak/4 {
		t.v4, t.other, t.peak = remade(t.v4), remade(t.other), n
	}
}

// remade returns a new map holding m's entries, with room for those
// only (a clone keeps the room of the original).
func remade[K comparable](m map[K]Peer) map[K]Peer {
	r := make(map[K]Peer, len(m))
	maps.Copy(r, m)
	return r
}

// len returns the number of Peers registered.
func (t *peerTable) len() int { return len(t.v4) + len(t.other) }

// peers returns the Peers registered.
func (t *peerTable) peers() []Peer {
	return append(slices.Collect(maps.Values(t.v4)), slices.Collect(maps.Values(t.other))...)
}
