package netsim

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"time"
)

// DefaultQueueLimit is the QueueLimit used when Rate > 0 and QueueLimit is
// zero: 64 KiB.
const DefaultQueueLimit = 64 << 10

// LinkConfig describes one direction of a path. The zero value is a
// perfect link: no loss, no delay, unlimited rate.
type LinkConfig struct {
	// Loss is the probability, in [0, 1], that a datagram is lost.
	Loss float64
	// Delay is the one-way base delay.
	Delay time.Duration
	// Jitter is the largest extra delay: each datagram gets a uniform extra
	// delay in [0, Jitter].
	Jitter time.Duration
	// Reorder is the probability, in [0, 1], that a datagram is held back
	// by an extra ReorderDelay, so that later datagrams overtake it.
	Reorder float64
	// ReorderDelay is the extra delay of a reordered datagram.
	ReorderDelay time.Duration
	// Duplicate is the probability, in [0, 1], that a datagram is
	// delivered twice.
	Duplicate float64
	// Rate is the serialisation rate in bytes per second; 0 is unlimited.
	Rate int64
	// QueueLimit is how many bytes not yet serialised the rate limiter may
	// hold, counting what remains of the datagram being serialised; a
	// datagram that does not fit is tail-dropped, unless the line is idle.
	// Ignored when Rate is 0; 0 means DefaultQueueLimit.
	QueueLimit int
	// MTU is the largest datagram carried, in bytes; larger ones are
	// dropped. 0 is unlimited.
	MTU int
}

// Validate reports the first field out of range: a probability outside
// [0, 1] (or NaN), or a negative duration, rate, queue limit or MTU.
func (c LinkConfig) Validate() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"Loss", c.Loss}, {"Reorder", c.Reorder}, {"Duplicate", c.Duplicate}} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("netsim: LinkConfig.%s = %v, want a probability in [0, 1]", p.name, p.v)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Delay", c.Delay}, {"Jitter", c.Jitter}, {"ReorderDelay", c.ReorderDelay}} {
		if d.v < 0 {
			return fmt.Errorf("netsim: LinkConfig.%s = %v, want >= 0", d.name, d.v)
		}
	}
	if c.Jitter == math.MaxInt64 {
		return errors.New("netsim: LinkConfig.Jitter too large")
	}
	if c.Rate < 0 || c.QueueLimit < 0 || c.MTU < 0 {
		return fmt.Errorf("netsim: LinkConfig Rate %d, QueueLimit %d, MTU %d: want >= 0", c.Rate, c.QueueLimit, c.MTU)
	}
	return nil
}

// LinkStats are a link's counters. Counters only grow. Once a link is
// drained, Delivered == Sent - MTUDropped - QueueDropped - Lost + Duplicated.
type LinkStats struct {
	Sent         uint64 // datagrams given to Send
	Delivered    uint64 // datagrams returned by Receive, duplicates included
	Lost         uint64 // datagrams lost at random (Loss)
	Duplicated   uint64 // datagrams scheduled for delivery twice
	Reordered    uint64 // datagrams held back by ReorderDelay
	QueueDropped uint64 // datagrams tail-dropped by the rate limiter's queue
	MTUDropped   uint64 // datagrams longer than MTU
	Bytes        uint64 // bytes returned by Receive, duplicates included
}

// Link is one direction of a simulated path. It is not safe for concurrent
// use.
//
// Memory: a link holds the datagrams in flight. With Rate > 0 that is at
// most QueueLimit bytes waiting plus what Rate lets through in
// Delay+Jitter+ReorderDelay. With Rate == 0 it holds whatever the sender
// sends within Delay+Jitter+ReorderDelay, with no other bound.
type Link struct {
	cfg  LinkConfig
	rng  *rand.Rand
	busy time.Time // when the rate limiter finishes what it has queued
	seq  uint64
	q    arrivals
	st   LinkStats
}

