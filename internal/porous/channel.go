package porous

import (
	"math/bits"

	"github.com/rudpkit/rudp/internal/engine"
)

// Sequencing-layer constants (notes §3.5, §3.6, §6).
const (
	// ChannelWindow is N_Q: the send and receive windows of a channel, in
	// packets.
	ChannelWindow = 1 << 16
	// WindowAckSpacing is M: WindowAcks and Unreliable-packet Sentinels
	// are sent for packet_seq ≡ M − 1 (mod M) (notes §2 row 3).
	WindowAckSpacing = 2048
	// maxPooled bounds the recycled packet buffers; buffers above
	// maxPooledSize are not recycled.
	maxPooled     = 256
	maxPooledSize = 64 << 10
)

// outPacket is a packet accepted by Send and not yet confirmed.
type outPacket struct {
	data     []byte
	seq      uint32 // packet_seq
	lead     uint16 // dependent_lead
	last     uint16 // last fragment ID
	ch       uint8
	reliable bool // Reliable or Passive: its fragments are reliable messages
	sentinel bool // Unreliable with seq ≡ 2047 (mod 2048): a Sentinel follows
	left     int  // fragments not yet acknowledged (reliable) or sent (unreliable)
}

// fragment returns the data of fragment i (notes §1.2).
func (p *outPacket) fragment(i int) []byte {
	lo := min(i*FragmentSize, len(p.data))
	return p.data[lo:min(lo+FragmentSize, len(p.data))]
}

// lastFragment is the last fragment ID of an n-byte packet.
func lastFragment(n int) uint16 {
	if n == 0 {
		return 0
	}
	return uint16((n - 1) / FragmentSize)
}

// qItem is an entry of a priority queue: the fragments of a packet not yet
// taken (from frag on), a Sentinel, or a channel's pending WindowAck.
type qItem struct {
	pkt  *outPacket
	frag int
	seq  uint32
	lead uint16
	kind MessageType
	ch   uint8
}

// size is the encoded size of the item's next message.
func (it *qItem) size(s *Session) int {
	switch it.kind {
	case MsgFragment:
		return FragmentHeaderSize + len(it.pkt.fragment(it.frag))
	case MsgSentinel:
		return SentinelSize
	}
	return WindowAckSize
}

// take removes the next message of it, the front of q, and reports whether
// it is reliable.
func (s *Session) take(q *engine.FIFO[qItem], it *qItem) (sentMsg, bool) {
	m := sentMsg{kind: it.kind, ch: it.ch, seq: it.seq, lead: it.lead}
	switch it.kind {
	case MsgFragment:
		p := it.pkt
		m.pkt, m.frag = p, uint16(it.frag)
		if it.frag == int(p.last) {
			s.stats.MessagesSent++
			q.Pop()
		} else {
			it.frag++
		}
		return m, p.reliable
	case MsgWindowAck:
		c := &s.txch[it.ch]
		m.seq, c.wackQueued = c.wackSeq, false
	}
	q.Pop()
	return m, true
}

// txChannel is the sending side of a channel (notes §3.5).
type txChannel struct {
	waiting    engine.FIFO[*outPacket] // beyond the send window, in order
	next       uint32                  // next packet_seq
	lastRel    uint32                  // packet_seq of the last Reliable packet
	base       uint32                  // send window base, moved by WindowAcks
	wackSeq    uint32                  // newest WindowAck to send
	prio       Priority
	hasRel     bool
	wackQueued bool
}

