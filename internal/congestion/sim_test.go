package congestion_test

import (
	"math/rand/v2"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
)

// A packet-level simulation of flows driven by Controllers through one
// shared drop-tail bottleneck, on virtual time. Each flow always has data
// to send; the receiver acknowledges every datagram at once, and each
// acknowledgement also covers the 63 datagrams before it (a bitmap), so a
// lost acknowledgement is covered by the next. Loss is detected as the
// engines do: RACK from the controller, and an RTO for the oldest
// datagram in flight.

const simMSS = 1400

var simEpoch = time.Unix(1_000_000, 0)

// pathConfig describes the path every flow shares.
type pathConfig struct {
	Rate     int64         // bottleneck, bytes/s
	Queue    int           // drop-tail queue, bytes
	Delay    time.Duration // one-way propagation delay
	Loss     float64       // random loss of data datagrams, after the bottleneck
	AckLoss  float64       // random loss of acknowledgements
	Duration time.Duration
}

type simEvent struct {
	at   time.Time
	seq  uint64 // tie-break: events at one instant in scheduling order
	kind uint8
	flow uint8
	num  uint64 // datagram number; for an ack, the newest acknowledged
	bits uint64 // ack: bit i set when datagram num-1-i was received too
}

const (
	evArrive = iota // datagram reaches the receiver
	evAck           // acknowledgement reaches the sender
	evWake          // sender timer
	evMark          // record every flow's delivered bytes
)

// fifo holds events in time order: arrivals and acknowledgements over a
// FIFO link with a fixed delay are scheduled in the order they happen.
type fifo struct {
	ev   []simEvent
	head int
}

func (q *fifo) push(e simEvent)  { q.ev = append(q.ev, e) }
func (q *fifo) empty() bool      { return q.head == len(q.ev) }
func (q *fifo) front() *simEvent { return &q.ev[q.head] }
func (q *fifo) pop() simEvent {
	e := q.ev[q.head]
	q.head++
	if q.head == len(q.ev) {
		q.ev, q.head = q.ev[:0], 0
	} else if q.head > 4096 && q.head*2 > len(q.ev) {
		q.ev = q.ev[:copy(q.ev, q.ev[q.head:])]
		q.head = 0
	}
	return e
}

type simPacket struct {
	cc   congestion.Packet
	done bool // acknowledged or declared lost
}

type simFlow struct {
	cc      *congestion.Controller
	rtt     *engine.RTT
	start   time.Time
	pkts    []simPacket // datagrams base, base+1, ...: the oldest unresolved first
	base    uint64
	next    uint64
	wakeAt  time.Time
	wakeSeq uint64
	// receiver
	newest uint64 // newest datagram received + 1
	seen   uint64 // bit i: datagram newest-1-i received

	delivered int64 // bytes acknowledged
	sent      int64
	lost      int64
	marks     []int64 // delivered bytes at each second
}

// sim runs flows over one path.
type sim struct {
	path   pathConfig
	rng    *rand.Rand
	now    time.Time
	arrive fifo // datagrams reaching receivers
	acks   fifo // acknowledgements reaching senders
	markAt time.Time
	n      uint64
	flows  []*simFlow
	linkAt time.Time // when the bottleneck finishes what it holds
	drops  int64     // datagrams dropped at the queue
	sentN  int64     // datagrams offered to the bottleneck
}

func newSim(seed uint64, path pathConfig) *sim {
	return &sim{path: path, rng: rand.New(rand.NewPCG(seed, 7)), now: simEpoch, linkAt: simEpoch}
}

func (s *sim) add(e simEvent) {
	s.n++
	e.seq = s.n
	switch e.kind {
	case evArrive:
		s.arrive.push(e)
	case evAck:
		s.acks.push(e)
	case evWake:
		f := s.flows[e.flow]
		f.wakeAt, f.wakeSeq = e.at, e.seq
	}
}

