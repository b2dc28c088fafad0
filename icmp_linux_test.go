package rudp

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/impair"
	"github.com/stretchr/testify/require"
)

// TestListenerSeesVanishedPeer: on Linux, a listener's conn, whose socket
// is not connected, learns through IP_RECVERR that its peer's port is
// gone (ICMP port unreachable) and fails with ECONNREFUSED once the
// refusals persist over an RTO, as a dialed conn does, rather than at
// IdleTimeout (a minute here); on every protocol, streams and message
// conns.
func TestListenerSeesVanishedPeer(t *testing.T) {
	for _, p := range Protocols() {
		t.Run(p.String()+"/stream", func(t *testing.T) { testVanished(t, p, true, true) })
		t.Run(p.String()+"/message", func(t *testing.T) { testVanished(t, p, false, true) })
	}
}

// TestClientUnconnectedRefused: on Linux, Client over an unconnected
// *net.UDPConn to a port where nothing listens also fails its handshake
// with ECONNREFUSED at once (IP_RECVERR), not at the handshake timeout;
// a PacketConn that is not a *net.UDPConn is not told.
func TestClientUnconnectedRefused(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	raddr := pc.LocalAddr()
	require.NoError(t, pc.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	require.ErrorIs(t, Client(udpSocket(t, nil, 0), raddr, &Config{HandshakeTimeout: time.Minute}).Handshake(ctx), syscall.ECONNREFUSED)
	wrapped := udpSocket(t, &impair.Config{}, 1) // not a *net.UDPConn
	require.ErrorIs(t, Client(wrapped, raddr, &Config{HandshakeTimeout: 300 * time.Millisecond}).Handshake(ctx), ErrHandshakeTimeout)
}
