package socket

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

// TestEndpointSpread: an endpoint reading a SO_REUSEPORT group of three
// sockets hands each of 24 peers its 50 datagrams in order, each peer's
// through one reader, and the peers through more than one reader (the
// kernel's hash of 24 addresses sends them all to one of three sockets
// with probability 3 × 3⁻²⁴). Release closes every socket and stops
// every reader.
func TestEndpointSpread(t *testing.T) {
	pcs, err := BindGroup(t.Context(), "udp", "127.0.0.1:0", 3, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Len(t, pcs, 3)
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

// TestBindGroupSpreads: BindGroup binds four sockets to one port, and the
// kernel hands each of 32 sources' datagrams to one of them, in order,
// and the sources to more than one (all to one of four: probability
// 4 × 4⁻³²).
func TestBindGroupSpreads(t *testing.T) {
	pcs, err := BindGroup(t.Context(), "udp", "127.0.0.1:0", 4, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Len(t, pcs, 4)
	for _, pc := range pcs {
		defer pc.Close()
		require.Equal(t, pcs[0].LocalAddr().String(), pc.LocalAddr().String())
	}
	const sources, each = 32, 3
	for range sources {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		defer c.Close()
		for n := range each {
			_, err := c.WriteTo(fmt.Appendf(nil, "%s %d", c.LocalAddr(), n), pcs[0].LocalAddr())
			require.NoError(t, err)
		}
	}
	at := map[string]int{}       // the socket each source reached
	got := map[string][]string{} // each source's datagrams
	used := 0
	for i, pc := range pcs {
		n := 0
		buf := make([]byte, 100)
		for {
			require.NoError(t, pc.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
			k, from, err := pc.ReadFrom(buf)
			if err != nil {
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
				break
			}
			src := from.String()
			if j, ok := at[src]; ok {
				require.Equal(t, j, i, "%v reached two sockets", src)
			}
			at[src] = i
			got[src] = append(got[src], string(buf[:k]))
			n++
		}
		if n > 0 {
			used++
		}
	}
	require.Len(t, got, sources)
	for src, ds := range got {
		require.Equal(t, []string{src + " 0", src + " 1", src + " 2"}, ds)
	}
	require.Greater(t, used, 1, "sources spread over the sockets")
}
