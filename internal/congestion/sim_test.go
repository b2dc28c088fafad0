package congestion_test

import (
	"container/heap"
	"math/rand/v2"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
)

// A packet-level simulation of flows driven by Controllers through one
// shared drop-tail bottleneck, on virtual time. Each flow always has data
// to send; the receiver acknowledges every datagram at once (optionally
// after a random jitter), and each acknowledgement also covers the 63
// datagrams before it (a bitmap), so a lost acknowledgement is covered by
// the next. Loss is detected as the engines do: RACK from the controller,
// and the retransmission timeout of Controller.TimeoutAt; an
// acknowledgement of a datagram already declared lost still counts as
// delivered and as a spurious loss (POROUS does so), so that a queue
// that delays datagrams past the RTO does not make a flow lose every one.

const simMSS = 1400

var simEpoch = time.Unix(1_000_000, 0)

// pathConfig describes the path every flow shares.
type pathConfig struct {
	Rate    int64         // bottleneck, bytes/s
	Queue   int           // drop-tail queue, bytes
	Delay   time.Duration // one-way propagation delay
	Loss    float64       // random loss of data datagrams, after the bottleneck
	AckLoss float64       // random loss of acknowledgements
	// Jitter, when positive, delays each acknowledgement by a further
	// random time in [0, Jitter): hosts do not answer at the same
	// instant, and without it flows that send when acknowledged fill
	// every slot a drop-tail queue frees before paced ones arrive, a
	// phase effect of the simulation (Floyd and Jacobson, "On Traffic
	// Phase Effects in Packet-Switched Gateways", 1992).
	Jitter   time.Duration
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

// simHeap holds events in time order, ties in scheduling order
// (container/heap).
type simHeap []simEvent

func (h simHeap) Len() int { return len(h) }
func (h simHeap) Less(i, j int) bool {
	return h[i].at.Before(h[j].at) || h[i].at.Equal(h[j].at) && h[i].seq < h[j].seq
}
func (h simHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *simHeap) Push(x any)   { *h = append(*h, x.(simEvent)) }
func (h *simHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type simPacket struct {
	cc    congestion.Packet
	acked bool
	lost  bool // declared lost (and not acknowledged since)
}

type simFlow struct {
	cc      *congestion.Controller
	rtt     *engine.RTT
	start   time.Time
	pkts    []simPacket // datagrams base, base+1, ...: the oldest not acknowledged first
	topAck  uint64      // newest datagram acknowledged + 1
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
	spurious  int64   // datagrams acknowledged after being declared lost
	marks     []int64 // delivered bytes at each second
}

// sim runs flows over one path.
type sim struct {
	path   pathConfig
	rng    *rand.Rand
	now    time.Time
	arrive fifo    // datagrams reaching receivers
	acks   fifo    // acknowledgements reaching senders
	late   simHeap // acknowledgements with jitter, reaching senders
	timers simHeap // flows' timers; those replaced since are left in, stale
	markAt time.Time
	n      uint64
	flows  []*simFlow
	linkAt time.Time // when the bottleneck finishes what it holds
	drops  int64     // datagrams dropped at the queue
	sentN  int64     // datagrams offered to the bottleneck
	// drops and datagrams offered at each mark (second)
	dropMarks, sentMarks []int64
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
		if s.path.Jitter > 0 {
			heap.Push(&s.late, e)
		} else {
			s.acks.push(e)
		}
	case evWake:
		f := s.flows[e.flow]
		f.wakeAt, f.wakeSeq = e.at, e.seq
		heap.Push(&s.timers, e) // the one it replaces, if any, is stale
	}
}

// earliest returns the earliest event, the head of a queue or a flow's
// timer, ties going to the one scheduled first, and where it is (src).
func (s *sim) earliest() (best simEvent, src int) {
	best = simEvent{at: s.markAt, kind: evMark}
	better := func(e *simEvent) bool {
		return e.at.Before(best.at) || e.at.Equal(best.at) && e.seq < best.seq
	}
	if !s.arrive.empty() && better(s.arrive.front()) {
		best, src = *s.arrive.front(), 1
	}
	if !s.acks.empty() && better(s.acks.front()) {
		best, src = *s.acks.front(), 2
	}
	if len(s.late) > 0 && better(&s.late[0]) {
		best, src = s.late[0], 4
	}
	for len(s.timers) > 0 {
		if e := &s.timers[0]; s.flows[e.flow].wakeSeq != e.seq || s.flows[e.flow].wakeAt.IsZero() {
			heap.Pop(&s.timers) // replaced or fired
			continue
		}
		if better(&s.timers[0]) {
			best, src = s.timers[0], 3
		}
		break
	}
	return best, src
}

// take removes best, found at src by earliest.
func (s *sim) take(best simEvent, src int) {
	switch src {
	case 1:
		s.arrive.pop()
	case 2:
		s.acks.pop()
	case 3:
		heap.Pop(&s.timers)
		s.flows[best.flow].wakeAt = time.Time{}
	case 4:
		heap.Pop(&s.late)
	}
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

func (s *sim) run() { s.runUntil(simEpoch.Add(s.path.Duration)) }

// runUntil runs the simulation up to end; it may be called again with a
// later end to go on.
func (s *sim) runUntil(end time.Time) {
	if s.markAt.IsZero() {
		s.markAt = simEpoch
	}
	for {
		e, src := s.earliest()
		if e.at.After(end) {
			return
		}
		s.take(e, src)
		s.now = e.at
		if e.kind == evMark {
			for _, g := range s.flows {
				g.marks = append(g.marks, g.delivered)
			}
			s.dropMarks = append(s.dropMarks, s.drops)
			s.sentMarks = append(s.sentMarks, s.sentN)
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

// packet returns datagram num if it is not yet acknowledged: unresolved,
// or declared lost but still within reach of an acknowledgement.
func (f *simFlow) packet(num uint64) *simPacket {
	if num < f.base || num >= f.next {
		return nil
	}
	p := &f.pkts[num-f.base]
	if p.acked {
		return nil
	}
	return p
}

// trim drops from the front the datagrams acknowledged, and those
// declared lost that no acknowledgement can cover any more (64 or more
// below the newest acknowledged).
func (f *simFlow) trim() {
	k := 0
	for k < len(f.pkts) && (f.pkts[k].acked || f.pkts[k].lost && f.base+uint64(k)+64 <= f.topAck) {
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
	d := s.path.Delay
	if s.path.Jitter > 0 {
		d += time.Duration(s.rng.Int64N(int64(s.path.Jitter)))
	}
	s.add(simEvent{at: s.now.Add(d), kind: evAck, flow: i, num: f.newest - 1, bits: f.seen})
}

func (s *sim) acked(f *simFlow, newest, bits uint64) {
	var sample time.Duration
	f.topAck = max(f.topAck, newest+1)
	if p := f.packet(newest); p != nil {
		if !p.lost {
			sample = s.now.Sub(p.cc.SentAt)
		}
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

// ack takes the acknowledgement of p. As the engines do, one of a
// datagram declared lost gives no RTT sample, counts as delivered and
// tells the controller the loss was spurious.
func (s *sim) ack(f *simFlow, p *simPacket) {
	if p.lost {
		f.cc.Spurious(s.now)
		f.spurious++
	}
	p.acked, p.lost = true, false
	f.cc.OnAcked(s.now, &p.cc)
	f.delivered += simMSS
}

// detect declares lost what RACK or the RTO shows lost, oldest first,
// stopping at the first datagram that is not (deadlines grow with send
// order).
func (s *sim) detect(f *simFlow) {
	for i := range f.pkts {
		p := &f.pkts[i]
		if p.acked || p.lost {
			continue
		}
		lost := !s.now.Before(f.cc.TimeoutAt(&p.cc, f.rtt.RTO()))
		if !lost {
			at, ok := f.cc.LostAt(&p.cc, f.rtt.SRTT())
			lost = ok && !s.now.Before(at)
		}
		if !lost {
			break
		}
		p.lost = true
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

// lossAt is when detect next finds something: the oldest unresolved
// datagram's RTO or RACK time.
func (s *sim) lossAt(f *simFlow) (time.Time, bool) {
	f.trim()
	i := 0
	for i < len(f.pkts) && (f.pkts[i].acked || f.pkts[i].lost) {
		i++
	}
	if i == len(f.pkts) {
		return time.Time{}, false
	}
	p := &f.pkts[i]
	at := f.cc.TimeoutAt(&p.cc, f.rtt.RTO())
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

// dropRateBetween is the share of datagrams dropped at the queue between
// seconds a and b of the run.
func (s *sim) dropRateBetween(a, b int) float64 {
	return float64(s.dropMarks[b]-s.dropMarks[a]) / float64(max(1, s.sentMarks[b]-s.sentMarks[a]))
}

// between is a flow's goodput between seconds a and b of the run, from
// the marks taken every second.
func (f *simFlow) between(a, b int) float64 {
	return float64(f.marks[b]-f.marks[a]) / float64(b-a)
}
