package rudp

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/impair"
	"github.com/stretchr/testify/require"
)

// link describes the path between the two ends of a test pair. A nil
// *impair.Config is a clean loopback path.
type link struct {
	name string
	imp  *impair.Config
}

var links = []link{
	{name: "loopback"},
	{name: "impaired", imp: &impair.Config{Loss: 0.05, Duplicate: 0.02, Delay: time.Millisecond,
		Reorder: 0.02, ReorderDelay: 2 * time.Millisecond}},
}

// udpSocket opens a loopback UDP socket, impaired in its sending direction
// when imp is not nil.
func udpSocket(t testing.TB, imp *impair.Config, seed uint64) net.PacketConn {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	if imp == nil {
		return pc
	}
	cfg := *imp
	cfg.Seed = seed
	return impair.New(pc, cfg)
}

// streamPair returns a dialed and an accepted stream conn over real UDP
// sockets, and the listener. Everything is closed at the end of the test.
func streamPair(t testing.TB, cfg *Config, l link) (client, server *Conn, ln *Listener) {
	t.Helper()
	ln = Server(udpSocket(t, l.imp, 1), cfg)
	client = Client(udpSocket(t, l.imp, 2), ln.Addr(), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, client.Handshake(ctx))
	sc, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() {
		client.Close()
		sc.Close()
		ln.Close()
	})
	return client, sc.(*Conn), ln
}

func TestKeyOf(t *testing.T) {
	v4 := &net.UDPAddr{IP: net.ParseIP("127.0.0.1"), Port: 9}
	v4short := &net.UDPAddr{IP: net.IP{127, 0, 0, 1}, Port: 9}
	require.Equal(t, keyOf(v4), keyOf(v4short), "IPv4 and IPv4-mapped forms are one peer")
	require.NotEqual(t, keyOf(v4), keyOf(&net.UDPAddr{IP: net.IP{127, 0, 0, 1}, Port: 10}))
	require.Equal(t, addrKey{s: "pipe"}, keyOf(&net.UnixAddr{Name: "pipe", Net: "unixgram"}))
}