// queuePacket numbers a copy of p as the next packet of channel ch and
// queues it, or holds it while it is beyond the send window.
func (s *Session) queuePacket(data []byte, ch uint8, mode engine.Delivery) {
	c := &s.txch[ch]
	p := s.newPacket(len(data))
	copy(p.data, data)
	p.ch, p.seq = ch, c.next
	c.next = (c.next + 1) & seqMask24
	p.lead = 0
	if c.hasRel {
		if d := (p.seq - c.lastRel) & seqMask24; d < ChannelWindow {
			p.lead = uint16(d)
		} else {
			c.hasRel = false
		}
	}
	if mode == engine.Reliable {
		c.lastRel, c.hasRel = p.seq, true
	}
	p.reliable = mode != engine.Unreliable
	p.sentinel = mode == engine.Unreliable && p.seq%WindowAckSpacing == WindowAckSpacing-1
	p.last = lastFragment(len(data))
	p.left = int(p.last) + 1
	s.pending++
	s.pendBytes += len(data)
	if c.waiting.Len() == 0 && (p.seq-c.base)&seqMask24 < ChannelWindow {
		s.enqueue(p)
	} else {
		c.waiting.Push(p)
	}
}

// enqueue puts the messages of p in its channel's priority queue: its
// fragments, then its Sentinel if it has one.
func (s *Session) enqueue(p *outPacket) {
	q := &s.queues[s.txch[p.ch].prio]
	q.Push(qItem{kind: MsgFragment, ch: p.ch, pkt: p})
	if p.sentinel {
		q.Push(qItem{kind: MsgSentinel, ch: p.ch, seq: p.seq, lead: p.lead})
	}
}

// onWindowAck moves the send window to m + 1 if that is at most one
// window ahead (notes §3.5) and releases the packets now inside it.
func (c *txChannel) onWindowAck(s *Session, m uint32) {
	nb := (m + 1) & seqMask24
	if (nb-c.base)&seqMask24 > ChannelWindow {
		return
	}
	c.base = nb
	for c.waiting.Len() > 0 {
		p := *c.waiting.Front()
		if (p.seq-c.base)&seqMask24 >= ChannelWindow {
			return
		}
		c.waiting.Pop()
		s.enqueue(p)
	}
}

// queueWindowAck makes channel ch send WindowAck(m), replacing one not
// yet sent (notes §3.6).
func (s *Session) queueWindowAck(ch uint8, m uint32) {
	c := &s.txch[ch]
	c.wackSeq = m
	if !c.wackQueued {
		c.wackQueued = true
		s.queues[c.prio].Push(qItem{kind: MsgWindowAck, ch: ch})
	}
}

// newPacket returns a packet with an n-byte data buffer, recycled when
// possible.
func (s *Session) newPacket(n int) *outPacket {
	if k := len(s.free); k > 0 {
		p := s.free[k-1]
		s.free = s.free[:k-1]
		if cap(p.data) >= n {
			p.data = p.data[:n]
			return p
		}
		p.data = make([]byte, n)
		return p
	}
	return &outPacket{data: make([]byte, n)}
}

// release accounts for a packet that is confirmed and recycles it.
func (s *Session) release(p *outPacket) {
	s.pending--
	s.pendBytes -= len(p.data)
	if len(s.free) < maxPooled && cap(p.data) <= maxPooledSize {
		*p = outPacket{data: p.data[:0]}
		s.free = append(s.free, p)
	}
}

// rxEntry is a packet of a channel's receive queue (notes §3.6).
type rxEntry struct {
	buf      []byte   // reassembly buffer; nil before the first fragment and for duds
	bits     []uint64 // fragments received, when more than 64
	bit0     uint64   // fragments received, up to 64
	seq      uint32
	got      int // fragments received
	size     int // packet size, known once the last fragment arrived
	lead     uint16
	last     uint16
	frags    bool // last is known
	sentinel bool
	dud      bool // larger than MaxPacket: nothing is stored
}

func (e *rxEntry) has(i uint16) bool {
	if e.bits == nil {
		return e.bit0&(1<<i) != 0
	}
	return e.bits[i/64]&(1<<(i%64)) != 0
}

func (e *rxEntry) set(i uint16) {
	if e.bits == nil {
		e.bit0 |= 1 << i
	} else {
		e.bits[i/64] |= 1 << (i % 64)
	}
}

func (e *rxEntry) complete() bool { return e.frags && !e.dud && e.got == int(e.last)+1 }

// rxChannel is the receiving side of a channel: its window base and its
// queue of entries sorted by packet_seq (live part ents[head:]).
type rxChannel struct {
	ents []rxEntry
	head int
	base uint32
}

