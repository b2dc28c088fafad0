package netsim

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestLink(cfg LinkConfig, seed uint64) *Link {
	return NewLink(cfg, rand.New(rand.NewPCG(seed, seed^0x5eed)))
}

// numbered is a datagram of size bytes (at least 8) carrying i.
func numbered(i, size int) []byte {
	p := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(p, uint64(i))
	return p
}

func number(p []byte) int { return int(binary.BigEndian.Uint64(p)) }

type delivery struct {
	at time.Time
	n  int
}

// drain receives everything, moving time from one delivery to the next.
func drain(l *Link) []delivery {
	var out []delivery
	for {
		t, ok := l.NextDelivery()
		if !ok {
			return out
		}
		for p, ok := l.Receive(t); ok; p, ok = l.Receive(t) {
			out = append(out, delivery{t, number(p)})
		}
	}
}

// sendEvery sends n datagrams of size bytes, one every gap from Epoch, and
// returns the send time of each.
func sendEvery(l *Link, n, size int, gap time.Duration) []time.Time {
	sent := make([]time.Time, n)
	for i := range n {
		sent[i] = Epoch().Add(time.Duration(i) * gap)
		l.Send(sent[i], numbered(i, size))
	}
	return sent
}

func TestLinkPerfect(t *testing.T) {
	l := newTestLink(LinkConfig{}, 1)
	sendEvery(l, 100, 20, 0)
	got := drain(l)
	require.Len(t, got, 100)
	for i, d := range got {
		assert.Equal(t, Epoch(), d.at)
		assert.Equal(t, i, d.n, "ties are delivered in send order")
	}
	assert.Equal(t, LinkStats{Sent: 100, Delivered: 100, Bytes: 2000}, l.Stats())
}

func TestLinkLossRate(t *testing.T) {
	const n = 100_000
	p := make([]byte, 8)
	for seed := range uint64(3) {
		l := newTestLink(LinkConfig{Loss: 0.1}, seed)
		delivered := 0
		for range n {
			l.Send(Epoch(), p)
			if _, ok := l.Receive(Epoch()); ok {
				delivered++
			}
		}
		st := l.Stats()
		assert.InDelta(t, 0.1, float64(st.Lost)/n, 0.01, "seed %d", seed)
		assert.Equal(t, LinkStats{Sent: n, Lost: st.Lost, Delivered: n - st.Lost, Bytes: 8 * (n - st.Lost)}, st)
		assert.Equal(t, n-int(st.Lost), delivered)
	}
	l := newTestLink(LinkConfig{Loss: 1}, 1)
	sendEvery(l, 1000, 8, 0)
	assert.Empty(t, drain(l))
	assert.Equal(t, uint64(1000), l.Stats().Lost)
}

func impaired() LinkConfig {
	return LinkConfig{
		Loss: 0.2, Delay: 30 * time.Millisecond, Jitter: 15 * time.Millisecond,
		Reorder: 0.1, ReorderDelay: 40 * time.Millisecond, Duplicate: 0.05,
		Rate: 2_000_000, QueueLimit: 20_000,
	}
}

func TestLinkDeterministic(t *testing.T) {
	run := func(seed uint64) ([]delivery, LinkStats) {
		l := newTestLink(impaired(), seed)
		sendEvery(l, 5000, 700, 100*time.Microsecond)
		return drain(l), l.Stats()
	}
	d1, s1 := run(42)
	d2, s2 := run(42)
	require.Equal(t, d1, d2)
	require.Equal(t, s1, s2)
	assert.NotZero(t, s1.Lost)
	assert.NotZero(t, s1.Reordered)
	assert.NotZero(t, s1.Duplicated)
	assert.NotZero(t, s1.QueueDropped)
	assert.Equal(t, s1.Delivered, s1.Sent-s1.Lost-s1.QueueDropped-s1.MTUDropped+s1.Duplicated)
	d3, _ := run(43)
	assert.NotEqual(t, d1, d3, "another seed gives another run")
}

func TestLinkDrawsIndependentOfSettings(t *testing.T) {
	lost := func(cfg LinkConfig) []int {
		l := newTestLink(cfg, 7)
		sendEvery(l, 2000, 8, time.Millisecond)
		var got []int
		for _, d := range drain(l) {
			got = append(got, d.n)
		}
		return got
	}
	a := lost(LinkConfig{Loss: 0.3})
	b := lost(LinkConfig{Loss: 0.3, Delay: time.Millisecond, Jitter: 500 * time.Microsecond})
	assert.ElementsMatch(t, a, b, "jitter does not change which datagrams are lost")
}

