package netsim_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/netsim"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Nonces of the simulated POROUS peers.
const (
	poNonceA = 0x0a0a0a0a
	poNonceB = 0x0b0b0b0b
)

// poBulkSize is the size of the bulk transfers: 100 MiB, 4 MiB with
// -short. (100 MiB take about 15 s under the race detector.)
func poBulkSize() int64 {
	if testing.Short() {
		return 4 << 20
	}
	return 100 << 20
}

// poPacket is packet i of channel ch: 1 to 32 KiB whose first five bytes
// name it and whose other bytes follow from it.
func poPacket(ch uint8, i int) []byte {
	h := uint32(i)*2654435761 ^ uint32(ch)*40503
	n := 1 + int(h%(32<<10))
	p := make([]byte, max(n, 5))
	p[0] = ch
	binary.BigEndian.PutUint32(p[1:], uint32(i))
	for j := 5; j < len(p); j++ {
		p[j] = byte(i*7 + j + int(ch))
	}
	return p
}

func newPorous(t *testing.T, cfg porous.Config) *porous.Session {
	t.Helper()
	s, err := porous.New(netsim.Epoch(), cfg)
	require.NoError(t, err)
	return s
}

// poTransfer is a simulation of POROUS session A sending total bytes of
// Reliable packets to B, round robin over its channels, fed while Send
// accepts them.
type poTransfer struct {
	t         *testing.T
	sim       *netsim.Sim
	a, b      *porous.Session
	chans     int
	total     int64
	sentBytes int64
	recvBytes int64
	next      []int // next packet index to send, per channel
	got       []int // next packet index expected, per channel
	ready     []byte
	readyCh   uint8
	rr        int
	bad       int // deliveries out of order or corrupt
	start     time.Time
	doneAt    time.Time
}

func newPOTransfer(t *testing.T, seed uint64, total int64, chans int, link netsim.LinkConfig, cfg porous.Config) *poTransfer {
	x := &poTransfer{t: t, chans: chans, total: total, next: make([]int, chans), got: make([]int, chans)}
	cfg.Channels = chans
	cfg.Nonce = poNonceA
	x.a = newPorous(t, cfg)
	cfg.Nonce = poNonceB
	x.b = newPorous(t, cfg)
	x.sim = netsim.New(seed, x.a, x.b, link, link)
	x.sim.OnDeliver(netsim.B, func(m engine.Message) {
		ch := int(m.Channel)
		if ch >= chans || !bytes.Equal(m.Data, poPacket(m.Channel, x.got[ch])) {
			x.bad++
			return
		}
		x.got[ch]++
		x.recvBytes += int64(len(m.Data))
	})
	return x
}

// step feeds A and reports whether everything was delivered and confirmed.
func (x *poTransfer) step() bool {
	if x.start.IsZero() && x.a.State() == engine.StateEstablished {
		x.start = x.sim.Now()
	}
	for x.sentBytes < x.total {
		if x.ready == nil {
			ch := uint8(x.rr % x.chans)
			x.rr++
			x.ready, x.readyCh = poPacket(ch, x.next[ch]), ch
		}
		if err := x.a.Send(x.ready, engine.SendOptions{Channel: x.readyCh}); err != nil {
			require.ErrorIs(x.t, err, engine.ErrQueueFull)
			break
		}
		x.next[x.readyCh]++
		x.sentBytes += int64(len(x.ready))
		x.ready = nil
	}
	done := x.sentBytes == x.total || x.sentBytes > x.total
	done = done && x.recvBytes == x.sentBytes && x.a.Pending() == 0
	if done && x.doneAt.IsZero() {
		x.doneAt = x.sim.Now()
	}
	return done
}

// goodput is the application bytes delivered per second of virtual time
// since the handshake completed.
func (x *poTransfer) goodput() float64 {
	return float64(x.recvBytes) / x.doneAt.Sub(x.start).Seconds()
}

// closeBoth closes A gracefully and runs until both ends are closed.
func (x *poTransfer) closeBoth() {
	x.a.Close(x.sim.Now())
	require.NoError(x.t, x.sim.RunUntil(func() bool {
		return x.a.State() == engine.StateClosed && x.b.State() == engine.StateClosed
	}, time.Minute))
	assert.NoError(x.t, x.a.Err())
	assert.NoError(x.t, x.b.Err())
}

