package rudp

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rudpkit/rudp/qlog"
	"github.com/rudpkit/rudp/trace"
)

// recorder is a tracer that keeps a conn's events.
type recorder struct {
	mu         sync.Mutex
	info       trace.ConnInfo
	times      []time.Time // of every event, in order
	states     []string
	sent       int
	sentBytes  int
	received   int
	dropped    int
	undecoded  []trace.Datagram // datagrams sent or received that did not decode
	lost       []trace.LossReason
	retransmit int
	metrics    int
	keepalives []time.Time
	validated  int
	blocked    []int // unsent bytes at each FlowBlocked
	closed     int
	closeErr   error
}

// snapshot returns a copy of what r recorded so far.
func (r *recorder) snapshot() recorder {
	r.mu.Lock()
	defer r.mu.Unlock()
	return recorder{info: r.info, times: slices.Clone(r.times), states: slices.Clone(r.states),
		sent: r.sent, sentBytes: r.sentBytes, received: r.received, dropped: r.dropped,
		undecoded: slices.Clone(r.undecoded), lost: slices.Clone(r.lost), retransmit: r.retransmit,
		metrics: r.metrics, closed: r.closed, closeErr: r.closeErr,
		keepalives: slices.Clone(r.keepalives), blocked: slices.Clone(r.blocked), validated: r.validated}
}

func (r *recorder) at(t time.Time) {
	r.times = append(r.times, t)
}

func (r *recorder) tracer() *trace.ConnTracer {
	lock := func(f func()) { r.mu.Lock(); defer r.mu.Unlock(); f() }
	return &trace.ConnTracer{
		StateChanged: func(t time.Time, s string) { lock(func() { r.at(t); r.states = append(r.states, s) }) },
		DatagramSent: func(t time.Time, size int, d trace.Datagram) {
			lock(func() {
				r.at(t)
				r.sent++
				r.sentBytes += size
				if d.Err != nil || d.Type == "" {
					r.undecoded = append(r.undecoded, d)
				}
			})
		},
		DatagramReceived: func(t time.Time, size int, d trace.Datagram) {
			lock(func() {
				r.at(t)
				r.received++
				if d.Err != nil || d.Type == "" {
					r.undecoded = append(r.undecoded, d)
				}
			})
		},
		DatagramDropped: func(t time.Time, size int, err error) { lock(func() { r.at(t); r.dropped++ }) },
		PacketSent: func(t time.Time, size int, retransmit bool) {
			lock(func() {
				r.at(t)
				if retransmit {
					r.retransmit++
				}
			})
		},
		PacketLost: func(t time.Time, size int, why trace.LossReason) {
			lock(func() { r.at(t); r.lost = append(r.lost, why) })
		},
		MetricsUpdated: func(t time.Time, m trace.Metrics) { lock(func() { r.at(t); r.metrics++ }) },
		Closed:         func(t time.Time, err error) { lock(func() { r.at(t); r.closed++; r.closeErr = err }) },
		PeerValidated:  func(t time.Time) { lock(func() { r.at(t); r.validated++ }) },
		KeepAlive:      func(t time.Time) { lock(func() { r.at(t); r.keepalives = append(r.keepalives, t) }) },
		FlowBlocked:    func(t time.Time, unsent int) { lock(func() { r.at(t); r.blocked = append(r.blocked, unsent) }) },
	}
}

// TestTracerLossyTransfer: a stream of every protocol carries 256 KiB
// over a path that drops 5 % of the datagrams each way, with a tracer on
// both conns. The tracer sees every datagram the conn counts as sent,
// each decoded by the protocol's codec, every loss the congestion
// controller counts (Stats.BytesLost's datagrams), with a cause, the
// states from handshake to closed, and one close; its event times are the
// conn's clock (the bubble's virtual time), never going back.
func TestTracerLossyTransfer(t *testing.T) {
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				vp := newVPath(t, 5)
				var mu sync.Mutex
				recs := map[bool]*recorder{}
				cfg := vcfg(Config{Protocol: p, Tracer: func(info trace.ConnInfo) *trace.ConnTracer {
					mu.Lock()
					defer mu.Unlock()
					r := &recorder{info: info}
					recs[info.Client] = r
					return r.tracer()
				}})
				start := time.Now()
				c, s, _ := vp.streams(t, cfg)
				data := bytes.Repeat([]byte("0123456789abcdef"), 16384)
				within(t, 10*time.Minute, func() {
					go func() {
						_, _ = c.Write(data)
						_ = c.CloseWrite()
					}()
					got, err := io.ReadAll(s)
					require.NoError(t, err)
					require.Equal(t, data, got)
				})
				// The client's events come under its lock: holding it, the
				// counters and the record agree.
				c.a.mu.Lock()
				cst := statsOf(c.a)
				lostNow := c.a.eng.Stats().Congestion.Losses
				mu.Lock()
				cl := recs[true].snapshot()
				mu.Unlock()
				c.a.mu.Unlock()
				require.Equal(t, trace.ConnInfo{Protocol: p.String(), Client: true, Stream: true,
					Local: vp.client.LocalAddr(), Remote: vp.server.LocalAddr()}, cl.info)
				require.Equal(t, int(cst.PacketsSent), cl.sent, "datagrams sent")
				require.Equal(t, int(cst.BytesSent)+cl.sent*sealLen, cl.sentBytes, "bytes sent, seals included")
				require.Empty(t, cl.undecoded, "datagrams the codec did not decode")
				require.Equal(t, int(lostNow), len(cl.lost), "losses the controller counts")
				require.Positive(t, len(cl.lost), "losses at 5 %%")
				for _, why := range cl.lost {
					require.Contains(t, []trace.LossReason{trace.LossTime, trace.LossTimeout, trace.LossNAK}, why)
				}
				// Every datagram carrying resent data is reported: one per
				// resent message where a datagram carries one (POROUS
				// frames, LLUDP messages), else no more than the messages
				// resent.
				require.Positive(t, cl.retransmit)
				if p == POROUS || p == LLUDP {
					require.Equal(t, int(cst.Retransmits), cl.retransmit, "retransmits")
				} else {
					require.LessOrEqual(t, cl.retransmit, int(cst.Retransmits), "retransmits")
				}
				require.Positive(t, cl.metrics)
				require.Equal(t, []string{"handshake", "established"}, cl.states[:2])
				for i := 1; i < len(cl.times); i++ {
					require.False(t, cl.times[i].Before(cl.times[i-1]), "event %d goes back", i)
				}
				require.False(t, cl.times[0].Before(start))
				require.False(t, cl.times[len(cl.times)-1].After(time.Now()))
				t.Logf("%d datagrams sent, %d losses, %d retransmitted packets, %d metrics, states %v", cl.sent, len(cl.lost), cl.retransmit, cl.metrics, cl.states)
			})
		})
	}
}

