package congestion_test

import (
	"container/heap"
	"math/rand/v2"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
)

// A packet-level simulation of flows driven by Controllers through one
// shared drop-tail bottleneck, on virtual time. Each flow always has data
// to send; the receiver acknowledges every datagram at once, and each
// acknowledgement also lists the 16 datagrams received before it, so a
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
	kind int
	flow int
	pkt  uint64   // datagram number
	acks []uint64 // acknowledgement: datagrams acknowledged
}

const (
	evArrive = iota // datagram reaches the receiver
	evAck           // acknowledgement reaches the sender
	evWake          // sender timer
	evMark          // record every flow's delivered bytes
)

type eventQueue []*simEvent

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int)               { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)                 { *q = append(*q, x.(*simEvent)) }
func (q *eventQueue) Pop() any                   { o := *q; x := o[len(o)-1]; *q = o[:len(o)-1]; return x }
func (q *eventQueue) add(e *simEvent, n *uint64) { *n++; e.seq = *n; heap.Push(q, e) }

type simPacket struct {
	num uint64
	cc  congestion.Packet
}

type simFlow struct {
	cc       *congestion.Controller
	rtt      *engine.RTT
	start    time.Time
	next     uint64
	inflight []*simPacket // send order
	byNum    map[uint64]*simPacket
	recvd    []uint64 // receiver: the last datagrams received, for acks
	wakeAt   time.Time

	delivered int64 // bytes acknowledged
	sent      int64
	lost      int64
	// delivered bytes at sample times, for per-interval shares
	marks []int64
}

// sim runs flows over one path.
type sim struct {
	path   pathConfig
	rng    *rand.Rand
	now    time.Time
	q      eventQueue
	n      uint64
	flows  []*simFlow
	linkAt time.Time // when the bottleneck finishes what it holds
	drops  int64     // datagrams dropped at the queue
	sentN  int64     // datagrams offered to the bottleneck
}

func newSim(seed uint64, path pathConfig) *sim {
	return &sim{path: path, rng: rand.New(rand.NewPCG(seed, 7)), now: simEpoch, linkAt: simEpoch}
}

// addFlow starts a flow at offset from the start.
func (s *sim) addFlow(alg congestion.Algorithm, offset time.Duration) *simFlow {
	f := &simFlow{
		cc:    congestion.New(simEpoch.Add(offset), congestion.Config{Algorithm: alg, MaxDatagram: simMSS}),
		rtt:   engine.NewRTT(time.Second, 10*time.Millisecond, 10*time.Second),
		start: simEpoch.Add(offset),
		byNum: map[uint64]*simPacket{},
	}
	s.flows = append(s.flows, f)
	s.q.add(&simEvent{at: f.start, kind: evWake, flow: len(s.flows) - 1}, &s.n)
	return f
}

func (s *sim) run() {
	end := simEpoch.Add(s.path.Duration)
	s.q.add(&simEvent{at: simEpoch, kind: evMark}, &s.n)
	for s.q.Len() > 0 {
		e := heap.Pop(&s.q).(*simEvent)
		if e.at.After(end) {
			break
		}
		s.now = e.at
		f := s.flows[e.flow]
		if e.kind == evMark {
			f = nil
		}
		switch e.kind {
		case evArrive:
			s.arrive(e.flow, f, e.pkt)
		case evAck:
			s.acked(f, e.acks)
			s.send(e.flow, f)
		case evMark:
			for _, g := range s.flows {
				g.marks = append(g.marks, g.delivered)
			}
			s.q.add(&simEvent{at: s.now.Add(time.Second), kind: evMark}, &s.n)
		case evWake:
			if !e.at.Equal(f.wakeAt) && !f.wakeAt.IsZero() && e.at.Before(f.wakeAt) {
				continue // superseded
			}
			f.wakeAt = time.Time{}
			s.timeouts(f)
			s.send(e.flow, f)
		}
	}
}

// send lets the flow send while its controller allows, then arms its
// timer for the pacer or the next loss deadline.
func (s *sim) send(i int, f *simFlow) {
	for f.cc.CanSend(s.now, simMSS) {
		p := &simPacket{num: f.next}
		f.next++
		f.cc.OnSent(s.now, &p.cc, simMSS, false)
		f.inflight = append(f.inflight, p)
		f.byNum[p.num] = p
		f.sent += simMSS
		s.transmit(i, p.num)
	}
	var at time.Time
	if t := f.cc.NextSend(s.now, simMSS); !t.IsZero() {
		at = t
	}
	if t, ok := s.lossAt(f); ok && (at.IsZero() || t.Before(at)) {
		at = t
	}
	if !at.IsZero() && (f.wakeAt.IsZero() || at.Before(f.wakeAt)) {
		f.wakeAt = at
		s.q.add(&simEvent{at: at, kind: evWake, flow: i}, &s.n)
	}
}

// transmit puts a datagram on the bottleneck.
func (s *sim) transmit(i int, num uint64) {
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
	s.q.add(&simEvent{at: s.linkAt.Add(s.path.Delay), kind: evArrive, flow: i, pkt: num}, &s.n)
}

func (s *sim) arrive(i int, f *simFlow, num uint64) {
	f.recvd = append(f.recvd, num)
	if len(f.recvd) > 16 {
		f.recvd = f.recvd[len(f.recvd)-16:]
	}
	if s.rng.Float64() < s.path.AckLoss {
		return
	}
	s.q.add(&simEvent{at: s.now.Add(s.path.Delay), kind: evAck, flow: i, acks: append([]uint64(nil), f.recvd...)}, &s.n)
}

func (s *sim) acked(f *simFlow, acks []uint64) {
	var sample time.Duration
	for _, num := range acks {
		p := f.byNum[num]
		if p == nil {
			continue
		}
		delete(f.byNum, num)
		if p.cc.InFlight() && num == acks[len(acks)-1] {
			sample = s.now.Sub(p.cc.SentAt)
		}
		f.cc.OnAcked(s.now, &p.cc)
		f.delivered += simMSS
	}
	if sample > 0 {
		f.rtt.Sample(sample)
	}
	s.detect(f)
	f.cc.Update(s.now, congestion.RTT{Latest: sample, Smoothed: f.rtt.SRTT(), RTO: f.rtt.RTO()})
}

// detect declares lost what RACK or the RTO shows lost, oldest first,
// stopping at the first datagram that is not (deadlines grow with send
// order).
func (s *sim) detect(f *simFlow) {
	for len(f.inflight) > 0 {
		p := f.inflight[0]
		if _, live := f.byNum[p.num]; live {
			lost := !s.now.Before(p.cc.SentAt.Add(f.rtt.RTO()))
			if !lost {
				at, ok := f.cc.LostAt(&p.cc, f.rtt.SRTT())
				lost = ok && !s.now.Before(at)
			}
			if !lost {
				return
			}
			delete(f.byNum, p.num)
			f.cc.OnLost(s.now, &p.cc)
			f.lost += simMSS
		}
		f.inflight[0] = nil
		f.inflight = f.inflight[1:]
	}
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
	for len(f.inflight) > 0 {
		p := f.inflight[0]
		if _, live := f.byNum[p.num]; !live {
			f.inflight[0] = nil
			f.inflight = f.inflight[1:]
			continue
		}
		at := p.cc.SentAt.Add(f.rtt.RTO())
		if r, ok := f.cc.LostAt(&p.cc, f.rtt.SRTT()); ok && r.Before(at) {
			at = r
		}
		return at, true
	}
	return time.Time{}, false
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
