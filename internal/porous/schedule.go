package porous

import (
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// SendOrder is how a session picks the channel whose message goes into a
// frame next, among the channels of the highest priority that have
// something to send. It is local to the sender: the wire format lets the
// receiver deliver each channel on its own whatever the order.
type SendOrder uint8

const (
	// RoundRobin (the default) serves the channels by deficit round robin
	// (Shreedhar and Varghese, 1995): in turn, each may send up to its
	// weight (Config.Weights) times MaxFrameSize bytes before the next
	// one's turn, so a small message on one channel never waits behind
	// the queue of another, and small messages of several channels share
	// a frame.
	RoundRobin SendOrder = iota
	// Arrival sends messages in the order Send queued them, whatever their
	// channel, as the reference does (one queue per priority).
	Arrival
)

// nextItem returns the channel and queue item the next message comes
// from, or nil: the channels of Low priority only when no High channel
// has anything to send (docs/protocols/porous.md §3.3). With RoundRobin
// it advances the round until a channel whose deficit covers its front
// item is first in line; calling it again without taking returns the same
// item. Unreliable packets that waited longer than
// Config.MaxUnreliableDelay at the front of their channel are dropped on
// the way (see expire).
//
// Within a priority, a channel that becomes active goes first for one
// quantum, ahead of the channels already in line, as the new flows of
// FQ-CoDel do (RFC 8290 §4.2): a small message on a quiet channel leaves
// in the next frame, which may leave ahead of the pacer (see writeData).
// Its quantum spent, or its queue empty, it joins the back of the line;
// it is taken out only once its turn there finds it empty, so a channel
// that keeps emptying and refilling goes first at most once per round
// and the busy channels are never starved.
func (s *Session) nextItem() (*txChannel, *qItem) {
	for prio := range s.active {
		if c, it := s.nextFresh(Priority(prio)); c != nil {
			return c, it
		}
		act := &s.active[prio]
		for act.Len() > 0 {
			c := &s.txch[*act.Front()]
			s.expire(c)
			if c.q.Len() == 0 {
				act.Pop()
				c.listed, c.deficit = false, 0
				continue
			}
			it := c.q.Front()
			if s.cfg.SendOrder == Arrival || c.deficit >= it.size() {
				return c, it
			}
			// Its turn is over: the next channel's turn, with this one's
			// quantum renewed for its next turn.
			c.deficit += c.quantum
			act.Pop()
			act.Push(c.id)
		}
	}
	return nil, nil
}

// nextFresh returns the front item of the first channel of priority
// prio that became active and still has deficit for it, moving those
// whose quantum is spent or whose queue is empty to the back of the line
// (see nextItem).
func (s *Session) nextFresh(prio Priority) (*txChannel, *qItem) {
	fr := &s.newly[prio]
	for fr.Len() > 0 {
		c := &s.txch[*fr.Front()]
		s.expire(c)
		if c.q.Len() > 0 && c.deficit >= c.q.Front().size() {
			return c, c.q.Front()
		}
		fr.Pop()
		c.fresh = false
		if c.q.Len() > 0 {
			c.deficit += c.quantum
		}
		s.active[prio].Push(c.id)
	}
	return nil, nil
}

// push queues it on its channel and puts the channel in line: a channel
// not in line yet goes first (see nextItem).
func (s *Session) push(it qItem) {
	c := &s.txch[it.ch]
	c.q.Push(it)
	switch {
	case s.cfg.SendOrder == Arrival:
		s.active[c.prio].Push(c.id) // one entry per item: the order of arrival
	case !c.listed:
		c.listed, c.fresh = true, true
		c.deficit = c.quantum
		s.newly[c.prio].Push(c.id)
	}
}

// taken accounts for the message just taken from c's front item it, of n
// bytes on the wire; done reports that the item is finished and popped.
func (s *Session) taken(c *txChannel, n int, done bool) {
	if s.cfg.SendOrder == Arrival {
		if done {
			s.active[c.prio].Pop()
		}
		return
	}
	c.deficit -= n
}

// expire drops the Unreliable packets at the front of c that have waited
// longer than Config.MaxUnreliableDelay without any fragment sent: sent
// late, they are no use (a position update, a voice frame). A Sentinel
// queued after one still goes, so that the receiver skips its number.
func (s *Session) expire(c *txChannel) {
	if s.cfg.MaxUnreliableDelay < 0 {
		return
	}
	for c.q.Len() > 0 {
		it := c.q.Front()
		p := it.pkt
		if it.kind != MsgFragment || p.reliable || it.frag > 0 ||
			p.queuedAt.IsZero() || s.now.Sub(p.queuedAt) <= s.cfg.MaxUnreliableDelay {
			return
		}
		c.q.Pop()
		c.unsent -= len(p.data)
		s.Counters.Expired++
		if s.cfg.SendOrder == Arrival {
			s.active[c.prio].Pop()
		}
		s.release(p)
	}
}

// stamp gives the packets queued since the last Poll their queueing time:
// Send has no clock, and the caller polls right after it.
func (s *Session) stamp(now time.Time) {
	for i, p := range s.unstamped {
		p.queuedAt = now
		s.unstamped[i] = nil
	}
	s.unstamped = s.unstamped[:0]
}

// channelRoom is how many more unsent bytes channel ch may hold under
// RoundRobin: up to a congestion window (at least engine.MinSendRoom), so
// that a message queued behind them leaves within about a round trip,
// whatever the other channels hold. Send refuses a packet once the
// channel is at the bound; one packet may overshoot it.
func (s *Session) channelRoom(ch uint8) int {
	return max(0, max(s.cc.Window(), engine.MinSendRoom)-s.txch[ch].unsent)
}
