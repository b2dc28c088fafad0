package socket

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPeerTableKinds: IPv4 peers (v4-mapped ones included, as KeyOf
// unmaps them) go in the compact map, IPv6 and other address types by
// Key; each is found under its own address only, and remove takes out
// only the Peer registered.
func TestPeerTableKinds(t *testing.T) {
	addrs := []net.Addr{
		&net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 9},
		&net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 10},
		&net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 9},
		&net.UDPAddr{IP: net.ParseIP("2001:db8::1"), Port: 9},
		&net.UDPAddr{IP: net.ParseIP("fe80::1"), Port: 9, Zone: "eth0"},
		&net.UnixAddr{Name: "/tmp/peer", Net: "unixgram"},
	}
	var tab peerTable
	ps := make([]*keyPeer, len(addrs))
	for i, a := range addrs {
		ps[i] = &keyPeer{KeyOf(a)}
		tab.add(ps[i].k, ps[i])
	}
	require.Len(t, tab.v4, 3)
	require.Len(t, tab.other, 3)
	for i, a := range addrs {
		require.Same(t, ps[i], tab.get(KeyOf(a)).(*keyPeer), "%v", a)
	}
	mapped := &net.UDPAddr{IP: net.ParseIP("::ffff:10.0.0.2"), Port: 9}
	require.Same(t, ps[2], tab.get(KeyOf(mapped)).(*keyPeer), "a v4-mapped address is its IPv4 one")
	require.Nil(t, tab.get(KeyOf(&net.UDPAddr{IP: net.IPv4(10, 0, 0, 3), Port: 9})))

	tab.remove(ps[0].k, ps[1]) // not the Peer registered under ps[0]'s address
	require.Same(t, ps[0], tab.get(ps[0].k).(*keyPeer))
	for i, p := range ps {
		tab.remove(p.k, p)
		require.Nil(t, tab.get(p.k))
		require.Equal(t, len(ps)-i-1, tab.len())
		require.Len(t, tab.peers(), len(ps)-i-1)
	}
}