// next removes and returns the earliest event: the head of a queue or a
// flow's timer, ties going to the one scheduled first.
func (s *sim) next() simEvent {
	best := simEvent{at: s.markAt, kind: evMark}
	better := func(e *simEvent) bool {
		return e.at.Before(best.at) || e.at.Equal(best.at) && e.seq < best.seq
	}
	src := 0
	if !s.arrive.empty() && better(s.arrive.front()) {
		best, src = *s.arrive.front(), 1
	}
	if !s.acks.empty() && better(s.acks.front()) {
		best, src = *s.acks.front(), 2
	}
	for i, f := range s.flows {
		if e := (simEvent{at: f.wakeAt, seq: f.wakeSeq, kind: evWake, flow: uint8(i)}); !f.wakeAt.IsZero() && better(&e) {
			best, src = e, 3
		}
	}
	switch src {
	case 1:
		s.arrive.pop()
	case 2:
		s.acks.pop()
	case 3:
		s.flows[best.flow].wakeAt = time.Time{}
	}
	return best
}

// addFlow starts a flow at offset from the start.
func (s *sim) addFlow(alg congestion.Algorithm, offset time.Duration) *simFlow {
	f := &simFlow{
		cc:    congestion.New(simEpoch.Add(offset), congestion.Config{Algorithm: alg, MaxDatagram: simMSS}),
		rtt:   engine.NewRTT(time.Second, 10*time.Millisecond, 10*time.Second),
		start: simEpoch.Add(offset),
	}
	s.flows = append(s.flows, f)
	s.add(simEvent{at: f.start, kind: evWake, flow: uint8(len(s.flows) - 1)})
	return f
}

func (s *sim) run() {
	end := simEpoch.Add(s.path.Duration)
	s.markAt = simEpoch
	for {
		e := s.next()
		if e.at.After(end) {
			return
		}
		s.now = e.at
		if e.kind == evMark {
			for _, g := range s.flows {
				g.marks = append(g.marks, g.delivered)
			}
			s.markAt = s.now.Add(time.Second)
			continue
		}
		f := s.flows[e.flow]
		switch e.kind {
		case evArrive:
			s.receive(e.flow, f, e.num)
		case evAck:
			s.acked(f, e.num, e.bits)
			s.send(e.flow, f)
		case evWake:
			s.timeouts(f)
			s.send(e.flow, f)
		}
	}
}

// packet returns datagram num if it is still unresolved.
func (f *simFlow) packet(num uint64) *simPacket {
	if num < f.base || num >= f.next {
		return nil
	}
	p := &f.pkts[num-f.base]
	if p.done {
		return nil
	}
	return p
}

// trim drops resolved datagrams from the front.
func (f *simFlow) trim() {
	k := 0
	for k < len(f.pkts) && f.pkts[k].done {
		k++
	}
	if k > 0 {
		f.pkts = f.pkts[k:]
		f.base += uint64(k)
	}
}

// send lets the flow send while its controller allows, then arms its
// timer for the pacer or the next loss deadline.
func (s *sim) send(i uint8, f *simFlow) {
	for f.cc.CanSend(s.now, simMSS) {
		f.pkts = append(f.pkts, simPacket{})
		f.cc.OnSent(s.now, &f.pkts[len(f.pkts)-1].cc, simMSS, false)
		f.sent += simMSS
		s.transmit(i, f.next)
		f.next++
	}
	var at time.Time
	if t := f.cc.NextSend(s.now, simMSS); !t.IsZero() {
		at = t
	}
	if t, ok := s.lossAt(f); ok && (at.IsZero() || t.Before(at)) {
		at = t
	}
	if !at.IsZero() && (f.wakeAt.IsZero() || at.Before(f.wakeAt)) {
		s.add(simEvent{at: at, kind: evWake, flow: i})
	}
}

// transmit puts a datagram on the bottleneck.
func (s *sim) transmit(i uint8, num uint64) {
	s.sentN++
	if s.linkAt.Before(s.now) {
		s.linkAt = s.now
	}
	backlog := int64(s.linkAt.Sub(s.now)) * s.path.Rate / int64(time.Second)
	if backlog+simMSS > int64(s.path.Queue) && s.linkAt.After(s.now) {
		s.drops++
		return
	}
	s.linkAt = s.linkAt.Add(time.Duration(int64(simMSS) * int64(time.Second) / s.path.Rate))
	if s.rng.Float64() < s.path.Loss {
		return
	}
	s.add(simEvent{at: s.linkAt.Add(s.path.Delay), kind: evArrive, flow: i, num: num})
}

