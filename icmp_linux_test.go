package rudp

import (
	"bytes"
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
		t.Run(p.String()+"/stream", func(t *testing.T) {
			cfg := &Config{Protocol: p, IdleTimeout: time.Minute}
			l, err := (&ListenConfig{Config: cfg}).Listen(context.Background(), "udp", "127.0.0.1:0")
			require.NoError(t, err)
			ln := l.(*Listener)
			defer ln.Close()
			nc, err := (&Dialer{Config: cfg}).Dial("udp", ln.Addr().String())
			require.NoError(t, err)
			c := nc.(*Conn)
			defer c.Close()
			s, err := ln.Accept()
			require.NoError(t, err)
			defer s.Close()

			require.NoError(t, c.a.ep.pc.Close()) // the peer vanishes
			require.NoError(t, s.SetDeadline(time.Now().Add(20*time.Second)))
			buf := make([]byte, 1024)
			for {
				if _, err = s.Write(buf); err != nil {
					break
				}
			}
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
			_, err = s.Read(buf)
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
		})
		t.Run(p.String()+"/message", func(t *testing.T) {
			cfg := &Config{Protocol: p, IdleTimeout: time.Minute}
			ln, err := ListenMessages("udp", "127.0.0.1:0", cfg)
			require.NoError(t, err)
			defer ln.Close()
			c, err := DialMessages(context.Background(), "udp", ln.Addr().String(), cfg)
			require.NoError(t, err)
			defer c.Close()
			s, err := ln.AcceptMessages()
			require.NoError(t, err)
			defer s.Close()
			m := Message{Data: bytes.Repeat([]byte{15}, 100), Number: testNumber(p)} // 15: a Wirefox user command
			// A message each way first: the peer has shown it receives
			// (an LLUDP conn is limited to 3 times what its peer sent
			// until then), as a peer that vanishes mid-conversation has.
			require.NoError(t, s.WriteMessage(m))
			require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
			_, err = c.ReadMessage()
			require.NoError(t, err)
			require.Eventually(t, func() bool { // the peer acknowledged it
				s.a.mu.Lock()
				defer s.a.mu.Unlock()
				return s.a.eng.Pending() == 0
			}, 20*time.Second, time.Millisecond)

			require.NoError(t, c.a.ep.pc.Close()) // the peer vanishes
			require.NoError(t, s.SetDeadline(time.Now().Add(40*time.Second)))
			for {
				if err = s.WriteMessage(m); err != nil {
					break
				}
			}
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
			_, err = s.ReadMessage()
			require.ErrorIs(t, err, syscall.ECONNREFUSED)
		})
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
