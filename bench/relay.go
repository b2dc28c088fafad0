// Package bench holds rudp's comparative benchmarks (see README.md) and
// the impairing relay they measure paths with.
package bench

import (
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Path describes one direction of an emulated path. The zero value
// forwards datagrams at once, untouched.
type Path struct {
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Loss is the probability, in [0, 1], that a datagram is lost after
	// the bottleneck.
	Loss float64
	// Rate is the bottleneck's rate in bytes per second; 0 means none.
	Rate int64
	// Queue is the bottleneck's drop-tail queue in bytes: a datagram that
	// would take the bytes waiting above it is dropped.
	Queue int
	// Reorder is the probability that a datagram is held back by
	// ReorderDelay more, so that later ones overtake it.
	Reorder      float64
	ReorderDelay time.Duration
}

// RelayStats are a relay's counters, for one direction.
type RelayStats struct {
	Datagrams uint64 // datagrams offered to the bottleneck
	Dropped   uint64 // dropped at its queue
	Lost      uint64 // lost at random
	TooLarge  uint64 // dropped for exceeding MaxDatagram
	Bytes     uint64 // bytes delivered
}

// MaxDatagram is the largest datagram a relay forwards, in bytes: what a
// 1500-byte IPv4 path carries unfragmented. Larger ones are dropped, as
// such a path drops them when fragmenting is not allowed; one longer
// than the relay's 2048-byte read buffer counts as 2048 bytes long.
const MaxDatagram = 1500 - 20 - 8

// Relay is a UDP relay on 127.0.0.1 that emulates a path between the
// clients that send to it and one server: each direction goes through a
// bottleneck with a drop-tail queue, random loss and a delay line. Each
// client address gets its own socket towards the server, so the server
// sees one peer per client; all clients share the bottleneck.
type Relay struct {
	ln       *net.UDPConn
	server   *net.UDPAddr
	up, down *line // client→server and server→client
	mu       sync.Mutex
	clients  map[string]*client
	closed   atomic.Bool
	wg       sync.WaitGroup
}

type client struct {
	addr *net.UDPAddr
	conn *net.UDPConn // connected to the server
}

// NewRelay starts a relay to server; up and down describe the
// client→server and server→client directions; seed makes the losses
// repeatable.
func NewRelay(server *net.UDPAddr, up, down Path, seed uint64) (*Relay, error) {
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	_ = ln.SetReadBuffer(8 << 20)
	_ = ln.SetWriteBuffer(8 << 20)
	r := &Relay{ln: ln, server: server, clients: map[string]*client{}}
	r.up = newLine(up, rand.New(rand.NewPCG(seed, 1)))
	r.down = newLine(down, rand.New(rand.NewPCG(seed, 2)))
	r.wg.Add(3)
	go r.readClients()
	go r.up.run(&r.wg)
	go r.down.run(&r.wg)
	return r, nil
}

// Addr is where clients send.
func (r *Relay) Addr() *net.UDPAddr { return r.ln.LocalAddr().(*net.UDPAddr) }

// Stats returns the counters of the client→server and server→client
// directions.
func (r *Relay) Stats() (up, down RelayStats) { return r.up.stats(), r.down.stats() }

// Close stops the relay and waits for its goroutines.
func (r *Relay) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	err := r.ln.Close()
	r.mu.Lock()
	for _, c := range r.clients {
		c.conn.Close()
	}
	r.mu.Unlock()
	r.up.close()
	r.down.close()
	r.wg.Wait()
	return err
}

