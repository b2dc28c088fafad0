package socket

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKeyOf: UDP addresses are keyed by value, IPv4 and its IPv4-mapped
// form alike; other addresses by their string.
func TestKeyOf(t *testing.T) {
	v4 := &net.UDPAddr{IP: net.ParseIP("127.0.0.1"), Port: 9}
	v4short := &net.UDPAddr{IP: net.IP{127, 0, 0, 1}, Port: 9}
	require.Equal(t, KeyOf(v4), KeyOf(v4short), "IPv4 and IPv4-mapped forms are one peer")
	require.NotEqual(t, KeyOf(v4), KeyOf(&net.UDPAddr{IP: net.IP{127, 0, 0, 1}, Port: 10}))
	require.Equal(t, Key{s: "pipe"}, KeyOf(&net.UnixAddr{Name: "pipe", Net: "unixgram"}))
}
