package rudp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pion/logging"
	"github.com/pion/transport/v3/vnet"
	"github.com/rudpkit/rudp/internal/impair"
	"github.com/stretchr/testify/require"
)

// vpath is a path between two hosts of a pion virtual network, for tests
// that run inside a synctest bubble, where time is virtual: a rudp stack on
// it runs its real timers, and a test can assert the exact instant
// something happens. Every datagram is delayed by vpathDelay; the path
// logs the datagrams it delivers and can be cut, after which it delivers
// nothing.
type vpath struct {
	server, client net.PacketConn // on hosts serverIP and clientIP
	clientHost     *vnet.Net

	mu   sync.Mutex
	cut  [2]bool     // indexed by toSrv: nothing is delivered that way
	sent []vdatagram // every datagram that reached the far end of the path
}

// vdatagram is one datagram the path carried (or dropped, once cut).
type vdatagram struct {
	at      time.Time // when it was sent: delivery time less vpathDelay
	toSrv   bool      // sent by the client to the server
	size    int
	dropped bool
}

const (
	vpathDelay = 5 * time.Millisecond // one way
	serverIP   = "192.0.2.1"
	clientIP   = "192.0.2.2"
)

// newVPath builds the network, whose NICs drop lossPercent of the datagrams
// they receive (seeded), and one socket on each host. It must run inside a
// synctest bubble; the network stops at the end of the test.
func newVPath(t *testing.T, lossPercent int) *vpath {
	t.Helper()
	router, err := vnet.NewRouter(&vnet.RouterConfig{
		CIDR: "192.0.2.0/24", MinDelay: vpathDelay,
		LoggerFactory: logging.NewDefaultLoggerFactory(),
	})
	require.NoError(t, err)
	p := &vpath{}
	router.AddChunkFilter(p.filter)
	pcs := make([]net.PacketConn, 2)
	for i, ip := range []string{serverIP, clientIP} {
		host, err := vnet.NewNet(&vnet.NetConfig{StaticIPs: []string{ip}})
		require.NoError(t, err)
		p.clientHost = host
		var nic vnet.NIC = host
		if lossPercent > 0 {
			nic, err = vnet.NewLossFilterWithOptions(host, lossPercent, vnet.WithLossSeed(int64(i+1)))
			require.NoError(t, err)
		}
		require.NoError(t, router.AddNet(nic))
		pcs[i], err = host.ListenPacket("udp", ip+":4000")
		require.NoError(t, err)
	}
	require.NoError(t, router.Start())
	t.Cleanup(func() { _ = router.Stop() })
	p.server, p.client = pcs[0], pcs[1]
	return p
}

// impair wraps the path's two sockets in imp's impairments of what they
// send (seeded apart), if imp is not nil. Call it before the sockets are
// used.
func (p *vpath) impair(imp *impair.Config) {
	if imp == nil {
		return
	}
	for i, pc := range []*net.PacketConn{&p.server, &p.client} {
		cfg := *imp
		cfg.Seed = uint64(i + 1)
		*pc = impair.New(*pc, cfg)
	}
}

// socket opens another socket on the client's host, closed at the end of
// the test.
func (p *vpath) socket(t *testing.T, port int) net.PacketConn {
	t.Helper()
	pc, err := p.clientHost.ListenPacket("udp", fmt.Sprintf("%s:%d", clientIP, port))
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	return pc
}

func (p *vpath) filter(c vnet.Chunk) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := vdatagram{
		at:    time.Now().Add(-vpathDelay),
		toSrv: c.DestinationAddr().String() == p.server.LocalAddr().String(),
		size:  len(c.UserData()),
	}
	d.dropped = p.cut[b2i(d.toSrv)]
	p.sent = append(p.sent, d)
	return !d.dropped
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cutNow cuts the path both ways: nothing is delivered from now on,
// datagrams in flight included.
func (p *vpath) cutNow() {
	p.cutWay(true)
	p.cutWay(false)
}

// cutWay cuts one way of the path: towards the server if toSrv.
func (p *vpath) cutWay(toSrv bool) {
	p.mu.Lock()
	p.cut[b2i(toSrv)] = true
	p.mu.Unlock()
}

// delivered returns when the datagrams the path delivered to the server
// (toSrv) or to the client arrived there, in order.
func (p *vpath) delivered(toSrv bool) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ts []time.Time
	for _, d := range p.sent {
		if d.toSrv == toSrv && !d.dropped {
			ts = append(ts, d.at.Add(vpathDelay))
		}
	}
	return ts
}

// lastDelivered returns when the last datagram the path delivered to the
// server (toSrv) or to the client arrived there.
func (p *vpath) lastDelivered(toSrv bool) time.Time {
	ts := p.delivered(toSrv)
	if len(ts) == 0 {
		return time.Time{}
	}
	return ts[len(ts)-1]
}

