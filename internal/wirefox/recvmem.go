package wirefox

// Receive memory (Config.MaxRecvBuffer): the messages being reassembled
// (docs/protocols/wirefox.md §3.6) and the ORDERED messages held behind a
// gap (§3.5) count their footprint in Session.buffered: a fixed cost per
// entry, the Go runtime's map slots and records as measured on amd64
// rounded up, plus the capacity of every body copied, so that empty
// segments and segments of a message too large or beyond its end count
// as well. The reference may send the small tails of thousands of
// messages far ahead of their first segments (it fills a datagram's
// spare room with the first queued packet that fits,
// DatagramBuilder::MakeDatagram, source/DatagramBuilder.cpp): at about
// 700 bytes each, DefaultMaxRecvBuffer holds over 40,000 of them.
const (
	// reasmCost is a message being reassembled: its record, its entry in
	// Session.reasm and its segment map's first group (8 slots).
	reasmCost = 512
	// segCost is a segment's slot in its message's map.
	segCost = 64
	// heldCost is an ORDERED message's slot in its channel's hold.
	heldCost = 64
)

// reassembly is a fragmented message being put together (§3.6).
type reassembly struct {
	segs     map[uint32]seg // by index; bodies copied (nil once too large)
	last     int            // index of the last segment, -1 until it arrives
	bytes    int            // body bytes
	cost     int            // footprint counted in Session.buffered
	seq      uint32
	ch, opts uint8
	tooLarge bool // a segment ends beyond Config.MaxMessage: taken and dropped
}

// seg is a segment's place in its message and its body.
type seg struct {
	off  uint32
	body []byte
}

// heldMsg is an ORDERED message waiting for a gap to be filled.
type heldMsg struct {
	data []byte
	opts byte
}

// admit reports whether cost more bytes may be held: within
// Config.MaxRecvBuffer; for the next message of an ORDERED channel
// (next), which must always get in for its channel to move, within
// MaxRecvBuffer and the footprint of one message of Config.MaxMessage
// bytes. Otherwise the packet is refused (see refuse).
func (s *Session) admit(cost int, next bool) bool {
	limit := s.cfg.MaxRecvBuffer
	if next {
		limit += msgCost(s.cfg.MaxMessage)
	}
	return s.buffered+cost <= limit
}

// msgCost is the footprint of a message of n bytes in SegmentSize
// segments.
func msgCost(n int) int {
	return reasmCost + (n+SegmentSize-1)/SegmentSize*segCost + n
}

// refusePacket counts a new packet refused at the memory bound (or while
// refusing, see engine.Lifecycle.Refusing) in Stats.Refused, and logs the
// first of a run of refusals at Debug: the packet's datagram is not
// acknowledged and the peer sends it again. The run ends when a new
// packet is taken.
func (s *Session) refusePacket(why string) {
	s.Counters.Refused++
	if s.refusedRun {
		return
	}
	s.refusedRun = true
	if s.cfg.Logger != nil {
		s.cfg.Logger.Debug("wirefox: refusing new packets", "why", why, "held", s.buffered, "limit", s.cfg.MaxRecvBuffer)
	}
}

// reassemble takes a segment (§3.6) and reports whether it was refused
// by admit. A message whose segments reach beyond Config.MaxMessage is
// reassembled without its bodies and dropped (Stats.TooLarge); one whose
// segments do not tile it is dropped; either way its sequence is passed.
func (s *Session) reassemble(p *Packet) bool {
	next := s.mode(p.Channel) == Ordered && p.Seq == s.chans[p.Channel].rxNext
	r := s.reasm[p.Container]
	if r != nil {
		if _, dup := r.segs[p.Index]; dup {
			return false
		}
	}
	tooLarge := int64(p.Offset)+int64(len(p.Body)) > int64(s.cfg.MaxMessage) || r != nil && r.tooLarge
	var body []byte
	if !tooLarge {
		body = append([]byte(nil), p.Body...)
	}
	cost := segCost + cap(body)
	if r == nil {
		cost += reasmCost
	}
	if !s.admit(cost, next) {
		s.refusePacket("receive memory")
		return true
	}
	if r == nil {
		r = &reassembly{ch: p.Channel, seq: p.Seq, opts: p.Options, segs: make(map[uint32]seg), last: -1}
		if s.reasm == nil {
			s.reasm = make(map[uint32]*reassembly) // freed by Trim
		}
		s.reasm[p.Container] = r
	}
	if tooLarge && !r.tooLarge {
		r.tooLarge = true
		for i, q := range r.segs {
			r.cost -= cap(q.body)
			s.buffered -= cap(q.body)
			r.segs[i] = seg{}
		}
		r.bytes = 0
	}
	r.segs[p.Index] = seg{off: p.Offset, body: body}
	r.bytes += len(body)
	r.cost += cost
	s.buffered += cost
	if p.Flags&PacketSEG == 0 {
		r.last = int(p.Index)
	}
	if r.last < 0 || len(r.segs) != r.last+1 {
		return false
	}
	delete(s.reasm, p.Container)
	s.buffered -= r.cost
	blob := r.assemble()
	if r.tooLarge {
		s.Counters.TooLarge++
	}
	if len(blob) == 0 || blob[0] < CmdUser {
		blob = nil // dropped, but its sequence is passed
	}
	s.deliver(r.ch, r.seq, r.opts, blob, false) // no larger than the reassembly it replaces
	return false
}

// assemble returns the message, or nil when it was too large or its
// segments do not tile it.
func (r *reassembly) assemble() []byte {
	if r.tooLarge || r.bytes == 0 {
		return nil
	}
	last := r.segs[uint32(r.last)]
	size := int(last.off) + len(last.body)
	if size != r.bytes {
		return nil
	}
	blob := make([]byte, size)
	for _, q := range r.segs {
		if int(q.off)+len(q.body) > size {
			return nil
		}
		copy(blob[q.off:], q.body)
	}
	return blob
}

// deliver hands a message of channel ch with sequence seq to Recv as its
// channel's mode says (§3.5); nil data passes the sequence without
// delivering. An ORDERED message ahead of a gap is held, when check
// within admit: it reports whether the message was refused. A second
// message of a sequence already held is taken and dropped, as the
// reference's hold, a std::map, keeps the first (ChannelBuffer::Enqueue,
// source/ChannelBuffer.cpp); one older than the next expected is
// delivered (ChannelBuffer::IsEligible).
func (s *Session) deliver(ch uint8, seq uint32, opts byte, data []byte, check bool) bool {
	c := &s.chans[ch]
	switch s.mode(ch) {
	case Sequenced:
		if int32(seq-c.rxNext) < 0 {
			return false // older than the newest delivered
		}
		c.rxNext = seq + 1
	case Ordered:
		switch d := int32(seq - c.rxNext); {
		case d > 0:
			if _, dup := c.held[seq]; dup {
				return false
			}
			cost := heldCost + cap(data)
			if check && !s.admit(cost, false) {
				s.refusePacket("receive memory")
				return true
			}
			if c.held == nil {
				c.held = make(map[uint32]heldMsg)
			}
			c.held[seq] = heldMsg{data, opts}
			s.buffered += cost
			return false
		case d == 0:
			s.push(ch, opts, data)
			for c.rxNext++; ; c.rxNext++ {
				next, ok := c.held[c.rxNext]
				if !ok {
					break
				}
				delete(c.held, c.rxNext)
				s.buffered -= heldCost + cap(next.data)
				s.push(ch, next.opts, next.data)
			}
			return false
		}
	}
	s.push(ch, opts, data)
	return false
}