func (c *rxChannel) live() []rxEntry { return c.ents[c.head:] }

// find returns the index in live() of the entry for packet seq, or where
// it would be inserted.
func (c *rxChannel) find(seq uint32) (int, bool) {
	live := c.live()
	off := (seq - c.base) & seqMask24
	n := len(live)
	if n == 0 {
		return 0, false
	}
	if lo := (live[n-1].seq - c.base) & seqMask24; off >= lo {
		if off == lo {
			return n - 1, true
		}
		return n, false
	}
	i, j := 0, n-1
	for i < j {
		h := int(uint(i+j) >> 1)
		if (live[h].seq-c.base)&seqMask24 < off {
			i = h + 1
		} else {
			j = h
		}
	}
	return i, (live[i].seq-c.base)&seqMask24 == off
}

// insert adds e at index i of live() and returns it.
func (c *rxChannel) insert(i int, e rxEntry) *rxEntry {
	if c.head > 0 && len(c.ents) == cap(c.ents) {
		n := copy(c.ents, c.ents[c.head:])
		clear(c.ents[n:])
		c.ents, c.head = c.ents[:n], 0
	}
	at := c.head + i
	c.ents = append(c.ents, rxEntry{})
	copy(c.ents[at+1:], c.ents[at:])
	c.ents[at] = e
	return &c.ents[at]
}

// validFragment applies the receiver's validity rules (notes §1.2).
func validFragment(m *Message) bool {
	switch {
	case m.FragmentID > m.LastFragmentID:
		return false
	case m.FragmentID < m.LastFragmentID:
		return len(m.Data) == FragmentSize
	}
	return len(m.Data) <= FragmentSize
}

// bufferCost is the memory a fragment adds to the reassembly budget if it
// starts its packet's buffer: the whole packet, since the buffer is
// allocated at once.
func (s *Session) bufferCost(m *Message) int {
	if m.LastFragmentID == 0 {
		return len(m.Data)
	}
	if int(m.LastFragmentID)*FragmentSize > s.cfg.MaxPacket {
		return 0 // dud
	}
	return (int(m.LastFragmentID) + 1) * FragmentSize
}

// admit reports whether the fragments of f fit the reassembly budget. A
// fragment of the packet at or before the front of its channel's queue is
// always admitted, so the packet that blocks delivery can complete; the
// budget then bounds the rest to Session.rxBudget bytes, plus one packet
// per channel.
func (s *Session) admit(f *Frame) bool {
	need := 0
	for i := range f.Messages {
		m := &f.Messages[i]
		if int(m.Channel) >= s.cfg.Channels || m.Type == MsgWindowAck {
			continue
		}
		c := &s.rxch[m.Channel]
		off := (m.PacketSeq - c.base) & seqMask24
		live := c.live()
		if off >= ChannelWindow || len(live) == 0 || off <= (live[0].seq-c.base)&seqMask24 {
			continue
		}
		i, ok := c.find(m.PacketSeq)
		if !ok {
			need += entryCost
		}
		if m.Type == MsgFragment && (!ok || live[i].buf == nil && !live[i].dud) {
			need += s.bufferCost(m)
		}
	}
	return need == 0 || s.rxBytes+need <= s.rxBudget
}

// entry returns the entry for packet seq with dependent_lead lead on
// channel c, creating it; nil if seq is outside the window or the entry
// has another lead (notes §3.6).
func (s *Session) entry(c *rxChannel, seq uint32, lead uint16) *rxEntry {
	if (seq-c.base)&seqMask24 >= ChannelWindow {
		return nil
	}
	i, ok := c.find(seq)
	if !ok {
		s.rxBytes += entryCost
		return c.insert(i, rxEntry{seq: seq, lead: lead})
	}
	e := &c.live()[i]
	if e.lead != lead {
		return nil
	}
	return e
}

