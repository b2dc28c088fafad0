package porous

import (
	"bytes"
	"math/bits"
	"slices"
	"time"
	"unsafe"

	"github.com/rudpkit/rudp/internal/engine"
)

// Sequencing-layer constants (docs/protocols/porous.md §3.5, §3.6, §6).
const (
	// ChannelWindow is N_Q: the send and receive windows of a channel, in
	// packets.
	ChannelWindow = 1 << 16
	// WindowAckSpacing is M: WindowAcks and Unreliable-packet Sentinels
	// are sent for packet_seq ≡ M − 1 (mod M) (docs/protocols/porous.md §2 row 3).
	WindowAckSpacing = 2048
)

// outPacket is a packet accepted by Send and not yet confirmed.
type outPacket struct {
	data     []byte
	queuedAt time.Time // Unreliable: when it was queued (see Session.stamp)
	seq      uint32    // packet_seq
	lead     uint16    // dependent_lead
	last     uint16    // last fragment ID
	ch       uint8
	reliable bool // Reliable or Passive: its fragments are reliable messages
	sentinel bool // Unreliable with seq ≡ 2047 (mod 2048): a Sentinel follows
	left     int  // fragments not yet acknowledged (reliable) or sent (unreliable)
}

// fragment returns the data of fragment i (docs/protocols/porous.md §1.2).
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
func (it *qItem) size() int {
	switch it.kind {
	case MsgFragment:
		return FragmentHeaderSize + len(it.pkt.fragment(it.frag))
	case MsgSentinel:
		return SentinelSize
	}
	return WindowAckSize
}

// take removes the next message of it, the front of channel c's queue,
// and reports whether it is reliable.
func (s *Session) take(c *txChannel, it *qItem) (sentMsg, bool) {
	m := sentMsg{kind: it.kind, ch: it.ch, seq: it.seq, lead: it.lead}
	n := it.size()
	switch it.kind {
	case MsgFragment:
		p := it.pkt
		m.pkt, m.frag = p, uint16(it.frag)
		c.unsent -= len(p.fragment(it.frag))
		done := it.frag == int(p.last)
		if done {
			s.Counters.MessagesSent++
			c.q.Pop()
		} else {
			it.frag++
		}
		s.taken(c, n, done)
		return m, p.reliable
	case MsgWindowAck:
		m.seq, c.wackQueued = c.wackSeq, false
	}
	c.q.Pop()
	s.taken(c, n, true)
	return m, true
}

// txChannel is the sending side of a channel (docs/protocols/porous.md §3.5).
type txChannel struct {
	q          engine.FIFO[qItem]      // messages to send, in order
	waiting    engine.FIFO[*outPacket] // beyond the send window, in order
	next       uint32                  // next packet_seq
	lastRel    uint32                  // packet_seq of the last Reliable packet
	base       uint32                  // send window base, moved by WindowAcks
	wackSeq    uint32                  // newest WindowAck to send
	unsent     int                     // bytes of packets accepted and not yet sent
	deficit    int                     // round robin: bytes it may still send in its turn
	quantum    int                     // round robin: bytes added per turn
	id         uint8
	prio       Priority
	hasRel     bool
	wackQueued bool
	listed     bool // in line in Session.newly or Session.active
	fresh      bool // in line in Session.newly
}

// queue numbers p, whose data is set, as the next packet of channel ch
// and queues it, or holds it while it is beyond the send window.
func (s *Session) queue(p *outPacket, ch uint8, mode engine.Delivery) {
	c := &s.txch[ch]
	data := p.data
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
	c.unsent += len(data)
	if mode == engine.Unreliable {
		s.unstamped = append(s.unstamped, p)
	}
	if c.waiting.Len() == 0 && (p.seq-c.base)&seqMask24 < ChannelWindow {
		s.enqueue(p)
	} else {
		c.waiting.Push(p)
	}
}

// enqueue puts the messages of p in its channel's queue: its fragments,
// then its Sentinel if it has one.
func (s *Session) enqueue(p *outPacket) {
	s.push(qItem{kind: MsgFragment, ch: p.ch, pkt: p})
	if p.sentinel {
		s.push(qItem{kind: MsgSentinel, ch: p.ch, seq: p.seq, lead: p.lead})
	}
}

