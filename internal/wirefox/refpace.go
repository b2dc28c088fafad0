package wirefox

import "time"

// The reference's sender (Config.ReferencePeer), iridinite/wirefox at
// 0897fcf: PacketQueue::ThreadWorker (source/PacketQueue.cpp) runs a
// write cycle per connection every THREAD_SLEEP_PACKETQUEUE_TICK (5 ms,
// include/wirefox/WirefoxConfig.h), and PacketQueue::DoWriteCycle writes
// the one datagram RemotePeer::GetNextDatagram builds (an ack-only
// datagram or one data datagram). New packets go out within the window of
// CongestionControlWindow (source/CongestionControlWindow.cpp).
const (
	// refTick is the reference's write cycle: at most one datagram per
	// connection per cycle.
	refTick = 5 * time.Millisecond
	// refWindowInit is the initial window and the window after a NAK:
	// cfg::MTU (CongestionControlWindow's constructor and
	// NotifyReceivedNakGroup).
	refWindowInit = MTU
	// refSsthresh is the initial slow-start threshold
	// (CONGESTION_WINDOW_SSTHRESH); after a NAK it is half the window, at
	// least refMinSsthresh.
	refSsthresh    = 65536
	refMinSsthresh = 2 * MTU
	// refExpiry times the average RTT is how long a datagram counts as in
	// flight unless acknowledged (CongestionControl::Update).
	refExpiry = 16
	// maxRefFlight bounds the datagrams counted in flight; beyond it the
	// oldest is taken as expired.
	maxRefFlight = 4096
	// refLinger is the reference's default linger after its
	// DISCONNECT_REQUEST (Peer::Disconnect's default argument,
	// include/wirefox/PeerAbstract.h): once it runs out the reference drops
	// the connection, and its worker thread returns
	// (PacketQueue::ThreadWorker; docs/protocols/wirefox.md §4 bug 8).
	refLinger = 200 * time.Millisecond
	// refDataGap is the least time from any datagram to the next data
	// datagram: half a cycle off the reference's worker timer. Each
	// datagram the reference reads wakes its worker
	// (PacketQueue::OnReadFinished signals m_updateNotify), which then
	// sleeps refTick (ThreadWorker's WaitFor): a data datagram refTick
	// after the previous one would arrive as that timer fires, when the
	// worker builds its ack-only datagram (CongestionControl::MakeAckList
	// under remote.lock) while the socket thread appends this datagram's
	// ID to the same list without the lock
	// (CongestionControl::NotifyReceivedDatagram), a data race that
	// crashes the reference.
	refDataGap = refTick + refTick/2
)

// refPacer is the reference's sender model: a datagram every refTick at
// most, and its congestion window over the bytes it counts in flight.
type refPacer struct {
	next     time.Time // the earliest next datagram
	dataNext time.Time // the earliest next data datagram (refDataGap)
	window   int
	ssthresh int
	inflight int         // bytes of the datagrams in recs not acknowledged
	recs     []flightRec // datagrams sent, by ID, from recs[head]
	head     int
}

// flightRec is a connected datagram counted in flight.
type flightRec struct {
	id     uint32
	bytes  int // 0 once acknowledged
	sentAt time.Time
}

// sent counts connected datagram id of n bytes sent at now: every one,
// ack-only ones included, as CongestionControl::NotifySendingBytes from
// PacketQueue::DoWriteCycle. Out-of-band datagrams (id < 0) only take the
// cycle: the reference sends them from its out-of-band slot.
func (p *refPacer) sent(now time.Time, id int64, n int) {
	p.next = now.Add(refTick)
	p.dataNext = now.Add(refDataGap)
	if id < 0 {
		return
	}
	if len(p.recs)-p.head >= maxRefFlight {
		p.pop()
	}
	p.recs = append(p.recs, flightRec{id: uint32(id), bytes: n, sentAt: now})
	p.inflight += n
}

// pop forgets the oldest record.
func (p *refPacer) pop() {
	p.inflight -= p.recs[p.head].bytes
	p.head++
	if p.head > len(p.recs)/2 {
		p.recs = p.recs[:copy(p.recs, p.recs[p.head:])]
		p.head = 0
	}
}

// acked applies the peer's ACK of datagram id: it leaves the flight, and
// the window grows whether or not it was still counted, as
// CongestionControlWindow::NotifyReceivedAck does: by MTU while the
// window is at most ssthresh, else by MTU²/window + MTU/8.
func (p *refPacer) acked(id uint32) {
	if p.head < len(p.recs) {
		if i := int(int32(id - p.recs[p.head].id)); i >= 0 && i < len(p.recs)-p.head {
			r := &p.recs[p.head+i]
			p.inflight -= r.bytes
			r.bytes = 0
		}
	}
	if p.window <= p.ssthresh {
		p.window += MTU
	} else {
		p.window += MTU*MTU/p.window + MTU/8
	}
}

// naked applies a datagram from the peer carrying NAKs
// (CongestionControlWindow::NotifyReceivedNakGroup, once per datagram,
// from RemotePeer::HandleNonAcknowledgements).
func (p *refPacer) naked() {
	p.ssthresh = max(p.window/2, refMinSsthresh)
	p.window = refWindowInit
}

// expire drops the records acknowledged or older than refExpiry times
// avg at now (avg 0, before any RTT sample, expires them all).
func (p *refPacer) expire(now time.Time, avg time.Duration) {
	for p.head < len(p.recs) {
		r := p.recs[p.head]
		if r.bytes != 0 && now.Before(r.sentAt.Add(refExpiry*avg)) {
			return
		}
		p.pop()
	}
}

// expiresAt returns when the oldest record counted in flight expires.
func (p *refPacer) expiresAt(avg time.Duration) (time.Time, bool) {
	if p.head == len(p.recs) {
		return time.Time{}, false
	}
	return p.recs[p.head].sentAt.Add(refExpiry * avg), true
}

// room is the bytes of new packets the window allows now.
func (p *refPacer) room() int { return max(p.window-p.inflight, 0) }