// onFragment stores a fragment in its packet's entry.
func (s *Session) onFragment(m *Message) {
	if !validFragment(m) {
		return
	}
	c := &s.rxch[m.Channel]
	e := s.entry(c, m.PacketSeq, m.DependentLead)
	if e == nil {
		return
	}
	s.touch(m.Channel)
	if !e.frags {
		e.frags, e.last = true, m.LastFragmentID
		if int(e.last)*FragmentSize > s.cfg.MaxPacket {
			e.dud = true
			return
		}
		n := s.bufferCost(m)
		e.buf = make([]byte, n)
		s.rxBytes += n
		if e.last >= 64 {
			e.bits = make([]uint64, (int(e.last)+64)/64)
		}
	} else if m.LastFragmentID != e.last {
		return
	}
	if e.dud {
		return
	}
	if e.has(m.FragmentID) {
		s.stats.Duplicates++
		return
	}
	e.set(m.FragmentID)
	e.got++
	copy(e.buf[int(m.FragmentID)*FragmentSize:], m.Data)
	if m.FragmentID == e.last {
		e.size = int(e.last)*FragmentSize + len(m.Data)
	}
}

// onSentinel marks its packet's entry as a sentinel.
func (s *Session) onSentinel(m *Message) {
	c := &s.rxch[m.Channel]
	if e := s.entry(c, m.PacketSeq, m.DependentLead); e != nil {
		if e.sentinel {
			s.stats.Duplicates++
		}
		e.sentinel = true
		s.touch(m.Channel)
	}
}

func (s *Session) touch(ch uint8) { s.touched[ch/64] |= 1 << (ch % 64) }

// deliverTouched runs delivery on every channel that received a message.
func (s *Session) deliverTouched() {
	for w := range s.touched {
		for s.touched[w] != 0 {
			b := s.touched[w] & -s.touched[w]
			s.touched[w] &^= b
			s.deliver(uint8(w*64 + bits.TrailingZeros64(b)))
		}
	}
}

// deliver walks the channel's queue as notes §3.6 prescribes: an entry
// whose dependency is neither delivered nor skipped stops the walk; a dud
// is consumed with no delivery; a complete packet is consumed and
// delivered (nothing if larger than MaxPacket); a sentinel entry is
// consumed with no delivery once the newest entry is 63488 or more
// packets ahead; other entries are passed over. Consuming an entry drops
// every earlier one and moves the base past it. Unlike the reference, the
// walk goes on after consuming a sentinel or dud (notes §4 bug 2).
func (s *Session) deliver(ch uint8) {
	c := &s.rxch[ch]
	live := c.live()
	if len(live) == 0 {
		return
	}
	newest := live[len(live)-1].seq
	for i := 0; i < len(live); i++ {
		e := &live[i]
		off := (e.seq - c.base) & seqMask24
		if e.lead != 0 && uint32(e.lead) <= off {
			return
		}
		switch {
		case e.dud:
		case e.complete():
			if e.size <= s.cfg.MaxPacket {
				s.recv.Push(engine.Message{Data: e.buf[:e.size:e.size], Channel: ch})
			}
		case e.sentinel && (newest-e.seq)&seqMask24 >= ChannelWindow-WindowAckSpacing:
		default:
			continue
		}
		s.consume(ch, c, i)
		live = c.live()
		i = -1
	}
}

// consume drops the first i+1 entries of the channel's queue and moves
// its base past entry i, queueing a WindowAck when the base crosses a
// multiple of 2048 (notes §3.6).
func (s *Session) consume(ch uint8, c *rxChannel, i int) {
	live := c.live()
	for j := 0; j <= i; j++ {
		s.rxBytes -= entryCost + cap(live[j].buf)
	}
	old := c.base
	c.base = (live[i].seq + 1) & seqMask24
	clear(live[:i+1])
	c.head += i + 1
	if c.head == len(c.ents) {
		c.ents, c.head = c.ents[:0], 0
	}
	if d := (c.base - old) & seqMask24; int(old%WindowAckSpacing)+int(d) >= WindowAckSpacing {
		s.queueWindowAck(ch, ((c.base&^(WindowAckSpacing-1))-1)&seqMask24)
	}
}