func (x *poTransfer) check() {
	t := x.t
	assert.Zero(t, x.bad, "deliveries out of order or corrupt")
	for ch := range x.chans {
		assert.Equal(t, x.next[ch], x.got[ch], "channel %d: every packet once, in order", ch)
	}
	assert.Equal(t, x.sentBytes, x.recvBytes)
	assert.Zero(t, x.a.Pending())
	assert.NoError(t, x.a.Err())
	assert.NoError(t, x.b.Err())
}

func (x *poTransfer) log(name string, real time.Duration) {
	st := x.sim.Stats()
	as, bs := x.a.Stats(), x.b.Stats()
	x.t.Logf("%s: %.1f MiB in %v virtual (%v real), goodput %.2f MB/s, %d steps",
		name, float64(x.recvBytes)/(1<<20), x.doneAt.Sub(x.start).Round(time.Millisecond), real.Round(time.Millisecond), x.goodput()/1e6, st.Steps)
	x.t.Logf("%s: A sent %d frames, %d resent (%.1f%%), srtt %v rto %v; B sent %d frames; duplicates at B %d",
		name, as.PacketsSent, as.Retransmits, 100*float64(as.Retransmits)/float64(max(as.PacketsSent, 1)), as.SRTT, as.RTO, bs.PacketsSent, bs.Duplicates)
	x.t.Logf("%s: A→B %+v", name, st.A.Out)
	x.t.Logf("%s: B→A %+v", name, st.B.Out)
}

// TestPorousBulk: Reliable packets on two channels through lossy,
// jittery, reordering, duplicating links arrive exactly once and in
// order per channel, and the close is graceful.
func TestPorousBulk(t *testing.T) {
	size := poBulkSize()
	impaired := func(loss float64) netsim.LinkConfig {
		return netsim.LinkConfig{
			Loss: loss, Delay: 15 * time.Millisecond, Jitter: 5 * time.Millisecond,
			Reorder: 0.02, ReorderDelay: 10 * time.Millisecond, Duplicate: 0.01,
		}
	}
	for _, tc := range []struct {
		name  string
		seed  uint64
		loss  float64
		limit time.Duration
	}{
		{"loss0", 1, 0, time.Hour},
		{"loss2", 2, 0.02, 2 * time.Hour},
		{"loss10", 3, 0.10, 4 * time.Hour},
		{"loss30", 4, 0.30, 48 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			x := newPOTransfer(t, tc.seed, size, 2, impaired(tc.loss), porous.Config{})
			err := x.sim.RunUntil(x.step, tc.limit)
			x.log(fmt.Sprintf("%s seed %d", tc.name, tc.seed), time.Since(start))
			require.NoError(t, err)
			x.check()
			x.closeBoth()
		})
	}
}

// TestPorousRateLimited: through a 1 MB/s bottleneck with a few packets
// of tail-drop queue and 20 ms of delay, the congestion window keeps the
// link busy (goodput at least 80 % of its rate) without persistent loss.
func TestPorousRateLimited(t *testing.T) {
	const rate = 1_000_000
	link := netsim.LinkConfig{Delay: 20 * time.Millisecond, Rate: rate, QueueLimit: 6 * porous.MaxFrameSize}
	const size = 16 << 20
	start := time.Now()
	x := newPOTransfer(t, 5, size, 2, link, porous.Config{})
	require.NoError(t, x.sim.RunUntil(x.step, time.Hour))
	x.log("rate 1 MB/s", time.Since(start))
	x.check()
	st := x.sim.Stats().A.Out
	drop := float64(st.QueueDropped) / float64(st.Sent)
	t.Logf("goodput %.1f%% of the link rate; %.2f%% of A's datagrams tail-dropped", 100*x.goodput()/rate, 100*drop)
	assert.GreaterOrEqual(t, x.goodput(), 0.8*rate)
	assert.Less(t, drop, 0.05, "loss is not persistent")
	x.closeBoth()
}

// TestPorousUnreliableNoStall: with half of all datagrams lost, a Low
// priority channel of Unreliable packets keeps delivering later packets,
// in order and at most once, while Reliable packets on a High channel all
// arrive. Without a delay limit some of every stretch of the Unreliable
// packets arrives; with the default limit (100 ms) every one that arrives
// left within it, so it arrives within it plus the path's delay, and the
// others are counted as expired.
func TestPorousUnreliableNoStall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{{"no limit", -1}, {"default limit", 0}} {
		t.Run(tc.name, func(t *testing.T) { unreliableNoStall(t, tc.delay) })
	}
}