// TestQLOGDIR: with QLOGDIR set and no Config.Tracer, both ends of a
// stream over real UDP sockets write a qlog file into the directory,
// which qlog.ReadEvents reads back with the conn's datagrams and metrics
// and its close last.
func TestQLOGDIR(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(qlog.EnvDir, dir)
	c, s, ln := streamPair(t, &Config{}, links[0])
	data := bytes.Repeat([]byte("qlog"), 64<<10)
	go func() {
		_, _ = c.Write(data)
		_ = c.Close()
	}()
	got, err := io.ReadAll(s)
	require.NoError(t, err)
	require.Equal(t, data, got)
	require.NoError(t, s.Close())
	require.NoError(t, ln.Close())
	for _, x := range []*Conn{c, s} {
		select {
		case <-x.Done():
		case <-time.After(hangGuard):
			t.Fatal("conn not done")
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.sqlog"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	roles := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		h, events, err := qlog.ReadEvents(bytes.NewReader(b))
		require.NoError(t, err, f)
		roles[h.Trace.VantagePoint.Type] = true
		names := map[string]int{}
		for _, e := range events {
			names[e.Name]++
		}
		require.Positive(t, names[qlog.NamePacketSent], f)
		require.Positive(t, names[qlog.NamePacketReceived], f)
		require.Positive(t, names[qlog.NameMetricsUpdated], f)
		require.Equal(t, 1, names[qlog.NameConnectionClosed], f)
		require.Equal(t, qlog.NameConnectionClosed, events[len(events)-1].Name, f)
	}
	require.Equal(t, map[string]bool{"client": true, "server": true}, roles)
}

// tracedStreams connects a stream of protocol p over a fresh vpath with a
// recorder on each end, inside a synctest bubble.
func tracedStreams(t *testing.T, cfg Config) (c, s *Conn, client, server func() recorder) {
	vp := newVPath(t, 0)
	var mu sync.Mutex
	recs := map[bool]*recorder{}
	cfg.Tracer = func(info trace.ConnInfo) *trace.ConnTracer {
		mu.Lock()
		defer mu.Unlock()
		r := &recorder{info: info}
		recs[info.Client] = r
		return r.tracer()
	}
	c, s, _ = vp.streams(t, vcfg(cfg))
	snap := func(client bool) func() recorder {
		return func() recorder {
			mu.Lock()
			defer mu.Unlock()
			return recs[client].snapshot()
		}
	}
	return c, s, snap(true), snap(false)
}

// TestTracerKeepAlive: an idle stream's dialer reports each keepalive it
// sends, KeepAlive after the last datagram it heard; the listener's end,
// hearing the dialer's probes, sends none. The listener's end reports
// its peer validated once; the dialer's has nothing to validate.
func TestTracerKeepAlive(t *testing.T) {
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const keepAlive = 2 * time.Second
				_, _, client, server := tracedStreams(t, Config{Protocol: p, KeepAlive: keepAlive, IdleTimeout: time.Minute})
				time.Sleep(10*keepAlive + time.Second)
				ka := client().keepalives
				require.GreaterOrEqual(t, len(ka), 5, "keepalives in %v", 10*keepAlive)
				for i := 1; i < len(ka); i++ {
					require.GreaterOrEqual(t, ka[i].Sub(ka[i-1]), keepAlive, "keepalive %d", i)
				}
				require.Empty(t, server().keepalives)
				require.Equal(t, 1, server().validated, "the listener's peer is validated once")
				require.Zero(t, client().validated, "a dialer's peer needs no validation")
			})
		})
	}
}

// TestTracerFlowBlocked: a stream whose peer does not read reports, once,
// that it is blocked by the peer's window, with what it holds unsent;
// once the peer reads everything the transfer completes.
func TestTracerFlowBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s, client, _ := tracedStreams(t, Config{RecvWindow: 64 << 10, MaxRecvWindow: 64 << 10, SendBuffer: 1 << 20})
		data := bytes.Repeat([]byte("blocked!"), 64<<10) // 512 KiB
		go func() {
			_, _ = c.Write(data)
			_ = c.CloseWrite()
		}()
		time.Sleep(time.Second)
		blocked := client().blocked
		require.Len(t, blocked, 1)
		require.Positive(t, blocked[0])
		within(t, time.Minute, func() {
			got, err := io.ReadAll(s)
			require.NoError(t, err)
			require.Equal(t, data, got)
		})
	})
}