// onWindowAck moves the send window to m + 1 if that is at most one
// window ahead (docs/protocols/porous.md §3.5) and not beyond the next packet to send, and
// releases the packets now inside it. A receiver acknowledges only
// packets it was sent; a WindowAck past them (which the reference
// accepts) would put every later packet behind the window for good.
func (c *txChannel) onWindowAck(s *Session, m uint32) {
	nb := (m + 1) & seqMask24
	if d := (nb - c.base) & seqMask24; d > ChannelWindow || d > (c.next-c.base)&seqMask24 {
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
// yet sent (docs/protocols/porous.md §3.6).
func (s *Session) queueWindowAck(ch uint8, m uint32) {
	c := &s.txch[ch]
	c.wackSeq = m
	if !c.wackQueued {
		c.wackQueued = true
		s.push(qItem{kind: MsgWindowAck, ch: ch})
	}
}

// release accounts for a packet that is confirmed and puts it back in
// the shared pools (see freePacket): every frame that carried one of its
// fragments is acknowledged (or, Unreliable, sent or expired), and its
// channel's queue no longer holds it.
func (s *Session) release(p *outPacket) {
	s.pending--
	s.pendBytes -= len(p.data)
	freePacket(p)
}

// rxEntry is a packet of a channel's receive queue (docs/protocols/porous.md §3.6).
type rxEntry struct {
	buf      []byte   // reassembly buffer; nil before the first fragment and for duds
	bits     []uint64 // fragments received, when more than 64
	bit0     uint64   // fragments received, up to 64
	seq      uint32
	got      int // fragments received
	exempt   int // bytes charged to the channel's reserve (see admit)
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
// queue of entries, indexed by packet_seq mod ChannelWindow (every entry
// lies in [base, base + ChannelWindow), so the index is unique) in pages
// of rxPageLen entries allocated while they hold one. Finding, adding and
// dropping an entry take constant time whatever the order packets arrive
// in; walking the queue in packet_seq order skips empty pages.
type rxChannel struct {
	pages  *[ChannelWindow / rxPageLen]*rxPage // nil until the first entry
	spare  *rxPage                             // the last page freed, for reuse
	n      int                                 // entries
	hi     uint32                              // packet_seq of the newest entry, when n > 0
	recent bool                                // an entry was added since the last ping (see trim)
	base   uint32
	exempt int       // bytes on the channel's reserve, in its queue and in Recv's
	stuck  time.Time // blocked since, with its base unmoved (see watch); zero if not blocked
}

// recvCharge is the receive memory held by a packet in Recv's queue.
type recvCharge struct {
	n      int // entryCost + its buffer
	exempt int // of which on its channel's reserve
}

// rxPageLen is the number of entries of a receive page.
const rxPageLen = 64

// rxPage is a page of a channel's receive queue.
type rxPage struct {
	ents   [rxPageLen]rxEntry
	used   uint64 // occupied slots
	n      int
	exempt int // bytes of the page itself charged to the channel's reserve
}

// pageCost is the memory charged for a receive page.
var pageCost = int(unsafe.Sizeof(rxPage{}))

// get returns the entry for packet seq, nil if there is none.
func (c *rxChannel) get(seq uint32) *rxEntry {
	if c.pages == nil {
		return nil
	}
	i := seq & (ChannelWindow - 1)
	pg := c.pages[i/rxPageLen]
	if pg == nil || pg.used&(1<<(i%rxPageLen)) == 0 {
		return nil
	}
	return &pg.ents[i%rxPageLen]
}

// hasPage reports whether the page of packet seq exists.
func (c *rxChannel) hasPage(seq uint32) bool {
	return c.pages != nil && c.pages[(seq&(ChannelWindow-1))/rxPageLen] != nil
}

// next returns the smallest offset from the base, at least off, that holds
// an entry. The scan stops at the newest entry.
func (c *rxChannel) next(off uint32) (uint32, bool) {
	if c.n == 0 {
		return 0, false
	}
	end := uint32(ChannelWindow) // no entry at or beyond end
	if hi := (c.hi - c.base) & seqMask24; hi < ChannelWindow && c.get(c.hi) != nil {
		end = hi + 1
	}
	for off < end {
		i := (c.base + off) & (ChannelWindow - 1)
		bit := i % rxPageLen
		span := min(rxPageLen-bit, end-off)
		if pg := c.pages[i/rxPageLen]; pg != nil {
			w := pg.used >> bit
			if span < 64 {
				w &= 1<<span - 1
			}
			if w != 0 {
				return off + uint32(bits.TrailingZeros64(w)), true
			}
		}
		off += span
	}
	return 0, false
}

// last returns the largest offset from the base that holds an entry: the
// newest entry's, remembered by add, unless that entry was dropped.
func (c *rxChannel) last() (uint32, bool) {
	if c.n == 0 {
		return 0, false
	}
	if off := (c.hi - c.base) & seqMask24; off < ChannelWindow && c.get(c.hi) != nil {
		return off, true
	}
	for off := int(ChannelWindow - 1); off >= 0; {
		i := (c.base + uint32(off)) & (ChannelWindow - 1)
		bit := int(i % rxPageLen)
		span := min(bit+1, off+1) // slots bit-span+1 .. bit
		if pg := c.pages[i/rxPageLen]; pg != nil {
			w := pg.used << (63 - bit) // slot bit at the top
			if span < 64 {
				w &^= 1<<(64-span) - 1
			}
			if w != 0 {
				return uint32(off - bits.LeadingZeros64(w)), true
			}
		}
		off -= span
	}
	return 0, false
}

// each calls f for every entry in packet_seq order.
func (c *rxChannel) each(f func(*rxEntry)) {
	for off, ok := c.next(0); ok; off, ok = c.next(off + 1) {
		f(c.get(c.base + off))
	}
}

// add stores e, whose slot is free, and returns it; newPage reports
// whether its page was allocated for it.
func (c *rxChannel) add(e rxEntry) (_ *rxEntry, newPage bool) {
	if c.pages == nil {
		c.pages = new([ChannelWindow / rxPageLen]*rxPage)
	}
	i := e.seq & (ChannelWindow - 1)
	pg := c.pages[i/rxPageLen]
	if pg == nil {
		if pg, c.spare = c.spare, nil; pg != nil {
			// Empty already (drop zeroed each entry): clearing the
			// whole page, which an in-order receiver frees and takes
			// back at every packet, cost more than the rest of add.
			pg.exempt = 0
		} else {
			pg = new(rxPage)
		}
		newPage = true
		c.pages[i/rxPageLen] = pg
	}
	if c.n == 0 || (e.seq-c.hi)&seqMask24 < ChannelWindow {
		c.hi = e.seq
	}
	pg.used |= 1 << (i % rxPageLen)
	pg.n++
	c.n++
	c.recent = true
	pg.ents[i%rxPageLen] = e
	return &pg.ents[i%rxPageLen], newPage
}

// drop removes the entry for packet seq, which exists, and returns the
// page if it was freed with it.
func (c *rxChannel) drop(seq uint32) *rxPage {
	i := seq & (ChannelWindow - 1)
	pg := c.pages[i/rxPageLen]
	pg.ents[i%rxPageLen] = rxEntry{}
	pg.used &^= 1 << (i % rxPageLen)
	pg.n--
	c.n--
	if pg.n > 0 {
		return nil
	}
	c.pages[i/rxPageLen] = nil
	c.spare = pg // its exempt is cleared when reused; the caller may still read it
	return pg
}

// validFragment applies the receiver's validity rules (docs/protocols/porous.md §1.2).
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
		if len(m.Data) > FragmentSize/2 {
			return FragmentSize // see recvBuffer
		}
		return len(m.Data)
	}
	if int(m.LastFragmentID)*FragmentSize > s.cfg.MaxPacket {
		return 0 // dud
	}
	return (int(m.LastFragmentID) + 1) * FragmentSize
}

// recvBuffer returns the reassembly buffer of m's packet, of capacity c
// (bufferCost). A packet of one fragment filling more than half of one
// gets FragmentSize, from the shared pool of that class (see
// packetPools), so that a caller that recycles (a stream) allocates
// nothing per packet; a smaller one gets its size, so that tiny messages
// do not hold a fragment's worth.
func (s *Session) recvBuffer(m *Message, c int) []byte {
	if c == FragmentSize && m.LastFragmentID == 0 {
		return fragmentBuffer(len(m.Data))
	}
	n := c
	if m.LastFragmentID == 0 {
		n = len(m.Data)
	}
	return make([]byte, n, c)
}

// rxReserve is the memory a channel may take beyond the shared reassembly
// budget for packets at or before the front of its queue: one entry, its
// page and the largest buffer bufferCost allocates.
func (s *Session) rxReserve() int {
	return entryCost + pageCost + (s.cfg.MaxPacket/FragmentSize+1)*FragmentSize
}

// rxLimit bounds the receive memory, the reassembly queues plus the
// packets delivered and not yet taken by Recv: the shared budget plus one
// reserve per channel.
func (s *Session) rxLimit() int { return s.rxBudget + s.cfg.Channels*s.rxReserve() }

// rxNeed is a packet a Data frame being admitted refers to.
type rxNeed struct {
	seq uint32
	ch  uint8
	buf bool // its buffer exists or is counted
}

// admit reports whether the messages of f fit the receive memory, entries
// (entryCost each), receive pages (pageCost each) and buffers
// (bufferCost) alike. Normally they must fit
// the shared budget, Session.rxBudget, which the packets waiting in Recv's
// queue also count against. So that the packet that blocks delivery can
// always complete, a channel with a message for a packet at or before the
// front of its queue (any packet if the queue is empty) may instead take
// what f needs on it from its own reserve (rxReserve), if that reserve has
// room; the rest of f must then fit the shared budget. The memory is thus
// bounded by rxLimit. Channels admitted on their reserve are marked in
// s.exempt until the frame is processed.
func (s *Session) admit(f *Frame) bool {
	seen := s.needs[:0]
	var front [MaxChannels / 64]uint64
	need := 0
	// While the packets of f come on one channel in increasing order
	// (a sender's own frames: fragments of a packet in a row, packets in
	// sequence), the last entry of seen is the only one that can share a
	// packet with the next message, and a receive page too, pages being
	// runs of consecutive packet numbers, except where a frame spans
	// nearly the whole channel window and a page is split across its
	// ends, which can only count that page twice and errs towards
	// refusing. So a large frame is admitted in linear time. After any
	// other order every entry is searched.
	ordered, lastOff := true, uint32(0)
	for i := range f.Messages {
		m := &f.Messages[i]
		if int(m.Channel) >= s.cfg.Channels || m.Type == MsgWindowAck || m.Type == MsgFragment && !validFragment(m) {
			continue
		}
		c := &s.rxch[m.Channel]
		off := (m.PacketSeq - c.base) & seqMask24
		if off >= ChannelWindow {
			continue
		}
		cost := 0
		samePage := func(n rxNeed) bool {
			return n.ch == m.Channel && (n.seq&(ChannelWindow-1))/rxPageLen == (m.PacketSeq&(ChannelWindow-1))/rxPageLen
		}
		ordered = ordered && (len(seen) == 0 || seen[len(seen)-1].ch == m.Channel && off >= lastOff)
		lastOff = off
		var j int
		switch {
		case !ordered:
			j = slices.IndexFunc(seen, func(n rxNeed) bool { return n.ch == m.Channel && n.seq == m.PacketSeq })
		case len(seen) > 0 && seen[len(seen)-1].seq == m.PacketSeq:
			j = len(seen) - 1
		default:
			j = -1
		}
		if j < 0 {
			e := c.get(m.PacketSeq)
			if e == nil {
				cost += entryCost
				var shared bool
				if ordered {
					shared = len(seen) > 0 && samePage(seen[len(seen)-1])
				} else {
					shared = slices.ContainsFunc(seen, samePage)
				}
				if !c.hasPage(m.PacketSeq) && !shared {
					cost += pageCost
				}
			}
			seen = append(seen, rxNeed{seq: m.PacketSeq, ch: m.Channel, buf: e != nil && (e.buf != nil || e.dud)})
			j = len(seen) - 1
		}
		if m.Type == MsgFragment && !seen[j].buf {
			seen[j].buf = true
			cost += s.bufferCost(m)
		}
		if cost == 0 {
			continue
		}
		if f, ok := c.next(0); !ok || off <= f {
			front[m.Channel/64] |= 1 << (m.Channel % 64)
		}
		s.chNeed[m.Channel] += cost
		need += cost
	}
	s.needs = seen[:0]
	total := s.rxBytes + s.recvBytes
	ok := need == 0 || total+need <= s.rxBudget
	if !ok {
		ok, need = true, 0
		for _, n := range seen {
			switch k := s.chNeed[n.ch]; {
			case k == 0: // counted already
			case front[n.ch/64]&(1<<(n.ch%64)) == 0:
				need += k
			case s.rxch[n.ch].exempt+k > s.rxReserve():
				ok = false
			}
			s.chNeed[n.ch] = 0
		}
		if ok = ok && total+need <= s.rxBudget; ok {
			s.exempt = front
		}
	}
	for _, n := range seen {
		s.chNeed[n.ch] = 0
	}
	return ok
}

// chargePage accounts for a receive page allocated on channel ch.
func (s *Session) chargePage(ch uint8, pg *rxPage) {
	s.rxBytes += pageCost
	if s.exempt[ch/64]&(1<<(ch%64)) != 0 {
		pg.exempt += pageCost
		s.rxch[ch].exempt += pageCost
	}
}

// dropEntry removes entry e of channel ch and releases its memory.
func (s *Session) dropEntry(ch uint8, e *rxEntry) {
	c := &s.rxch[ch]
	s.rxBytes -= entryCost + cap(e.buf)
	c.exempt -= e.exempt
	if pg := c.drop(e.seq); pg != nil {
		s.rxBytes -= pageCost
		c.exempt -= pg.exempt
	}
}

// charge accounts for n bytes of receive memory taken by entry e of
// channel ch, on the channel's reserve when admit put the channel there.
func (s *Session) charge(ch uint8, e *rxEntry, n int) {
	s.rxBytes += n
	if s.exempt[ch/64]&(1<<(ch%64)) != 0 {
		e.exempt += n
		s.rxch[ch].exempt += n
	}
}

// entry returns the entry for packet seq with dependent_lead lead on
// channel c, creating it; nil if seq is outside the window or the entry
// has another lead (docs/protocols/porous.md §3.6).
func (s *Session) entry(ch uint8, seq uint32, lead uint16) *rxEntry {
	c := &s.rxch[ch]
	if (seq-c.base)&seqMask24 >= ChannelWindow {
		return nil
	}
	e := c.get(seq)
	if e == nil {
		var newPage bool
		e, newPage = c.add(rxEntry{seq: seq, lead: lead})
		if newPage {
			s.chargePage(ch, c.pages[(seq&(ChannelWindow-1))/rxPageLen])
		}
		s.charge(ch, e, entryCost)
		return e
	}
	if e.lead != lead {
		if s.cfg.ReliablePeer {
			s.conflict(ch, seq, "another dependent_lead")
		}
		return nil
	}
	return e
}

// onFragment stores a fragment in its packet's entry.
func (s *Session) onFragment(m *Message) {
	if !validFragment(m) || !s.plausible(m) {
		return
	}
	e := s.entry(m.Channel, m.PacketSeq, m.DependentLead)
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
		e.buf = s.recvBuffer(m, s.bufferCost(m))
		s.charge(m.Channel, e, cap(e.buf))
		if e.last >= 64 {
			e.bits = make([]uint64, (int(e.last)+64)/64)
		}
	} else if m.LastFragmentID != e.last {
		if s.cfg.ReliablePeer {
			s.conflict(m.Channel, m.PacketSeq, "another fragment count")
		}
		return
	}
	if e.dud {
		return
	}
	if e.has(m.FragmentID) {
		s.Counters.Duplicates++
		if s.cfg.ReliablePeer && !s.sameFragment(e, m) {
			s.conflict(m.Channel, m.PacketSeq, "other bytes")
		}
		return
	}
	e.set(m.FragmentID)
	e.got++
	copy(e.buf[int(m.FragmentID)*FragmentSize:], m.Data)
	if m.FragmentID == e.last {
		e.size = int(e.last)*FragmentSize + len(m.Data)
	}
}