func TestLinkDelayJitterBounds(t *testing.T) {
	const delay, jitter = 50 * time.Millisecond, 10 * time.Millisecond
	l := newTestLink(LinkConfig{Delay: delay, Jitter: jitter}, 3)
	sent := sendEvery(l, 10_000, 8, 100*time.Microsecond)
	got := drain(l)
	require.Len(t, got, len(sent))
	lo, hi := time.Duration(1<<62), time.Duration(0)
	for _, d := range got {
		lat := d.at.Sub(sent[d.n])
		lo, hi = min(lo, lat), max(hi, lat)
	}
	assert.GreaterOrEqual(t, lo, delay)
	assert.LessOrEqual(t, hi, delay+jitter)
	assert.Less(t, lo, delay+jitter/100, "jitter spans its range")
	assert.Greater(t, hi, delay+jitter*99/100, "jitter spans its range")
}

func TestLinkReorder(t *testing.T) {
	const delay, extra = 10 * time.Millisecond, 20 * time.Millisecond
	l := newTestLink(LinkConfig{Delay: delay, Reorder: 0.1, ReorderDelay: extra}, 4)
	sent := sendEvery(l, 10_000, 8, time.Millisecond)
	got := drain(l)
	require.Len(t, got, len(sent))
	late, overtaken, highest := 0, 0, -1
	for _, d := range got {
		switch lat := d.at.Sub(sent[d.n]); lat {
		case delay + extra:
			late++
		default:
			require.Equal(t, delay, lat)
		}
		if d.n < highest {
			overtaken++
		}
		highest = max(highest, d.n)
	}
	assert.Equal(t, int(l.Stats().Reordered), late)
	assert.InDelta(t, 0.1, float64(late)/float64(len(got)), 0.01)
	assert.Equal(t, late, overtaken, "with a 1 ms gap, every late datagram is overtaken")
}

func TestLinkDuplicate(t *testing.T) {
	l := newTestLink(LinkConfig{Duplicate: 0.2, Delay: time.Millisecond, Jitter: time.Millisecond}, 5)
	sendEvery(l, 10_000, 8, 0)
	count := make(map[int]int)
	for _, d := range drain(l) {
		count[d.n]++
	}
	require.Len(t, count, 10_000)
	twice := 0
	for _, c := range count {
		require.LessOrEqual(t, c, 2)
		if c == 2 {
			twice++
		}
	}
	st := l.Stats()
	assert.Equal(t, int(st.Duplicated), twice)
	assert.InDelta(t, 0.2, float64(twice)/10_000, 0.015)
	assert.Equal(t, uint64(10_000)+st.Duplicated, st.Delivered)
}

func TestLinkReceiveOwnsCopies(t *testing.T) {
	l := newTestLink(LinkConfig{Duplicate: 1}, 6)
	p := []byte("hello")
	l.Send(Epoch(), p)
	p[0] = 'j'
	a, ok := l.Receive(Epoch())
	require.True(t, ok)
	b, ok := l.Receive(Epoch())
	require.True(t, ok)
	a[1] = 'a'
	assert.Equal(t, "hallo", string(a))
	assert.Equal(t, "hello", string(b))
	_, ok = l.Receive(Epoch())
	assert.False(t, ok)
	assert.Zero(t, l.InFlight())
}

func TestLinkNotDueYet(t *testing.T) {
	l := newTestLink(LinkConfig{Delay: time.Second}, 1)
	l.Send(Epoch(), []byte{1})
	_, ok := l.Receive(Epoch().Add(time.Second - 1))
	assert.False(t, ok)
	at, ok := l.NextDelivery()
	assert.True(t, ok)
	assert.Equal(t, Epoch().Add(time.Second), at)
	assert.Equal(t, 1, l.InFlight())
}

