package socket

import (
	"log/slog"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// orderPeer records the datagrams it takes and the readers (by their
// Outbox) that flushed it.
type orderPeer struct {
	k       Key
	mu      sync.Mutex
	got     []byte // each datagram's first byte
	readers map[*Outbox]bool
}

func (p *orderPeer) Key() Key { return p.k }
func (p *orderPeer) Input(_ time.Time, data []byte, seg int) (int, bool, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := 0; i < len(data); i += seg {
		p.got = append(p.got, data[i])
	}
	return len(data), true, false
}
func (p *orderPeer) Flush(_ time.Time, out *Outbox) {
	p.mu.Lock()
	p.readers[out] = true
	p.mu.Unlock()
}
func (p *orderPeer) Refused(time.Time) {}
func (p *orderPeer) Stopped()          {}
func (p *orderPeer) TakesLarge() bool  { return false }

// reusePortGroup binds n UDP sockets to one loopback port with
// SO_REUSEPORT.
func reusePortGroup(t *testing.T, n int) []net.PacketConn {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		require.NoError(t, c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}))
		return serr
	}}
	addr := "127.0.0.1:0"
	var pcs []net.PacketConn
	for range n {
		pc, err := lc.ListenPacket(t.Context(), "udp", addr)
		require.NoError(t, err)
		addr = pc.LocalAddr().String()
		pcs = append(pcs, pc)
	}
	return pcs
}

// TestEndpointSpread: an endpoint reading a SO_REUSEPORT group of three
// sockets hands each of 24 peers its 50 datagrams in order, each peer's
// through one reader, and the peers through more than one reader (the
// kernel's hash of 24 addresses sends them all to one of three sockets
// with probability 3 × 3⁻²⁴). Release closes every socket and stops
// every reader.
func TestEndpointSpread(t *testing.T) {
	pcs := reusePortGroup(t, 3)
	ep := NewEndpoint(pcs[0], false, MaxDatagram, slog.New(slog.DiscardHandler))
	ep.Spread(pcs[1:])
	const peers, each = 24, 50
	clients := make([]net.PacketConn, peers)
	ps := make([]*orderPeer, peers)
	for i := range clients {
		clients[i] = udpSocket(t)
		defer clients[i].Close()
		ps[i] = &orderPeer{k: KeyOf(clients[i].LocalAddr()), readers: map[*Outbox]bool{}}
		require.True(t, ep.Add(ps[i]))
	}
	ep.Serve()
	for n := range each {
		for _, c := range clients {
			_, err := c.WriteTo([]byte{byte(n)}, pcs[0].LocalAddr())
			require.NoError(t, err)
		}
	}
	want := make([]byte, each)
	for n := range want {
		want[n] = byte(n)
	}
	readers := map[*Outbox]bool{}
	for i, p := range ps {
		require.Eventually(t, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return len(p.got) == each
		}, 10*time.Second, time.Millisecond, "peer %d", i)
		p.mu.Lock()
		require.Equal(t, want, p.got, "peer %d: in order", i)
		require.Len(t, p.readers, 1, "peer %d: one reader", i)
		for r := range p.readers {
			readers[r] = true
		}
		p.mu.Unlock()
	}
	require.Greater(t, len(readers), 1, "peers spread over the readers")

	for _, p := range ps {
		ep.Remove(p)
	}
	ep.Release()
	select {
	case <-ep.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("readers still running after Release")
	}
	for i, pc := range pcs {
		_, err := pc.WriteTo([]byte{1}, clients[0].LocalAddr())
		require.ErrorIs(t, err, net.ErrClosed, "socket %d", i)
	}
}