// sinkFragment hands m to the sink (see SetSink) and reports true if m
// is a packet of one fragment that its channel delivers at once: the
// next packet of the channel (at its base, so that its dependency, if
// any, is met), with nothing of the channel held and nothing waiting
// for Recv, of at most MaxPacket bytes. Its bytes are then not copied,
// and no entry is made for it.
func (s *Session) sinkFragment(m *Message) bool {
	if s.sink == nil || m.LastFragmentID != 0 || !validFragment(m) || len(m.Data) > s.cfg.MaxPacket || s.Inbox.Len() > 0 {
		return false
	}
	c := &s.rxch[m.Channel]
	if c.n > 0 || m.PacketSeq != c.base {
		return false
	}
	s.Counters.MessagesRecv++
	s.sink(s.now, engine.Message{Data: m.Data, Channel: m.Channel, Reliable: true}) // the wire does not say
	s.consume(m.Channel, 0)
	return true
}

// refuse drops f unacknowledged if it carries new data, a Fragment or
// Sentinel that has not arrived before, and reports whether it did; the
// new messages count in Stats.Refused. The WindowAcks of a refused frame
// still move their channels' send windows, since they concern what this
// end sends, and applying one again when the frame comes back changes
// nothing.
func (s *Session) refuse(f *Frame) bool {
	n := uint64(0)
	for i := range f.Messages {
		if s.fresh(&f.Messages[i]) {
			n++
		}
	}
	if n == 0 {
		return false
	}
	s.Counters.Refused += n
	for i := range f.Messages {
		if m := &f.Messages[i]; m.Type == MsgWindowAck && int(m.Channel) < s.cfg.Channels {
			s.txch[m.Channel].onWindowAck(s, m.PacketSeq)
		}
	}
	return true
}

