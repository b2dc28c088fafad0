package airhook

import (
	"cmp"
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
)

var _ engine.Engine = (*Session)(nil)

// pushState tracks whether the peer has confirmed one of our packets that
// carried both session fields (docs/protocols/airhook.md §3.2).
type pushState uint8

const (
	pushPending pushState = iota // no such packet sent yet
	pushSent                     // sent as pushSeq, not yet confirmed
	pushDone                     // confirmed: session fields are no longer sent
)

// record is what the session remembers of one of its own new packets,
// indexed by the low octet of the packet's sequence number.
type record struct {
	at       time.Time         // when it was sent
	pkt      congestion.Packet // the controller's record, when it carried messages
	nextOut  uint8             // our next message number after its messages
	nextIn   uint8             // the peer's next message number as known then
	count    uint8             // messages it carried
	messages bool              // it carried at least one message
	repeated bool              // a header repeat reused its sequence number
}

// Session is one Airhook endpoint talking to one peer: a sans-I/O state
// machine implementing engine.Engine. It is not safe for concurrent use.
// It is established once the peer has echoed our session ID
// (docs/protocols/airhook.md §3.2); a peer restart adopted later does not
// return it to StateHandshake. Err is engine.ErrHandshakeTimeout,
// engine.ErrIdleTimeout or an error wrapping engine.ErrLingerTimeout once
// it ended by itself.
// Its small fields are grouped so that it fits 1,280 bytes, a size class
// of the allocator: every idle stream keeps one.
type Session struct {
	cfg Config

	own, peer   uint32 // session IDs; peer 0 = not known yet
	peerKnowsUs bool   // the peer has sent O = own
	push        pushState
	pushSeq     uint16

	lastSent         uint16 // sequence number of our newest packet
	lastAccepted     uint16 // newest peer sequence number accepted
	lastObservedSent uint8  // observed octet in our newest packet
	confirmed        uint8  // newest octet of ours the peer confirmed
	confIn           uint8  // with a log of one record: the nextIn of confirmed's (see confirmedIn)
	nextOut, nextIn  uint8  // next message numbers, ours and the peer's
	nMissed          uint16 // entries of missed
	// log holds the records of our packets from confirmed to lastSent, by
	// the low octets of their sequence numbers modulo its length, a power
	// of two up to 256 that grows with the packets unconfirmed (see rec,
	// reserve), from firstLog, and that Trim shrinks.
	log []record

	missed [maxMissed]uint8 // peer message numbers detected lost, oldest first

	waiting   []*outMsg // sent and unconfirmed, by message number (256 entries; nil once trimmed)
	queue     outQueue  // waiting for a message number
	free      []*outMsg // recycled messages
	pending   int       // accepted by Send, not confirmed
	pendBytes int       // their bytes
	order     uint64    // Send counter

	engine.Lifecycle

	cc           *congestion.Controller
	rtt          engine.RTT
	now          time.Time // latest time seen
	lastTransmit time.Time
	lastProbe    time.Time
	kickAt       time.Time // when a packet is due, if kick
	kick         bool      // a packet is due at kickAt
	retryArmed   bool      // a packet is due one RTO after the last transmit

	// Challenge of a new peer session announced once established (see
	// challenged).
	chalOn     bool          // running
	chalSend   bool          // its packet is due
	chalPassed bool          // ran out unanswered: the next new session is taken
	chalSeq    uint16        // the sequence number of its packet
	chalUntil  time.Time     // when it runs out
	chalEvery  time.Duration // how often it probes

	pkt Packet // scratch for decoding and encoding
}

// sessionDraws bounds the attempts at drawing a nonzero session ID.
const sessionDraws = 8

// withDefaults returns c with defaults filled in, or an error for values
// that cannot be honoured.
func (c Config) withDefaults() (Config, error) {
	c.MaxDatagram = cmp.Or(c.MaxDatagram, DefaultMaxDatagram)
	c.RTOInitial = cmp.Or(c.RTOInitial, DefaultRTOInitial)
	c.RTOMin = cmp.Or(c.RTOMin, DefaultRTOMin)
	c.RTOMax = cmp.Or(c.RTOMax, DefaultRTOMax)
	c.Linger = cmp.Or(c.Linger, engine.DefaultLinger)
	c.MaxQueued = cmp.Or(c.MaxQueued, engine.DefaultMaxQueued)
	switch {
	case c.MaxDatagram < MinMaxDatagram:
		return c, engine.ConfigError("airhook", "MaxDatagram %d below %d", c.MaxDatagram, MinMaxDatagram)
	case c.RTOInitial < 0 || c.RTOMin < 0 || c.RTOMax < 0 || c.RTOMin > c.RTOMax:
		return c, engine.ConfigError("airhook", "RTO bounds %v/%v/%v", c.RTOInitial, c.RTOMin, c.RTOMax)
	}
	if err := engine.CheckConfig("airhook", false, false, c.MaxQueued, c.KeepAlive, c.IdleTimeout, c.HandshakeTimeout, c.Linger); err != nil {
		return c, err
	}
	for draws := 0; c.Session == 0; draws++ {
		if draws == sessionDraws {
			return c, engine.ConfigError("airhook", "Rand yields only zero session IDs")
		}
		if err := engine.DrawID(c.Rand, &c.Session); err != nil {
			return c, fmt.Errorf("airhook: drawing a session ID: %w", err)
		}
	}
	return c, nil
}