func unreliableNoStall(t *testing.T, maxDelay time.Duration) {
	link := netsim.LinkConfig{Loss: 0.5, Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond}
	a := newPorous(t, porous.Config{Nonce: poNonceA, Channels: 2, Priorities: []porous.Priority{porous.Low, porous.High}, MaxUnreliableDelay: maxDelay})
	b := newPorous(t, porous.Config{Nonce: poNonceB, Channels: 2})
	sim := netsim.New(6, a, b, link, link)
	const nUnrel, nRel = 100_000, 300
	const perMS = 20 // Unreliable packets offered per millisecond
	var unrelGot []int
	sentAt := make([]time.Time, nUnrel) // when Send took Unreliable packet i
	relGot := 0
	bad, late := 0, 0
	sim.OnDeliver(netsim.B, func(m engine.Message) {
		i := int(binary.BigEndian.Uint32(m.Data[1:]))
		switch {
		case m.Channel == 0 && len(m.Data) == 5 && (len(unrelGot) == 0 || i > unrelGot[len(unrelGot)-1]):
			unrelGot = append(unrelGot, i)
			// The link takes at most 12 ms; the next Poll after Send may
			// come a millisecond later.
			if maxDelay == 0 && sim.Now().Sub(sentAt[i]) > porous.DefaultMaxUnreliableDelay+13*time.Millisecond {
				late++
			}
		case m.Channel == 1 && i == relGot && bytes.Equal(m.Data, poPacket(1, i)):
			relGot++
		default:
			bad++
		}
	})
	sentU, sentR := 0, 0
	start := time.Now()
	err := sim.RunUntil(func() bool {
		for sentR < nRel && a.Send(poPacket(1, sentR), engine.SendOptions{Channel: 1}) == nil {
			sentR++
		}
		for want := min(nUnrel, int(sim.Now().Sub(netsim.Epoch())/time.Millisecond)*perMS); sentU < want; sentU++ {
			p := make([]byte, 5)
			binary.BigEndian.PutUint32(p[1:], uint32(sentU))
			if a.Send(p, engine.SendOptions{Channel: 0, Delivery: engine.Unreliable}) != nil {
				break
			}
			sentAt[sentU] = sim.Now()
		}
		return sentU == nUnrel && relGot == nRel && a.Pending() == 0
	}, time.Hour)
	st := sim.Stats()
	t.Logf("50%% loss: %v virtual (%v real); unreliable %d of %d delivered (last %d), %d expired; reliable %d of %d; A %+v",
		st.Elapsed, time.Since(start).Round(time.Millisecond), len(unrelGot), nUnrel, unrelGot[len(unrelGot)-1], a.Stats().Expired, relGot, nRel, a.Stats())
	require.NoError(t, err)
	assert.Zero(t, bad)
	assert.Equal(t, nRel, relGot, "reliable packets on the other channel all arrive")
	assert.Greater(t, len(unrelGot), nUnrel/10)
	assert.Greater(t, unrelGot[len(unrelGot)-1], nUnrel-nUnrel/20, "later unreliable packets keep arriving")
	if maxDelay == 0 {
		assert.Zero(t, late, "unreliable packets delivered later than the limit allows")
		assert.NotZero(t, a.Stats().Expired)
		return
	}
	assert.Zero(t, a.Stats().Expired)
	// Every stretch of 10 % of the unreliable packets got some through.
	for k := range 10 {
		lo, hi := k*nUnrel/10, (k+1)*nUnrel/10
		n := 0
		for _, i := range unrelGot {
			if i >= lo && i < hi {
				n++
			}
		}
		assert.NotZero(t, n, "unreliable packets %d..%d", lo, hi)
	}
}

// TestPorousDeterministic: the same seed gives the same run.
func TestPorousDeterministic(t *testing.T) {
	link := netsim.LinkConfig{
		Loss: 0.1, Delay: 15 * time.Millisecond, Jitter: 5 * time.Millisecond,
		Reorder: 0.02, ReorderDelay: 10 * time.Millisecond, Duplicate: 0.01,
	}
	run := func() (netsim.Stats, [2]engine.Stats) {
		x := newPOTransfer(t, 9, 2<<20, 2, link, porous.Config{})
		require.NoError(t, x.sim.RunUntil(x.step, time.Hour))
		x.check()
		return x.sim.Stats(), [2]engine.Stats{x.a.Stats(), x.b.Stats()}
	}
	sim1, eng1 := run()
	sim2, eng2 := run()
	assert.Equal(t, sim1, sim2)
	assert.Equal(t, eng1, eng2)
	t.Logf("%v virtual, %d steps, A %+v", sim1.Elapsed, sim1.Steps, eng1[0])
}