// fresh reports whether m is new data: a valid Fragment or a Sentinel of
// a packet within its channel's window that onFragment or onSentinel
// would store, not having stored it before.
func (s *Session) fresh(m *Message) bool {
	if int(m.Channel) >= s.cfg.Channels || m.Type == MsgWindowAck || m.Type == MsgFragment && !validFragment(m) {
		return false
	}
	if s.cfg.ReliablePeer && (m.Type == MsgSentinel || !s.plausible(m)) {
		return false // ignored
	}
	c := &s.rxch[m.Channel]
	if (m.PacketSeq-c.base)&seqMask24 >= ChannelWindow {
		return false // delivered or skipped already
	}
	e := c.get(m.PacketSeq)
	switch {
	case e == nil:
		return true
	case e.lead != m.DependentLead:
		return false
	case m.Type == MsgSentinel:
		return !e.sentinel
	case !e.frags:
		return true
	case m.LastFragmentID != e.last || e.dud:
		return false
	}
	return !e.has(m.FragmentID)
}

// onSentinel marks its packet's entry as a sentinel; a ReliablePeer
// sends none, so one from its address is ignored.
func (s *Session) onSentinel(m *Message) {
	if s.cfg.ReliablePeer {
		return
	}
	if e := s.entry(m.Channel, m.PacketSeq, m.DependentLead); e != nil {
		if e.sentinel {
			s.Counters.Duplicates++
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

// deliver walks the channel's queue as docs/protocols/porous.md §3.6 prescribes: an entry
// whose dependency is neither delivered nor skipped stops the walk; a dud,
// or a complete packet larger than MaxPacket, is consumed with no delivery
// (see tooLarge); a complete packet is consumed and delivered; a sentinel
// entry is consumed with no delivery once the newest entry is 63488 or
// more packets ahead; other entries are passed over. Consuming an entry drops
// every earlier one and moves the base past it. Unlike the reference, the
// walk goes on after consuming a sentinel or dud (docs/protocols/porous.md §4 bug 2).
// A ReliablePeer's channel is delivered strictly in order instead
// (deliverInOrder). Either way the channel's stall clock is kept (watch).
func (s *Session) deliver(ch uint8) {
	c := &s.rxch[ch]
	old := c.base
	if s.cfg.ReliablePeer {
		s.deliverInOrder(ch)
		s.watch(ch, old, c.n > 0)
		return
	}
	s.watch(ch, old, s.walk(ch))
}

// walk is the delivery of docs/protocols/porous.md §3.6 (see deliver); it reports
// whether it stopped at a dependency.
func (s *Session) walk(ch uint8) bool {
	c := &s.rxch[ch]
	newest, ok := c.last()
	if !ok {
		return false
	}
	newest = (c.base + newest) & seqMask24
	for off, ok := c.next(0); ok; off, ok = c.next(off + 1) {
		e := c.get(c.base + off)
		if e.lead != 0 && uint32(e.lead) <= off {
			return true
		}
		switch {
		case e.dud, e.complete() && e.size > s.cfg.MaxPacket:
			s.tooLarge(ch, e)
		case e.complete():
			s.handOver(ch, e)
		case e.sentinel && (newest-e.seq)&seqMask24 >= ChannelWindow-WindowAckSpacing:
		default:
			continue
		}
		s.consume(ch, off)
		off = ^uint32(0) // from the new base
	}
	return false
}

// handOver queues complete packet e of channel ch for Recv, moving its
// memory charge there.
func (s *Session) handOver(ch uint8, e *rxEntry) {
	n := entryCost + cap(e.buf)
	s.Inbox.Push(engine.Message{Data: e.buf[:e.size], Channel: ch, Reliable: true}) // the wire does not say
	s.recvCost.Push(recvCharge{n: n, exempt: e.exempt})
	s.recvBytes += n
	e.exempt = 0 // the Recv queue holds it now
}

// sameFragment reports whether fragment m, received before for entry e,
// has the bytes stored.
func (s *Session) sameFragment(e *rxEntry, m *Message) bool {
	lo := int(m.FragmentID) * FragmentSize
	if m.FragmentID == e.last {
		return lo+len(m.Data) == e.size && bytes.Equal(e.buf[lo:e.size], m.Data)
	}
	return bytes.Equal(e.buf[lo:lo+FragmentSize], m.Data)
}

// tooLarge accounts for a packet consumed without delivery because it is
// larger than MaxPacket: counted in Stats.TooLarge and logged at Debug.
func (s *Session) tooLarge(ch uint8, e *rxEntry) {
	s.Counters.TooLarge++
	size := int(e.last)*FragmentSize + 1 // a dud: at least this
	if !e.dud {
		size = e.size
	}
	s.cfg.Logger.Debug("porous: incoming packet larger than MaxPacket dropped",
		"channel", ch, "packet", e.seq, "fragments", int(e.last)+1, "min_size", size, "max_packet", s.cfg.MaxPacket)
}

// consume drops the entries of the channel's queue up to offset last
// from its base and moves the base past it, queueing a WindowAck when the
// base crosses a multiple of 2048 (docs/protocols/porous.md §3.6).
func (s *Session) consume(ch uint8, last uint32) {
	c := &s.rxch[ch]
	for off, ok := c.next(0); ok && off <= last; off, ok = c.next(off + 1) {
		s.dropEntry(ch, c.get(c.base+off))
	}
	old := c.base
	c.base = (old + last + 1) & seqMask24
	if d := last + 1; int(old%WindowAckSpacing)+int(d) >= WindowAckSpacing {
		s.queueWindowAck(ch, ((c.base&^(WindowAckSpacing-1))-1)&seqMask24)
	}
}