func (r *Relay) readClients() {
	defer r.wg.Done()
	for {
		b := getBuf()
		n, from, err := r.ln.ReadFromUDP(b[:])
		if err != nil {
			putBuf(b)
			if r.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		c, err := r.client(from)
		if err != nil {
			putBuf(b)
			continue
		}
		r.up.offer(b, n, func(p []byte) { _, _ = c.conn.Write(p) })
	}
}

// client returns the upstream socket of from, opening it on first use.
func (r *Relay) client(from *net.UDPAddr) (*client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.clients[from.String()]; c != nil {
		return c, nil
	}
	conn, err := net.DialUDP("udp", nil, r.server)
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadBuffer(8 << 20)
	_ = conn.SetWriteBuffer(8 << 20)
	c := &client{addr: from, conn: conn}
	r.clients[from.String()] = c
	r.wg.Add(1)
	go r.readServer(c)
	return c, nil
}

func (r *Relay) readServer(c *client) {
	defer r.wg.Done()
	for {
		b := getBuf()
		n, err := c.conn.Read(b[:])
		if err != nil {
			putBuf(b)
			if r.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		r.down.offer(b, n, func(p []byte) { _, _ = r.ln.WriteToUDP(p, c.addr) })
	}
}

// line is one direction: bottleneck, loss, delay line. offer runs in the
// readers' goroutines (serialised by mu); run delivers.
type line struct {
	p      Path
	mu     sync.Mutex
	rng    *rand.Rand
	free   time.Time // when the bottleneck has sent what it holds
	q      []pending // delay line, in delivery order
	held   []pending // reordered datagrams, in delivery order
	wake   chan struct{}
	done   chan struct{}
	st     RelayStats
	closed bool
}

type pending struct {
	at   time.Time
	b    *[2048]byte
	n    int
	send func([]byte)
}

func newLine(p Path, rng *rand.Rand) *line {
	return &line{p: p, rng: rng, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (l *line) offer(b *[2048]byte, n int, send func([]byte)) {
	now := time.Now()
	l.mu.Lock()
	if n > MaxDatagram {
		l.st.TooLarge++
		l.mu.Unlock()
		putBuf(b)
		return
	}
	l.st.Datagrams++
	at := now
	if l.p.Rate > 0 {
		if l.free.Before(now) {
			l.free = now
		}
		backlog := int64(l.free.Sub(now)) * l.p.Rate / int64(time.Second)
		if l.free.After(now) && backlog+int64(n) > int64(l.p.Queue) {
			l.st.Dropped++
			l.mu.Unlock()
			putBuf(b)
			return
		}
		l.free = l.free.Add(time.Duration(int64(n) * int64(time.Second) / l.p.Rate))
		at = l.free
	}
	if l.rng.Float64() < l.p.Loss {
		l.st.Lost++
		l.mu.Unlock()
		putBuf(b)
		return
	}
	e := pending{at: at.Add(l.p.Delay), b: b, n: n, send: send}
	if l.p.Reorder > 0 && l.rng.Float64() < l.p.Reorder {
		e.at = e.at.Add(l.p.ReorderDelay)
		l.held = append(l.held, e) // delays are equal: still in order
	} else {
		l.q = append(l.q, e)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run delivers datagrams when they are due.
func (l *line) run(wg *sync.WaitGroup) {
	defer wg.Done()
	var batch []pending
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		batch = batch[:0]
		var next time.Time
		for _, q := range []*[]pending{&l.q, &l.held} {
			k := 0
			for k < len(*q) && !(*q)[k].at.After(now) {
				k++
			}
			batch = append(batch, (*q)[:k]...)
			*q = (*q)[:copy(*q, (*q)[k:])]
			if len(*q) > 0 && (next.IsZero() || (*q)[0].at.Before(next)) {
				next = (*q)[0].at
			}
		}
		for _, e := range batch {
			l.st.Bytes += uint64(e.n)
		}
		l.mu.Unlock()
		for _, e := range batch {
			e.send(e.b[:e.n])
			putBuf(e.b)
		}
		if len(batch) > 0 {
			continue
		}
		d := time.Hour
		if !next.IsZero() {
			d = max(time.Until(next), 0)
		}
		t.Reset(d)
		select {
		case <-t.C:
		case <-l.wake:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		case <-l.done:
			return
		}
	}
}

func (l *line) stats() RelayStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

func (l *line) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	l.mu.Unlock()
}

var bufs = sync.Pool{New: func() any { return new([2048]byte) }}

func getBuf() *[2048]byte  { return bufs.Get().(*[2048]byte) }
func putBuf(b *[2048]byte) { bufs.Put(b) }