// New returns a session created at now, in StateHandshake. It fails if cfg
// holds an impossible value (see Config) or if drawing a random session ID
// fails.
//
// As in the reference, the new session's first packet is due at once: a
// header repeat with sequence number 1, or a new packet with sequence
// number 2 when a message was queued first (docs/protocols/airhook.md §5).
func New(now time.Time, cfg Config) (*Session, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Session{
		cfg:      cfg,
		own:      cfg.Session,
		lastSent: 1,
		log:      make([]record, firstLog),
		waiting:  make([]*outMsg, 256),
		rtt:      *engine.NewRTT(cfg.RTOInitial, cfg.RTOMin, cfg.RTOMax),
		cc: congestion.New(now, congestion.Config{
			Algorithm:   cfg.Congestion,
			MaxDatagram: cfg.MaxDatagram,
			Logger:      cfg.Logger,
			Tracer:      cfg.Tracer,
		}),
		Lifecycle:    engine.NewLifecycle(now),
		now:          now,
		lastTransmit: now,
		lastProbe:    now,
		kick:         true,
		kickAt:       now,
	}, nil
}

// firstLog is the log's length at first.
const firstLog = 8

// rec returns the log's record of our packet whose sequence number has the
// low octet seq, from confirmed to lastSent (or the next one, once
// reserved). A log shorter than that span holds records that are all
// alike (see Trim), so that any of them stands for each.
func (s *Session) rec(seq uint8) *record { return &s.log[int(seq)&(len(s.log)-1)] }

// reserve makes room in the log for the record of our next packet, seq.
func (s *Session) reserve(seq uint8) {
	span, n := int(seq-s.confirmed)+1, len(s.log)
	for n < span && n < 256 {
		n *= 2
	}
	if n > len(s.log) {
		s.resizeLog(n)
	}
}

// resizeLog moves the records from confirmed to lastSent to a log of n
// records. A log of one record holds lastSent's, and keeps the nextIn of
// confirmed's in confIn.
func (s *Session) resizeLog(n int) {
	in := s.confirmedIn()
	log := make([]record, n)
	for q := s.confirmed; ; q++ {
		log[int(q)&(n-1)] = *s.rec(q)
		if q == uint8(s.lastSent) {
			break
		}
	}
	s.log = log
	if n == 1 {
		s.confIn = in
	} else {
		s.rec(s.confirmed).nextIn = in
	}
}

// confirmedIn returns the nextIn of the record of confirmed: the peer's
// next message number as known when that packet was sent. A log of one
// record keeps it apart (confIn), for the record stands for the packets
// after confirmed, which may have been sent after more of the peer's
// messages arrived (see Trim).
func (s *Session) confirmedIn() uint8 {
	if len(s.log) == 1 {
		return s.confIn
	}
	return s.rec(s.confirmed).nextIn
}

// setConfirmed records that the peer confirmed our packets up to seq.
func (s *Session) setConfirmed(seq uint8) {
	if seq != s.confirmed && len(s.log) == 1 {
		s.confIn = s.log[0].nextIn // seq's record is the one kept
	}
	s.confirmed = seq
}

// Trim frees what an idle session keeps for traffic: the log's records
// beyond those of the packets unconfirmed, and all but one when those
// after the confirmed one carried no message and are alike (an idle
// session's keepalive answers, which the peer's probes never confirm,
// and the packet that confirmed the peer's last messages), the table of
// messages in flight when none is, the congestion controller's model when
// nothing is in flight, the empty queues and the recycled message
// buffers. They are allocated again when needed.
func (s *Session) Trim() {
	span, n := int(uint8(s.lastSent)-s.confirmed)+1, len(s.log)
	for n > 1 && n/2 >= span {
		n /= 2
	}
	if s.alike() {
		n = 1
	}
	if n < len(s.log) {
		s.resizeLog(n)
	}
	s.cc.Trim()
	if s.pending == s.queue.len() {
		s.waiting = nil // nothing in flight
	}
	if s.queue.len() == 0 {
		s.queue = outQueue{}
	}
	s.Inbox.Trim()
	s.free = nil
}

