package rudp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/logging"
	"github.com/pion/transport/v3/vnet"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

// natNet is a virtual Internet (pion vnet) with a rendezvous host on it
// and two LANs, each behind a NAT of the given type with one host.
type natNet struct {
	rendezvous    net.PacketConn
	peerA, peerB  net.PacketConn
	publicA, pubB string // the NATs' public IPs
}

// newNATNet builds the network; it must run inside a synctest bubble.
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
		t.Cleanup(func() { pc.Close() })
		return pc
	}
	nn := &natNet{rendezvous: host(wan, "198.51.100.1"), publicA: "198.51.100.10", pubB: "198.51.100.20"}
	lan := func(cidr, public, ip string) net.PacketConn {
		natType := nat
		r, err := vnet.NewRouter(&vnet.RouterConfig{CIDR: cidr, StaticIPs: []string{public}, NATType: &natType, LoggerFactory: lf})
		require.NoError(t, err)
		require.NoError(t, wan.AddRouter(r))
		return host(r, ip)
	}
	nn.peerA = lan("10.1.0.0/24", nn.publicA, "10.1.0.2")
	nn.peerB = lan("10.2.0.0/24", nn.pubB, "10.2.0.2")
	require.NoError(t, wan.Start())
	t.Cleanup(func() { _ = wan.Stop() })
	return nn
}

// rendezvous serves two peers over rudp streams: each one that dials
// is sent the public address the other dialed from, and the stream ends.
func rendezvous(t *testing.T, pc net.PacketConn, cfg *Config) {
	tr := &Transport{Conn: pc, Config: cfg}
	t.Cleanup(func() { tr.Close() })
	ln, err := tr.Listen()
	require.NoError(t, err)
	go func() {
		var conns []net.Conn
		for len(conns) < 2 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
		for i, c := range conns {
			_, _ = c.Write([]byte(conns[1-i].RemoteAddr().String()))
			_ = c.Close()
		}
	}()
}

// peerAddress asks the rendezvous for the other peer's public address,
// from the peer's Transport.
func peerAddress(ctx context.Context, tr *Transport, rv net.Addr) (net.Addr, error) {
	c, err := tr.Dial(ctx, rv)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	b, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	return net.ResolveUDPAddr("udp", string(b))
}

// TestHolePunch: two Transports behind NATs learn each other's public
// address from a third party, dial each other at once and move 8 MiB
// each way on a stream, every byte checked, for every protocol; with
// endpoint-independent mapping and filtering (full cone), then with
// address-dependent filtering, where each NAT drops the other's first
// datagrams until its own host has sent to that address: only a
// simultaneous open gets through.
func TestHolePunch(t *testing.T) {
	size := 8 << 20
	if raceEnabled {
		// The race detector slows the virtual network's copies tenfold;
		// the whole 8 MiB runs without it (the README's last test step).
		size = 256 << 10
		t.Logf("under the race detector: %d bytes each way instead of 8 MiB", size)
	}
	for _, filtering := range []vnet.EndpointDependencyType{vnet.EndpointIndependent, vnet.EndpointAddrDependent} {
		for _, p := range Protocols() {
			t.Run(fmt.Sprintf("%v/filtering%d", p, filtering), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					nn := newNATNet(t, vnet.NATType{MappingBehavior: vnet.EndpointIndependent, FilteringBehavior: filtering,
						MappingLifeTime: time.Minute})
					crossings := &countHandler{msg: "rudp: simultaneous open: this end becomes the server"}
					// Each Transport draws from a generator of its own (a
					// ChaCha8 is not safe for concurrent use).
					cfg := func(host byte) *Config {
						return &Config{Protocol: p, Rand: rand.NewChaCha8([32]byte{byte(p), byte(filtering), host}), Logger: slog.New(crossings)}
					}
					rendezvous(t, nn.rendezvous, cfg(0))
					a := &Transport{Conn: nn.peerA, Config: cfg(1)}
					b := &Transport{Conn: nn.peerB, Config: cfg(2)}
					t.Cleanup(func() { a.Close(); b.Close() })
					ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
					defer cancel()
					dataA, dataB := randomBytes(size, 1), randomBytes(size, 2)
					var g errgroup.Group
					for _, side := range []struct {
						tr         *Transport
						send, want []byte
					}{{a, dataA, dataB}, {b, dataB, dataA}} {
						g.Go(func() error {
							peer, err := peerAddress(ctx, side.tr, nn.rendezvous.LocalAddr())
							if err != nil {
								return err
							}
							c, err := side.tr.Dial(ctx, peer)
							if err != nil {
								return err
							}
							// The conn is closed once both directions are done:
							// the peer's bytes may all arrive before this end's
							// are all written.
							wrote := make(chan error, 1)
							go func() {
								_, err := c.Write(side.send)
								if err == nil {
									err = c.CloseWrite()
								}
								wrote <- err
							}()
							got, err := io.ReadAll(c)
							if err != nil {
								return err
							}
							if !bytes.Equal(got, side.want) {
								return fmt.Errorf("%d bytes read, not the %d sent", len(got), len(side.want))
							}
							if err := <-wrote; err != nil {
								return fmt.Errorf("write: %w", err)
							}
							return c.Close()
						})
					}
					require.NoError(t, g.Wait())
					if p.entry().OpeningID != nil && filtering != vnet.EndpointIndependent {
						// Each NAT dropped the other's first opening: both
						// ends dialed, and one became the server.
						require.Equal(t, int64(1), crossings.n.Load(), "simultaneous opens settled")
					}
				})
			})
		}
	}
}

// countHandler is a slog.Handler that counts the records with message
// msg.
type countHandler struct {
	msg string
	n   atomic.Int64
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.n.Add(1)
	}
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

// TestHolePunchSymmetricNAT: behind NATs that map each destination to a
// port of their own, the address the rendezvous saw is not the one the
// peer's datagrams reach: each dial fails at HandshakeTimeout with an
// error that says so.
func TestHolePunchSymmetricNAT(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nn := newNATNet(t, vnet.NATType{MappingBehavior: vnet.EndpointAddrPortDependent,
			FilteringBehavior: vnet.EndpointAddrPortDependent, MappingLifeTime: time.Minute})
		cfg := &Config{HandshakeTimeout: 3 * time.Second}
		rendezvous(t, nn.rendezvous, cfg)
		var g errgroup.Group
		for _, pc := range []net.PacketConn{nn.peerA, nn.peerB} {
			tr := &Transport{Conn: pc, Config: cfg}
			t.Cleanup(func() { tr.Close() })
			g.Go(func() error {
				peer, err := peerAddress(t.Context(), tr, nn.rendezvous.LocalAddr())
				if err != nil {
					return err
				}
				start := time.Now()
				_, err = tr.Dial(t.Context(), peer)
				if !errors.Is(err, ErrHandshakeTimeout) || !strings.Contains(err.Error(), "symmetric NAT") {
					return fmt.Errorf("dial: %v", err)
				}
				if d := time.Since(start); d != cfg.HandshakeTimeout {
					return fmt.Errorf("failed after %v", d)
				}
				return nil
			})
		}
		require.NoError(t, g.Wait())
	})
}
