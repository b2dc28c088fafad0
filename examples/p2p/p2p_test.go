package p2p_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/logging"
	"github.com/pion/transport/v3/test"
	"github.com/pion/transport/v3/vnet"
	"github.com/rudpkit/rudp"
	"github.com/stretchr/testify/require"
)

// natNet is a virtual Internet (pion vnet) with a rendezvous host on it
// and two LANs, each behind a NAT of the same type with one host, whose
// sockets are rendezvous, peerA and peerB.
type natNet struct {
	rendezvous, peerA, peerB net.PacketConn
}

// newNATNet builds the network; it must run inside a synctest bubble,
// whose virtual clock times the WAN's 10 ms delay.
func newNATNet(t *testing.T, nat vnet.NATType) *natNet {
	t.Helper()
	lf := logging.NewDefaultLoggerFactory()
	wan, err := vnet.NewRouter(&vnet.RouterConfig{CIDR: "198.51.100.0/24", MinDelay: 10 * time.Millisecond, LoggerFactory: lf})
	require.NoError(t, err)
	host := func(r *vnet.Router, ip string) net.PacketConn {
		n, err := vnet.NewNet(&vnet.NetConfig{StaticIPs: []string{ip}})
		require.NoError(t, err)
		require.NoError(t, r.AddNet(n))
		pc, err := n.ListenPacket("udp", ip+":4000")
		require.NoError(t, err)
		return pc
	}
	lan := func(cidr, public, ip string) net.PacketConn {
		r, err := vnet.NewRouter(&vnet.RouterConfig{CIDR: cidr, StaticIPs: []string{public}, NATType: &nat, LoggerFactory: lf})
		require.NoError(t, err)
		require.NoError(t, wan.AddRouter(r))
		return host(r, ip)
	}
	nn := &natNet{
		rendezvous: host(wan, "198.51.100.1"),
		peerA:      lan("10.1.0.0/24", "198.51.100.10", "10.1.0.2"),
		peerB:      lan("10.2.0.0/24", "198.51.100.20", "10.2.0.2"),
	}
	require.NoError(t, wan.Start())
	t.Cleanup(func() { _ = wan.Stop() })
	return nn
}

// peerResult is what a peer of runPeers received, or its error.
type peerResult struct {
	in  []byte
	err error
}

// runPeers serves a rendezvous on nn and runs two peers that meet in one
// room, and exchange out[0] and out[1], each reading at most limit bytes.
// It returns once every Transport is closed.
func runPeers(ctx context.Context, nn *natNet, cfg *rudp.Config, out [2][]byte, limit int64) [2]peerResult {
	rv := &rudp.Transport{Conn: nn.rendezvous, Config: cfg}
	served := make(chan error, 1)
	go func() { served <- serveRendezvous(rv) }()
	var res [2]peerResult
	var wg sync.WaitGroup
	for i, pc := range []net.PacketConn{nn.peerA, nn.peerB} {
		wg.Go(func() {
			tr := &rudp.Transport{Conn: pc, Config: cfg}
			defer tr.Close()
			c, err := meet(ctx, tr, rv.Addr(), "room 1")
			if err != nil {
				res[i].err = err
				return
			}
			res[i].in, res[i].err = exchange(c, out[i], limit)
		})
	}
	wg.Wait()
	_ = rv.Close()
	<-served
	return res
}

// TestHolePunch: behind two NATs with endpoint-independent mapping and
// address-dependent filtering, each dropping datagrams from the other
// peer until its own host has sent to it, the peers meet at the
// rendezvous, open one stream by dialing each other at once, and move
// 1 MiB each way, every byte checked.
func TestHolePunch(t *testing.T) {
	defer test.CheckRoutines(t)()
	synctest.Test(t, func(t *testing.T) {
		nn := newNATNet(t, vnet.NATType{MappingBehavior: vnet.EndpointIndependent,
			FilteringBehavior: vnet.EndpointAddrDependent, MappingLifeTime: time.Minute})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		var out [2][]byte
		for i := range out {
			out[i] = make([]byte, 1<<20)
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for j := range out[i] {
				out[i][j] = byte(rng.Uint32())
			}
		}
		res := runPeers(ctx, nn, nil, out, 1<<20)
		for i, r := range res {
			require.NoError(t, r.err, "peer %d", i)
			require.True(t, bytes.Equal(out[1-i], r.in), "peer %d received %d bytes, not the %d sent", i, len(r.in), len(out[1-i]))
		}
	})
}

// TestSymmetricNAT: behind NATs that map each destination to a port of
// their own, the address the rendezvous saw is not the one the other
// peer reaches: each peer's dial fails after HandshakeTimeout with
// ErrHandshakeTimeout, saying a relay is needed.
func TestSymmetricNAT(t *testing.T) {
	defer test.CheckRoutines(t)()
	synctest.Test(t, func(t *testing.T) {
		nn := newNATNet(t, vnet.NATType{MappingBehavior: vnet.EndpointAddrPortDependent,
			FilteringBehavior: vnet.EndpointAddrPortDependent, MappingLifeTime: time.Minute})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		res := runPeers(ctx, nn, &rudp.Config{HandshakeTimeout: 3 * time.Second}, [2][]byte{}, 0)
		for i, r := range res {
			require.True(t, errors.Is(r.err, rudp.ErrHandshakeTimeout), "peer %d: %v", i, r.err)
			require.True(t, strings.Contains(r.err.Error(), "symmetric NAT") && strings.Contains(r.err.Error(), "needs a relay"),
				"peer %d: %v", i, r.err)
		}
	})
}