func (s *sim) receive(i uint8, f *simFlow, num uint64) {
	switch {
	case num >= f.newest:
		f.seen = f.seen<<min(num+1-f.newest, 63) | 1<<min(num-f.newest, 62)
		if num+1-f.newest > 63 {
			f.seen = 0
		}
		f.newest = num + 1
	case f.newest-1-num < 64:
		f.seen |= 1 << (f.newest - 2 - num)
	}
	if s.rng.Float64() < s.path.AckLoss {
		return
	}
	s.add(simEvent{at: s.now.Add(s.path.Delay), kind: evAck, flow: i, num: f.newest - 1, bits: f.seen})
}

func (s *sim) acked(f *simFlow, newest, bits uint64) {
	var sample time.Duration
	if p := f.packet(newest); p != nil {
		sample = s.now.Sub(p.cc.SentAt)
		s.ack(f, p)
	}
	for k := uint64(0); k < 63 && k < newest; k++ {
		if bits&(1<<k) != 0 {
			if p := f.packet(newest - 1 - k); p != nil {
				s.ack(f, p)
			}
		}
	}
	if sample > 0 {
		f.rtt.Sample(sample)
	}
	s.detect(f)
	f.cc.Update(s.now, congestion.RTT{Latest: sample, Smoothed: f.rtt.SRTT(), RTO: f.rtt.RTO()})
}

func (s *sim) ack(f *simFlow, p *simPacket) {
	p.done = true
	f.cc.OnAcked(s.now, &p.cc)
	f.delivered += simMSS
}

// detect declares lost what RACK or the RTO shows lost, oldest first,
// stopping at the first datagram that is not (deadlines grow with send
// order).
func (s *sim) detect(f *simFlow) {
	for i := range f.pkts {
		p := &f.pkts[i]
		if p.done {
			continue
		}
		lost := !s.now.Before(p.cc.SentAt.Add(f.rtt.RTO()))
		if !lost {
			at, ok := f.cc.LostAt(&p.cc, f.rtt.SRTT())
			lost = ok && !s.now.Before(at)
		}
		if !lost {
			break
		}
		p.done = true
		f.cc.OnLost(s.now, &p.cc, trace.LossTimeout)
		f.lost += simMSS
	}
	f.trim()
}

func (s *sim) timeouts(f *simFlow) {
	s.detect(f)
	if f.cc.Update(s.now, congestion.RTT{Smoothed: f.rtt.SRTT(), RTO: f.rtt.RTO()}) {
		f.rtt.Backoff()
	}
}

// lossAt is when detect next finds something: the oldest datagram's RTO
// or RACK time.
func (s *sim) lossAt(f *simFlow) (time.Time, bool) {
	f.trim()
	if len(f.pkts) == 0 {
		return time.Time{}, false
	}
	p := &f.pkts[0]
	at := p.cc.SentAt.Add(f.rtt.RTO())
	if r, ok := f.cc.LostAt(&p.cc, f.rtt.SRTT()); ok && r.Before(at) {
		at = r
	}
	return at, true
}

// goodput is a flow's delivered bytes per second since its start.
func (s *sim) goodput(f *simFlow) float64 {
	return float64(f.delivered) / s.now.Sub(f.start).Seconds()
}

// dropRate is the share of datagrams dropped at the bottleneck queue.
func (s *sim) dropRate() float64 {
	if s.sentN == 0 {
		return 0
	}
	return float64(s.drops) / float64(s.sentN)
}

// between is a flow's goodput between seconds a and b of the run, from
// the marks taken every second.
func (f *simFlow) between(a, b int) float64 {
	return float64(f.marks[b]-f.marks[a]) / float64(b-a)
}
