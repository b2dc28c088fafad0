package rudp

import (
	"net"
	"testing"

	"github.com/rudpkit/rudp/internal/socket"
	"github.com/stretchr/testify/require"
)

// TestOffloadOnLoopback: on this system's loopback, a rudp stream runs
// with GSO and GRO, and its data arrives whole.
func TestOffloadOnLoopback(t *testing.T) {
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer pc.Close()
	sock := socket.New(pc, false, nil)
	gso, gro := sock.GSO(), sock.GRO()
	t.Logf("GSO %v, GRO %v", gso, gro)
	c, s, _ := streamPair(t, nil, links[0])
	require.Equal(t, gso, c.a.ep.Socket().GSO())
	require.Equal(t, gro, s.a.ep.Socket().GRO())
	data := randomBytes(1<<20, 12)
	go func() {
		_, _ = c.Write(data)
		_ = c.CloseWrite()
	}()
	got := make([]byte, 0, len(data))
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
	}
	require.Equal(t, data, got)
}