// alike reports whether the records after confirmed up to lastSent are
// all alike: none carried a message, and they hold the nextOut of the
// confirmed one and lastSent's nextIn. Of the confirmed record only
// nextOut and nextIn are read again, so a log of one record, lastSent's,
// then stands for each, the confirmed one's nextIn kept apart (see
// confirmedIn).
func (s *Session) alike() bool {
	first, last := s.rec(s.confirmed), s.rec(uint8(s.lastSent))
	for q := s.confirmed + 1; q != uint8(s.lastSent)+1; q++ {
		r := s.rec(q)
		if r.messages || r.nextOut != first.nextOut || r.nextIn != last.nextIn {
			return false
		}
	}
	return true
}

// ID returns this endpoint's own session ID (never 0).
func (s *Session) ID() uint32 { return s.own }

// PeerSession returns the peer's session ID, 0 while no packet of the peer
// has been accepted. It changes when a restarted peer is adopted.
func (s *Session) PeerSession() uint32 { return s.peer }

// Send queues a copy of p for reliable delivery. Only reliable delivery on
// channel 0 without a message number or Avara parameters exists (else
// engine.ErrUnsupported).
// Errors: engine.ErrClosed after Close, engine.ErrEmptyMessage for an
// empty p, engine.ErrMessageTooLarge above 256 bytes, engine.ErrQueueFull
// when Config.MaxQueued messages are pending.
func (s *Session) Send(p []byte, opt engine.SendOptions) error {
	switch {
	case s.State() >= engine.StateClosing:
		return engine.ErrClosed
	case opt.Delivery != engine.Reliable && opt.Delivery <= engine.Passive:
		return engine.Unsupported("airhook", "%v delivery (only reliable)", opt.Delivery)
	}
	if err := engine.CheckParams("airhook", opt, 1, false); err != nil {
		return err
	}
	switch {
	case len(p) == 0:
		return engine.ErrEmptyMessage
	case len(p) > maxMessageLen:
		return engine.TooLarge("airhook", len(p), maxMessageLen)
	case s.pending >= s.cfg.MaxQueued:
		return engine.ErrQueueFull
	}
	var m *outMsg
	if n := len(s.free); n > 0 {
		m, s.free = s.free[n-1], s.free[:n-1]
	} else {
		m = new(outMsg)
	}
	m.data = append(m.data[:0], p...)
	m.order, m.sends = s.order, 0
	s.order++
	s.pending++
	s.pendBytes += len(p)
	s.queue.insert(m)
	return nil
}

// Close begins a graceful close at now. A session that knows no peer yet,
// or has nothing pending while its handshake is incomplete, closes at
// once. Otherwise it enters StateClosing:
// Send is refused, queued and missed messages are still sent, the peer is
// still answered, and the session reaches StateClosed once nothing is
// pending, everything received has been confirmed, and no datagram has
// arrived for max(2 RTO, MinTimeWait) — or when Config.Linger runs out.
func (s *Session) Close(now time.Time) {
	s.now = now
	s.BeginClose(now, s.peer == 0 || s.pending == 0)
}

// SendRoom returns engine.SendRoom of the bytes of pending messages and
// the congestion window (there is one channel).
func (s *Session) SendRoom(uint8) int { return engine.SendRoom(s.pendBytes, s.cc.Window()) }

// Pending returns the number of messages accepted by Send and not yet
// confirmed by the peer: queued, in flight, or waiting to be resent.
func (s *Session) Pending() int { return s.pending }

// Stats returns a snapshot of the counters. SRTT, RTTVar and RTO are those
// of the RFC 6298 estimator that times header repeats (SRTT and RTTVar
// are zero before the first sample); Retransmits counts messages sent
// again under a new number after the peer reported them missed.
func (s *Session) Stats() engine.Stats {
	return s.Snapshot(s.rtt.SRTT(), s.rtt.RTTVar(), s.rtt.RTO(), s.cc)
}

// Capabilities reports 256-byte reliable messages on one channel, not
// delivered in order: Recv gives them in the order the reference
// delivers them, which is not the Send order when a message had to be
// retransmitted (docs/protocols/airhook.md §3.11).
func (s *Session) Capabilities() engine.Capabilities {
	return engine.Capabilities{
		MaxMessage: maxMessageLen,
		MaxQueued:  s.cfg.MaxQueued,
		Channels:   1,
	}
}