// sentBetween returns when one end (the client if toSrv) sent datagrams
// after from and before to, delivered or not, relative to from.
func (p *vpath) sentBetween(from, to time.Time, toSrv bool) []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ds []time.Duration
	for _, d := range p.sent {
		if d.toSrv == toSrv && d.at.After(from) && d.at.Before(to) {
			ds = append(ds, d.at.Sub(from))
		}
	}
	return ds
}

// vcfg returns cfg with seeded randomness, so a run in a bubble repeats.
func vcfg(cfg Config) *Config {
	cfg.Rand = rand.NewChaCha8([32]byte{'v', byte(cfg.Protocol)})
	return &cfg
}

// streams connects a stream over the path. Everything is closed at the
// end of the test, and the test waits for both associations to end.
func (p *vpath) streams(t *testing.T, cfg *Config) (c, s *Conn, ln *Listener) {
	t.Helper()
	ln = Server(p.server, cfg)
	c = Client(p.client, ln.Addr(), cfg)
	require.NoError(t, c.Handshake(context.Background()))
	nc, err := ln.Accept()
	require.NoError(t, err)
	s = nc.(*Conn)
	t.Cleanup(func() {
		endNow(c, s)
		ln.Close()
	})
	return c, s, ln
}

// endNow closes each conn without lingering and waits for its end: a
// synctest bubble ends only once every conn's goroutines have.
func endNow(conns ...net.Conn) {
	for _, c := range conns {
		c.Close()
		c.(interface{ base() *connBase }).base().a.abandon(errClosed)
		<-doneOf(c)
	}
}

// messagePairOn connects a message conn pair of cfg (its Rand seeded, see
// vcfg) over a fresh path impaired as l, with every Read and Write bounded
// by ioBound: messagePair in virtual time, inside a synctest bubble.
func messagePairOn(t *testing.T, cfg Config, l link) (c, s *MessageConn) {
	t.Helper()
	vp := newVPath(t, 0)
	vp.impair(l.imp)
	c, s, _ = vp.messages(t, vcfg(cfg))
	bound(t, c, s)
	return c, s
}

// messages connects a message conn over the path, as streams does.
func (p *vpath) messages(t *testing.T, cfg *Config) (c, s *MessageConn, ln *MessageListener) {
	t.Helper()
	ln = ServerMessages(p.server, cfg)
	c = ClientMessages(p.client, ln.Addr(), cfg)
	require.NoError(t, c.Handshake(context.Background()))
	s, err := ln.AcceptMessages()
	require.NoError(t, err)
	t.Cleanup(func() {
		endNow(c, s)
		ln.Close()
	})
	return c, s, ln
}

// within runs f in its own goroutine and fails the test if f has not
// returned after d of (virtual) time, so that a regression that blocks
// fails instead of hanging the bubble.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
	}
}

// vkind makes a connected pair of one conn kind over a vpath.
type vkind struct {
	name string
	pair func(t *testing.T, p *vpath, cfg *Config) (c, s net.Conn)
}

var vkinds = []vkind{
	{"stream", func(t *testing.T, p *vpath, cfg *Config) (net.Conn, net.Conn) {
		c, s, _ := p.streams(t, cfg)
		return c, s
	}},
	{"message", func(t *testing.T, p *vpath, cfg *Config) (net.Conn, net.Conn) {
		c, s, _ := p.messages(t, cfg)
		return c, s
	}},
}

// forEachKind runs f in a synctest bubble with a fresh vpath for every
// protocol and conn kind.
func forEachKind(t *testing.T, f func(t *testing.T, p Protocol, k vkind, vp *vpath)) {
	for _, p := range Protocols() {
		for _, k := range vkinds {
			t.Run(p.String()+"/"+k.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { f(t, p, k, newVPath(t, 0)) })
			})
		}
	}
}

// send sends b as one message (a message conn) or as stream bytes.
func send(c net.Conn, p Protocol, b []byte) error {
	if mc, ok := c.(*MessageConn); ok {
		return mc.WriteMessage(Message{Data: b, Number: testNumber(p)})
	}
	_, err := c.Write(b)
	return err
}

// recv reads one message (a message conn) or what a stream has, up to
// 2 KiB.
func recv(c net.Conn) (string, error) {
	if mc, ok := c.(*MessageConn); ok {
		m, err := mc.ReadMessage()
		return string(m.Data), err
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

// doneOf returns the conn's Done channel.
func doneOf(c net.Conn) <-chan struct{} { return c.(interface{ Done() <-chan struct{} }).Done() }