func TestLinkRateSpacing(t *testing.T) {
	// 1,000,000 B/s: 1000 bytes take 1 ms, 1500 bytes 1.5 ms.
	l := newTestLink(LinkConfig{Rate: 1_000_000, QueueLimit: 1 << 20, Delay: 5 * time.Millisecond}, 1)
	l.Send(Epoch(), numbered(0, 1000))
	l.Send(Epoch(), numbered(1, 1500))
	l.Send(Epoch(), numbered(2, 1000))
	l.Send(Epoch().Add(10*time.Millisecond), numbered(3, 1000)) // line idle again
	ms := func(f float64) time.Time { return Epoch().Add(time.Duration(f * float64(time.Millisecond))) }
	assert.Equal(t, []delivery{{ms(6), 0}, {ms(7.5), 1}, {ms(8.5), 2}, {ms(16), 3}}, drain(l))

	// 3 bytes at 7 B/s: 428571428.57 ns, rounded up.
	l = newTestLink(LinkConfig{Rate: 7}, 1)
	l.Send(Epoch(), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	at, _ := l.NextDelivery()
	assert.Equal(t, Epoch().Add(1142857143), at)
}

func TestLinkQueueLimit(t *testing.T) {
	l := newTestLink(LinkConfig{Rate: 1_000_000, QueueLimit: 10_000}, 1)
	sendEvery(l, 20, 1000, 0)
	st := l.Stats()
	assert.Equal(t, uint64(10), st.QueueDropped, "10 × 1000 bytes fit, the rest are tail-dropped")
	assert.Equal(t, 10, l.InFlight())
	for i := range 6 { // after 5 ms, 5000 bytes are still waiting: room for 5
		l.Send(Epoch().Add(5*time.Millisecond), numbered(100+i, 1000))
	}
	assert.Equal(t, uint64(11), l.Stats().QueueDropped)
	got := drain(l)
	require.Len(t, got, 15)
	for i, d := range got {
		assert.Equal(t, Epoch().Add(time.Duration(i+1)*time.Millisecond), d.at)
	}
	for i, d := range got[10:] {
		assert.Equal(t, 100+i, d.n)
	}

	// A datagram finding the line idle is never dropped; the default limit
	// is 64 KiB.
	l = newTestLink(LinkConfig{Rate: 1000}, 1)
	assert.Equal(t, DefaultQueueLimit, l.Config().QueueLimit)
	l.Send(Epoch(), make([]byte, 100_000))
	l.Send(Epoch(), make([]byte, 1))
	assert.Equal(t, uint64(1), l.Stats().QueueDropped)
	assert.Equal(t, 1, l.InFlight())
}

func TestLinkMTU(t *testing.T) {
	l := newTestLink(LinkConfig{MTU: 1200}, 1)
	l.Send(Epoch(), make([]byte, 1200))
	l.Send(Epoch(), make([]byte, 1201))
	l.Send(Epoch(), make([]byte, 1))
	st := l.Stats()
	assert.Equal(t, uint64(1), st.MTUDropped)
	assert.Equal(t, 2, l.InFlight())
}

func TestLinkSetConfig(t *testing.T) {
	l := newTestLink(LinkConfig{Delay: time.Second}, 1)
	l.Send(Epoch(), numbered(0, 8))
	l.SetConfig(LinkConfig{Loss: 1})
	l.Send(Epoch(), numbered(1, 8))
	assert.Equal(t, []delivery{{Epoch().Add(time.Second), 0}}, drain(l), "in flight keeps its time")
	assert.Equal(t, uint64(1), l.Stats().Lost)
}

func TestLinkConfigValidate(t *testing.T) {
	assert.NoError(t, impaired().Validate())
	bad := []LinkConfig{
		{Loss: -0.1}, {Loss: 1.1}, {Reorder: 2}, {Duplicate: -1},
		{Delay: -1}, {Jitter: -1}, {ReorderDelay: -1}, {Jitter: 1<<63 - 1},
		{Rate: -1}, {QueueLimit: -1}, {MTU: -1},
	}
	for _, cfg := range bad {
		assert.Error(t, cfg.Validate(), "%+v", cfg)
		assert.Panics(t, func() { newTestLink(cfg, 1) }, "%+v", cfg)
	}
	nan := LinkConfig{Loss: float64(0)}
	nan.Loss /= nan.Loss
	assert.Error(t, nan.Validate())
	assert.Panics(t, func() { NewLink(LinkConfig{}, nil) })
}

func TestClock(t *testing.T) {
	c := NewClock()
	assert.Equal(t, time.Unix(1_000_000, 0).UTC(), c.Now())
	c.Advance(time.Second)
	c.AdvanceTo(c.Now().Add(time.Millisecond))
	assert.Equal(t, time.Second+time.Millisecond, c.Elapsed())
	assert.Panics(t, func() { c.Advance(-1) })
	assert.Panics(t, func() { c.AdvanceTo(Epoch()) })
}