// NewLink returns a link with configuration cfg drawing its randomness from
// rng, which the link then owns. It panics if cfg is invalid (see
// [LinkConfig.Validate]) or rng is nil.
func NewLink(cfg LinkConfig, rng *rand.Rand) *Link {
	if rng == nil {
		panic("netsim: NewLink with a nil *rand.Rand")
	}
	l := &Link{rng: rng}
	l.SetConfig(cfg)
	return l
}

// Config returns the link's configuration, with defaults applied.
func (l *Link) Config() LinkConfig { return l.cfg }

// SetConfig changes the configuration for datagrams sent from now on;
// datagrams already in flight keep their delivery time. It panics if cfg
// is invalid.
func (l *Link) SetConfig(cfg LinkConfig) {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if cfg.Rate > 0 && cfg.QueueLimit == 0 {
		cfg.QueueLimit = DefaultQueueLimit
	}
	l.cfg = cfg
}

// Send puts a copy of p on the link at now. Calls must not go back in
// time.
func (l *Link) Send(now time.Time, p []byte) {
	l.st.Sent++
	c := &l.cfg
	if c.MTU > 0 && len(p) > c.MTU {
		l.st.MTUDropped++
		return
	}
	left := now
	if c.Rate > 0 {
		start := now
		if l.busy.After(now) {
			start = l.busy
			if waiting := l.bytesFor(l.busy.Sub(now)); waiting+int64(len(p)) > int64(c.QueueLimit) {
				l.st.QueueDropped++
				return
			}
		}
		l.busy = start.Add(l.serialisation(len(p)))
		left = l.busy
	}
	// Always the same draws, so that one setting does not shift the others.
	lost := l.rng.Float64() < c.Loss
	jitter := l.jitter()
	reorder := l.rng.Float64() < c.Reorder
	dup := l.rng.Float64() < c.Duplicate
	dupJitter := l.jitter()
	if lost {
		l.st.Lost++
		return
	}
	at := left.Add(c.Delay + jitter)
	if reorder {
		at = at.Add(c.ReorderDelay)
		l.st.Reordered++
	}
	l.enqueue(at, p)
	if dup {
		l.st.Duplicated++
		l.enqueue(left.Add(c.Delay+dupJitter), p)
	}
}

// jitter draws a uniform duration in [0, Jitter].
func (l *Link) jitter() time.Duration {
	return time.Duration(l.rng.Int64N(int64(l.cfg.Jitter) + 1))
}

// serialisation is how long n bytes take at Rate, rounded up to 1 ns.
func (l *Link) serialisation(n int) time.Duration {
	return time.Duration(mulDivCeil(uint64(n), uint64(time.Second), uint64(l.cfg.Rate)))
}

// bytesFor is how many bytes Rate serialises in d, rounded up.
func (l *Link) bytesFor(d time.Duration) int64 {
	return int64(mulDivCeil(uint64(d), uint64(l.cfg.Rate), uint64(time.Second)))
}

// mulDivCeil is ceil(a*b/c) without overflow, saturated at math.MaxInt64.
func mulDivCeil(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, c)
	if r != 0 {
		q++
	}
	return min(q, math.MaxInt64)
}

func (l *Link) enqueue(at time.Time, p []byte) {
	l.q.push(arrival{at: at, seq: l.seq, p: append([]byte(nil), p...)})
	l.seq++
}

// Receive removes and returns the next datagram due at or before now, in
// order of due time, then of sending; ok is false when none is due. The
// caller owns the returned slice.
func (l *Link) Receive(now time.Time) (p []byte, ok bool) {
	if len(l.q) == 0 || l.q[0].at.After(now) {
		return nil, false
	}
	a := l.q.pop()
	l.st.Delivered++
	l.st.Bytes += uint64(len(a.p))
	return a.p, true
}

// NextDelivery is when the next datagram in flight is due; ok is false
// when nothing is in flight.
func (l *Link) NextDelivery() (t time.Time, ok bool) {
	if len(l.q) == 0 {
		return time.Time{}, false
	}
	return l.q[0].at, true
}

// InFlight is the number of datagrams in flight, duplicates included.
func (l *Link) InFlight() int { return len(l.q) }

// Stats returns a snapshot of the counters.
func (l *Link) Stats() LinkStats { return l.st }
