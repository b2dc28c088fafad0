package airhook

import (
	"sort"

	"github.com/rudpkit/rudp/internal/engine"
)

// MaxRecvQueue bounds the messages delivered and not yet taken by Recv.
// At the bound, as while SetRecvOpen(false) holds, a new packet carrying
// messages is taken as if it had come without them, as its header repeat
// does: what it confirms of our packets, its missed list and its sequence
// number are applied, and its messages are detected missed
// (docs/protocols/airhook.md §3.5, §3.6), so that our next packet reports
// them and the peer sends them again under new numbers. They count in
// Stats.Refused. Not confirming the packet instead would break the
// protocol's bookkeeping: the peer culls the missed entries it reported
// only once we confirm a packet that carried them, so entries we already
// acted on would linger and, once our message numbers wrap, name messages
// that did arrive. One packet may take the queue up to 255 messages past
// the bound.
const MaxRecvQueue = engine.MaxRecvQueue

// outMsg is one message accepted by Send and not yet confirmed.
type outMsg struct {
	data  []byte
	order uint64 // position in Send order
	sends int    // times put in a packet, each time under a new number
}

// outQueue holds the messages waiting for a message number, in Send order.
// A message the peer reports missed goes back to its place in that order,
// as in the reference, so it is resent before younger messages.
type outQueue struct {
	items []*outMsg
	head  int
}

func (q *outQueue) len() int { return len(q.items) - q.head }

// front returns the oldest queued message; the queue must not be empty.
func (q *outQueue) front() *outMsg { return q.items[q.head] }

// pop removes the oldest queued message.
func (q *outQueue) pop() {
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
}

// insert puts m at its place in Send order.
func (q *outQueue) insert(m *outMsg) {
	if q.head > 0 && len(q.items) == cap(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	live := q.items[q.head:]
	i := q.head + sort.Search(len(live), func(i int) bool { return live[i].order > m.order })
	q.items = append(q.items, nil)
	copy(q.items[i+1:], q.items[i:])
	q.items[i] = m
}
