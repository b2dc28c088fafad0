// Package impair wraps a net.PacketConn so that the datagrams it sends are
// lost, duplicated, delayed and reordered, as on a poor network path. It is
// used by rudp's tests for real-socket runs on an impaired link and by
// rudpcat's --loss and --delay flags.
//
// Impairments apply to outgoing datagrams only (WriteTo); wrap both ends to
// impair both directions. Random choices come from a seeded generator, so
// the sequence of decisions is reproducible for a given seed, although the
// timing of real sockets is not.
package impair

import (
	"container/heap"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Config describes the impairments. The zero value impairs nothing.
type Config struct {
	// Loss is the probability, 0..1, that a datagram is dropped.
	Loss float64
	// Duplicate is the probability, 0..1, that a datagram is sent twice.
	Duplicate float64
	// Delay is added to every datagram before it is sent.
	Delay time.Duration
	// Jitter adds a uniform random 0..Jitter to each datagram's delay.
	// Datagrams closer together than Jitter overtake each other freely,
	// which on a fast sender reorders most of them; Reorder models the
	// occasional reordering of real paths instead.
	Jitter time.Duration
	// Reorder is the probability, 0..1, that a datagram is held back by an
	// extra ReorderDelay, so that the datagrams after it overtake it.
	Reorder float64
	// ReorderDelay is the extra delay of a reordered datagram.
	ReorderDelay time.Duration
	// Seed seeds the random decisions.
	Seed uint64
	// MaxDelayed bounds the datagrams waiting for their delay to pass;
	// beyond it datagrams are dropped as by a full router queue. Default 4096.
	MaxDelayed int
	// MaxDatagram, when positive, drops every datagram longer than it, in
	// bytes, as a path whose MTU it exceeds does.
	MaxDatagram int
}

// Conn is a net.PacketConn whose WriteTo applies Config. All other methods
// are the wrapped conn's. Delayed datagrams leave in the order of their
// due times (a fixed Delay keeps their order; Jitter and Reorder do not),
// sent by one goroutine that ends with Close.
type Conn struct {
	net.PacketConn
	cfg Config

	mu      sync.Mutex
	rng     *rand.Rand
	line    delayLine
	seq     uint64
	wake    chan struct{} // nudges the sender when an earlier datagram is due
	running bool
	closed  bool
	done    chan struct{} // closed when the sender goroutine ends
	stats   Stats
}

// Stats counts what the wrapper did, in datagrams. Counters only grow.
type Stats struct {
	Sent         uint64 // sent or queued for sending, duplicates included
	Dropped      uint64 // lost at random (Config.Loss)
	Duplicated   uint64 // sent twice (Config.Duplicate)
	Reordered    uint64 // held back by Config.ReorderDelay
	QueueDropped uint64 // dropped because Config.MaxDelayed were waiting
	TooLarge     uint64 // dropped for exceeding Config.MaxDatagram
}

// New wraps pc.
func New(pc net.PacketConn, cfg Config) *Conn {
	if cfg.MaxDelayed <= 0 {
		cfg.MaxDelayed = 4096
	}
	return &Conn{
		PacketConn: pc,
		cfg:        cfg,
		rng:        rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
}

// WriteTo sends p to addr subject to the impairments. It reports len(p)
// written whether the datagram was dropped or not, like a lossy network.
// Delayed datagrams are copied and sent later; errors from those late
// sends are ignored, like losses.
func (c *Conn) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.PacketConn.WriteTo(p, addr) // reports the closed conn's error
	}
	copies := 1
	if c.cfg.MaxDatagram > 0 && len(p) > c.cfg.MaxDatagram {
		copies = 0
		c.stats.TooLarge++
	} else if c.cfg.Loss > 0 && c.rng.Float64() < c.cfg.Loss {
		copies = 0
		c.stats.Dropped++
	} else if c.cfg.Duplicate > 0 && c.rng.Float64() < c.cfg.Duplicate {
		copies = 2
		c.stats.Duplicated++
	}
	now := time.Now()
	direct := 0
	for range copies {
		d := c.cfg.Delay
		if c.cfg.Jitter > 0 {
			d += time.Duration(c.rng.Int64N(int64(c.cfg.Jitter) + 1))
		}
		if c.cfg.Reorder > 0 && c.rng.Float64() < c.cfg.Reorder {
			d += c.cfg.ReorderDelay
			c.stats.Reordered++
		}
		if d <= 0 {
			direct++
			c.stats.Sent++
			continue
		}
		if c.line.Len() >= c.cfg.MaxDelayed {
			c.stats.QueueDropped++
			continue
		}
		c.seq++
		heap.Push(&c.line, delayed{due: now.Add(d), seq: c.seq, p: append([]byte(nil), p...), addr: addr})
		c.stats.Sent++
		if !c.running {
			c.running = true
			go c.sender()
		}
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()

	for range direct {
		if _, err := c.PacketConn.WriteTo(p, addr); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// sender sends delayed datagrams when they are due, earliest first.
func (c *Conn) sender() {
	defer close(c.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var due []delayed // reused: the datagrams due in one round
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		due = due[:0]
		now := time.Now()
		for c.line.Len() > 0 && !c.line[0].due.After(now) {
			due = append(due, heap.Pop(&c.line).(delayed))
		}
		wait := time.Hour
		if c.line.Len() > 0 {
			wait = c.line[0].due.Sub(now)
		}
		c.mu.Unlock()
		for _, d := range due {
			_, _ = c.PacketConn.WriteTo(d.p, d.addr)
		}
		clear(due) // keep no datagram reachable
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-c.wake:
		}
	}
}

// Close closes the wrapped conn; datagrams still delayed are discarded.
func (c *Conn) Close() error {
	c.mu.Lock()
	c.closed = true
	running := c.running
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	if running {
		<-c.done
	}
	return c.PacketConn.Close()
}

// Stats returns the counters.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// delayed is one datagram waiting in the delay line.
type delayed struct {
	due  time.Time
	seq  uint64 // ties keep the order of WriteTo
	p    []byte
	addr net.Addr
}

// delayLine is a min-heap of delayed datagrams by due time, then seq.
type delayLine []delayed

// Len, Less, Swap, Push and Pop implement heap.Interface.
func (h delayLine) Len() int { return len(h) }

// Less orders by due time, then by order of WriteTo.
func (h delayLine) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}

// Swap swaps two datagrams.
func (h delayLine) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push appends a datagram.
func (h *delayLine) Push(x any) { *h = append(*h, x.(delayed)) }

// Pop removes the last datagram.
func (h *delayLine) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
