package socket

import (
	"net"
	"sync"
)

// Outbox gathers the datagrams that the Peers of an unconnected socket
// have due after one read batch, whatever their destinations, and sends
// them with as few sendmmsg calls as it can: a listener that answers
// thirty peers after one recvmmsg makes one system call, not thirty.
//
// A Peer that queues datagrams stays locked (Hold) until the endpoint has
// sent them and calls Release, so that none of its later datagrams, sent
// by another goroutine, overtakes them. The endpoint's reader goroutine
// owns the Outbox.
type Outbox struct {
	sock   *Socket
	runs   []Run
	queued int // datagrams in runs
	held   []sync.Locker
	sc     Scratch
}

// Sender owns datagrams queued in an Outbox: Sent is called with their
// Run once they have gone, or failed (Run.Failed), so that it can take
// its buffers back (Run.Tag).
type Sender interface {
	Sent(r *Run)
}

// outboxSize is how many datagrams an Outbox sends at once, at most.
const outboxSize = 4 * SendBatch

// newOutbox returns an empty Outbox that sends on s. Its queue holds at
// most outboxSize datagrams, and it holds at most one Locker per Peer
// flushed after a read batch.
func newOutbox(s *Socket) *Outbox {
	return &Outbox{sock: s, sc: NewScratch(outboxSize)}
}

// Add queues bufs to to, owned by owner until it is told with Sent; tag
// is handed back in the Run. A queue that would go past outboxSize
// datagrams is sent first.
func (o *Outbox) Add(bufs [][]byte, to net.Addr, owner Sender, tag any) {
	if o.queued+len(bufs) > outboxSize {
		o.Flush()
	}
	o.runs = append(o.runs, Run{Bufs: bufs, To: to, Owner: owner, Tag: tag})
	o.queued += len(bufs)
}

// Hold keeps l locked until Release: its owner queued datagrams, or may.
func (o *Outbox) Hold(l sync.Locker) { o.held = append(o.held, l) }

// Flush sends what is queued and tells each owner.
func (o *Outbox) Flush() {
	if len(o.runs) == 0 {
		return
	}
	o.sock.SendRuns(&o.sc, o.runs)
	for i := range o.runs {
		o.runs[i].Owner.Sent(&o.runs[i])
		o.runs[i] = Run{}
	}
	o.runs, o.queued = o.runs[:0], 0
}

// Release sends what is queued, then unlocks every Locker held, in the
// order they were held.
func (o *Outbox) Release() {
	o.Flush()
	for i, l := range o.held {
		l.Unlock()
		o.held[i] = nil
	}
	o.held = o.held[:0]
}
