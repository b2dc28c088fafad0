package porous

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
)

var (
	_ engine.Engine     = (*Session)(nil)
	_ engine.PeerCloser = (*Session)(nil)
)

// peerState is the reference's peer state (paper §2.2, docs/protocols/porous.md §3.1).
type peerState uint8

const (
	stConnecting    peerState = iota
	stConnected               // both handshake conditions hold
	stDisconnecting           // our Disconnect is unacknowledged
	stDisconnected            // we answered the peer's Disconnect: TIME-WAIT
	stZombie                  // over: StateClosed
)

// RTO bounds. The reference has no minimum and no back-off (docs/protocols/porous.md §3.3);
// these are local choices, invisible on the wire.
const (
	// MinRTO is the floor of the retransmission timeout, so that a
	// sub-millisecond loopback RTT does not make every scheduling hiccup
	// of the peer a loss.
	MinRTO = 10 * time.Millisecond
	// MaxRTO caps the back-off of the retransmission timeout.
	MaxRTO = 3 * time.Second
	// initialSRTT and initialRTO follow the reference: srtt 200 ms,
	// rttvar 100 ms until the first sample (docs/protocols/porous.md §2 row 8).
	initialSRTT = 200 * time.Millisecond
	initialRTO  = initialSRTT + 4*initialSRTT/2
)

// Bounds of the session's tables (each documented where it applies).
const (
	maxControl   = 64      // queued control frames; more are dropped
	maxAckQueue  = 1 << 16 // frame IDs waiting for a DataAck
	maxPings     = 8       // outstanding pings remembered
	pingHistory  = 3 * time.Second
	maxTimeWait  = 20 * time.Second // longest TIME-WAIT (the reference's Disconnected lifetime)
	minRecvBytes = 16 << 20         // smallest receive budget (see Session.admit)
	entryCost    = 64               // bytes charged per queued or delivered packet
)

// ctlFrame is a control frame waiting to be sent (docs/protocols/porous.md §3.1: Connect,
// ConnectAck, Ping, PingAck, Disconnect, DisconnectAck), in the order the
// reference flushes them: the order they were queued in.
type ctlFrame struct {
	typ FrameType
	v   uint32 // nonce or ping ID
}

// pingRec is an outstanding Ping: when it left, as the time since the
// session was created (8 bytes where a time.Time takes 24).
type pingRec struct {
	at time.Duration
	id uint16
	ok bool
}

// Session is one POROUS peer talking to one remote peer: a sans-I/O state
// machine implementing engine.Engine. It is not safe for concurrent use.
// Its State follows its peer state: StateHandshake while connecting,
// StateEstablished while connected, StateClosing after Close and while
// disconnecting or in the TIME-WAIT that follows the peer's Disconnect,
// StateClosed once over. Its Err is then an error wrapping
// engine.ErrIncompatible, engine.ErrRejected (the peer acknowledged
// another nonce), engine.ErrPeerClosed (the peer disconnected during the
// handshake or with messages of ours pending), engine.ErrLingerTimeout,
// or engine.ErrIdleTimeout / engine.ErrHandshakeTimeout; nil after a
// graceful close.
type Session struct {
	cfg   Config
	nonce uint32
	st    peerState
	engine.Lifecycle

	peerClosed bool  // the peer's Disconnect was taken (see PeerClosed)
	peerErr    error // then: the Err of the end of TIME-WAIT

	closing bool // Close was called

	// Handshake (docs/protocols/porous.md §3.2).
	accepted   bool // Config.Accept: a compatible Connect was seen
	ourAcked   bool // the peer acknowledged our Connect
	gotConnect bool // a compatible Connect of the peer arrived
	peerNonce  uint32
	peerRx     uint32
	restartNon uint32 // last foreign nonce counted in PeerRestarts
	// Challenge of a restart or close announced while connected (see
	// challenged).
	chal      engine.Challenge
	chalEvery time.Duration // the running challenge's Ping interval
	connectAt time.Time
	discAt    time.Time
	twEnd     time.Time // end of TIME-WAIT
	twLimit   time.Time
	finalDisc bool // send one Disconnect after closing on Linger

	ctl engine.FIFO[ctlFrame]

	// Ping and RTT (docs/protocols/porous.md §3.7).
	pingID  uint16
	pinged  bool      // a Ping was sent (see pingDue)
	pingAt  time.Time // next ping due
	pings   [maxPings]pingRec
	rtt     engine.RTT
	backoff uint8 // RTO doublings since the last acknowledgement

	// Transfer layer, sending (docs/protocols/porous.md §3.3).
	ring      txRing
	nextSeq   uint32
	cc        *congestion.Controller
	timeq     engine.FIFO[timeEntry]
	resendq   engine.FIFO[uint32]
	active    [2]engine.FIFO[uint8] // by Priority: channels with messages to send, in line (see nextItem)
	newly     [2]engine.FIFO[uint8] // by Priority: channels that became active, served first (see nextItem)
	unstamped []*outPacket          // Unreliable packets queued since the last Poll
	unrel     []sentMsg             // scratch: unreliable messages of the frame being built

	// Transfer layer, receiving (docs/protocols/porous.md §3.4).
	ib        uint32
	rxf       rxFrames  // the frames accepted below ib (see spoof.go)
	stallAt   time.Time // the oldest stall clock of a channel, or earlier (see stallDue)
	ackq      []uint32
	ackSorted bool
	lastAcks  []uint32 // the new IDs of the previous DataAck, listed again in the next

	// Sequencing layer (docs/protocols/porous.md §3.5, §3.6).
	txch      []txChannel
	rxch      []rxChannel
	rxBytes   int // reassembly memory charged (receive queues)
	recvBytes int // memory of the packets in recv (see recvCost)
	rxBudget  int
	exempt    [MaxChannels / 64]uint64 // channels admitted on their reserve
	needs     []rxNeed                 // scratch of admit
	chNeed    []int                    // scratch of admit, by channel
	touched   [MaxChannels / 64]uint64
	pending   int
	pendBytes int
	lent      *outPacket                      // the packet whose buffer MessageBuffer returned
	recvCost  engine.FIFO[recvCharge]         // parallel to Inbox
	sink      func(time.Time, engine.Message) // see SetSink

	now   time.Time
	frame Frame // decoding scratch

	maxFrame int // the largest new frame built: see SetMaxFrame
	// largeOK: a frame above MaxFrameSize was acknowledged; largeLost: one
	// was declared lost before that, and large frames were given up.
	largeOK, largeLost bool
}

// withDefaults returns c with defaults filled in, or an error for values
// that cannot be honoured.
func (c Config) withDefaults() (Config, error) {
	c.Channels = cmp.Or(c.Channels, 1)
	c.MaxPacket = cmp.Or(c.MaxPacket, DefaultMaxPacket)
	c.MaxQueued = cmp.Or(c.MaxQueued, engine.DefaultMaxQueued)
	c.MaxQueuedBytes = cmp.Or(c.MaxQueuedBytes, DefaultMaxQueuedBytes)
	c.MaxRxBandwidth = cmp.Or(c.MaxRxBandwidth, NoBandwidthLimit)
	c.MaxTxBandwidth = cmp.Or(c.MaxTxBandwidth, NoBandwidthLimit)
	c.KeepAlive = cmp.Or(c.KeepAlive, DefaultKeepAlive)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.Linger = cmp.Or(c.Linger, engine.DefaultLinger)
	c.MaxUnreliableDelay = cmp.Or(c.MaxUnreliableDelay, DefaultMaxUnreliableDelay)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case c.Channels < 1 || c.Channels > MaxChannels:
		return c, engine.ConfigError("porous", "Channels %d not in 1..%d", c.Channels, MaxChannels)
	case len(c.Priorities) > c.Channels:
		return c, engine.ConfigError("porous", "%d Priorities for %d channels", len(c.Priorities), c.Channels)
	case len(c.Weights) > c.Channels:
		return c, engine.ConfigError("porous", "%d Weights for %d channels", len(c.Weights), c.Channels)
	case c.SendOrder > Arrival:
		return c, engine.ConfigError("porous", "SendOrder %d", c.SendOrder)
	case c.MaxPacket < 0 || c.MaxPacket > MaxPacketLimit:
		return c, engine.ConfigError("porous", "MaxPacket %d not in 1..%d", c.MaxPacket, MaxPacketLimit)
	case c.MaxQueuedBytes < 0:
		return c, engine.ConfigError("porous", "MaxQueuedBytes %d", c.MaxQueuedBytes)
	case c.Overhead < 0 || c.Overhead > maxOverhead:
		return c, engine.ConfigError("porous", "Overhead %d not in 0..%d", c.Overhead, maxOverhead)
	}
	for i, w := range c.Weights {
		if w < 1 || w > 255 {
			return c, engine.ConfigError("porous", "Weights[%d] = %d not in 1..255", i, w)
		}
	}
	for i, p := range c.Priorities {
		if p > Low {
			return c, engine.ConfigError("porous", "Priorities[%d] = %d", i, p)
		}
	}
	if err := engine.CheckConfig("porous", false, false, c.MaxQueued, c.KeepAlive, c.HandshakeTimeout, c.Linger); err != nil {
		return c, err
	}
	if err := engine.DrawID(c.Rand, &c.Nonce); err != nil {
		return c, fmt.Errorf("porous: drawing a nonce: %w", err)
	}
	return c, nil
}

// New returns a session created at now, in StateHandshake. It fails if cfg
// holds an impossible value (see Config) or if drawing a nonce fails.
// Unless cfg.Accept is set, the first Connect is due at once.
func New(now time.Time, cfg Config) (*Session, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Session{
		cfg:   cfg,
		nonce: cfg.Nonce,
		rtt:   *engine.NewRTT(initialRTO, MinRTO, MaxRTO), // estimator only: see rto
		chal:  engine.Challenge{Tracer: cfg.Tracer},
		cc: congestion.New(now, congestion.Config{
			Algorithm:   cfg.Congestion,
			MaxDatagram: MaxFrameSize,
			Logger:      cfg.Logger,
			Tracer:      cfg.Tracer,
		}),
		txch:      make([]txChannel, cfg.Channels),
		rxch:      make([]rxChannel, cfg.Channels),
		chNeed:    make([]int, cfg.Channels),
		rxBudget:  max(minRecvBytes, 4*cfg.MaxPacket),
		Lifecycle: engine.NewLifecycle(now),
		now:       now,
		connectAt: now,
		maxFrame:  MaxFrameSize,
	}
	for i := range s.txch {
		c := &s.txch[i]
		c.id = uint8(i)
		c.quantum = MaxFrameSize
		if i < len(cfg.Weights) {
			c.quantum *= cfg.Weights[i]
		}
	}
	for i, p := range cfg.Priorities {
		s.txch[i].prio = p
	}
	return s, nil
}

// Nonce returns this end's nonce (Config.Nonce or the one drawn).
func (s *Session) Nonce() uint32 { return s.nonce }

// PeerNonce returns the nonce of the peer's accepted Connect, 0 before
// one.
func (s *Session) PeerNonce() uint32 { return s.peerNonce }

// setNow moves the session's clock to now, never backwards.
func (s *Session) setNow(now time.Time) {
	if now.After(s.now) {
		s.now = now
	}
}

// Send queues a copy of p as one packet on channel opt.Channel in mode
// opt.Delivery (docs/protocols/porous.md §3.5): Reliable packets are resent until
// acknowledged and delay later packets of their channel until delivered;
// Passive packets are resent until acknowledged but may be skipped;
// Unreliable packets are sent once. Packets of a channel are delivered in
// Send order. Zero-length packets are legal (one empty fragment). Messages
// queued before the handshake completes leave once it has.
//
// Errors: engine.ErrClosed after Close or once the session ended;
// engine.ErrUnsupported for a channel ≥ Config.Channels, a nonzero
// MessageNumber or Params or an unknown Delivery; engine.ErrMessageTooLarge above
// Config.MaxPacket; engine.ErrQueueFull when Config.MaxQueued messages or
// Config.MaxQueuedBytes bytes are pending, or the channel holds its room
// of unsent data (see full).
func (s *Session) Send(p []byte, opt engine.SendOptions) error {
	if err := s.check(len(p), opt); err != nil {
		return err
	}
	q := newPacket(len(p))
	copy(q.data, p)
	s.queue(q, opt.Channel, opt.Delivery)
	return nil
}

// check returns the error Send returns for an n-byte packet with opt, nil
// if it takes it.
func (s *Session) check(n int, opt engine.SendOptions) error {
	if s.closing || s.st > stConnected {
		return engine.ErrClosed
	}
	if err := engine.CheckParams("porous", opt, s.cfg.Channels, false); err != nil {
		return err
	}
	switch {
	case n > s.cfg.MaxPacket:
		return engine.TooLarge("porous", n, s.cfg.MaxPacket)
	case s.full(opt.Channel, n):
		return engine.ErrQueueFull
	}
	return nil
}

// MessageBuffer returns a buffer of n bytes, at most Config.MaxPacket,
// in which to write the next packet for SendBuffer (engine.Builder). It
// returns the same buffer, its first n bytes kept, until SendBuffer
// queues it or Trim takes it back, except that a call for fewer bytes
// than a smaller pooled buffer holds moves them to one (see
// packetClasses): the caller must not use a buffer after Trim or after
// another call.
func (s *Session) MessageBuffer(n int) []byte {
	if s.lent == nil || cap(s.lent.data) < n || classCap(n) < cap(s.lent.data) {
		// A buffer of n's class: a frame kept until acknowledged holds at
		// most twice its size, whatever the largest frame asked before.
		p := newPacket(n)
		if s.lent != nil {
			copy(p.data, s.lent.data)
			freePacket(s.lent)
		}
		s.lent = p
	}
	s.lent.data = s.lent.data[:n]
	return s.lent.data
}

// SendBuffer queues the first n bytes of the buffer MessageBuffer
// returned as one packet, as Send would, without copying them
// (engine.Builder). It returns Send's errors; after an error the buffer
// is kept as it was. It panics if no such buffer holds n bytes (a
// programming error).
func (s *Session) SendBuffer(n int, opt engine.SendOptions) error {
	if s.lent == nil || n > len(s.lent.data) {
		panic("porous: SendBuffer beyond the buffer MessageBuffer returned")
	}
	if err := s.check(n, opt); err != nil {
		return err
	}
	p := s.lent
	s.lent = nil
	p.data = p.data[:n]
	s.queue(p, opt.Channel, opt.Delivery)
	return nil
}

// full reports whether a packet of n bytes on channel ch must wait:
// Config.MaxQueued packets or Config.MaxQueuedBytes bytes are pending, or
// (round-robin sending) ch holds its room of unsent data. Beyond the first
// two bounds, a channel with nothing unsent still takes a packet of one
// fragment or less while the excess stays within one such packet per
// channel (Config.Channels packets, Config.Channels × FragmentSize bytes):
// otherwise another channel's bulk, in flight and queued up to the bounds,
// would hold a small message back until its acknowledgements came.
func (s *Session) full(ch uint8, n int) bool {
	over := func(slack int) bool {
		return s.pending >= s.cfg.MaxQueued+slack || s.pending > 0 && s.pendBytes+n > s.cfg.MaxQueuedBytes+slack*FragmentSize
	}
	switch {
	case s.cfg.SendOrder != RoundRobin:
		return over(0)
	case over(0):
		return s.txch[ch].unsent > 0 || n > FragmentSize || over(s.cfg.Channels)
	}
	return s.channelRoom(ch) == 0
}

// Recv returns the next delivered packet. Channel is set; Reliable is
// true because the send mode is not on the wire (docs/protocols/porous.md
// §1.2).
func (s *Session) Recv() (engine.Message, bool) {
	m, ok := s.Lifecycle.Recv()
	if ok {
		c, _ := s.recvCost.Take()
		s.recvBytes -= c.n
		s.rxch[m.Channel].exempt -= c.exempt
	}
	return m, ok
}

// SetSink makes the session hand each packet of one fragment that its
// channel can deliver at once to f, during HandleDatagram, with Data
// aliasing the datagram (engine.Sinker); other packets are queued for
// Recv as before, and a packet goes to f only while nothing waits for
// Recv, so that the order of delivery is kept. A nil f queues every
// packet.
func (s *Session) SetSink(f func(now time.Time, m engine.Message)) { s.sink = f }

// SetRecvOpen opens or closes the session to new data (see
// engine.Engine). While it is closed, a Data frame that carries a
// Fragment or Sentinel not received before is not acknowledged, and only
// its WindowAcks are applied: the peer resends it, and it is taken once
// the session is open again. Other frames, and Data frames that carry
// nothing new, are handled as always.
//
// No channel stalls (see ErrStalled) while it is closed: what a channel
// waits for may be among what is refused. Reopening starts the stall
// clocks of the channels still waiting afresh.
func (s *Session) SetRecvOpen(open bool) {
	if open && !s.RecvOpen() {
		s.restartStallClocks()
	}
	s.Lifecycle.SetRecvOpen(open)
}

// Held returns the number of packets received whole, and acknowledged,
// that wait in their channel's queue for an earlier packet before they
// can be delivered (engine.Holder).
func (s *Session) Held() int {
	n := 0
	for i := range s.rxch {
		c := &s.rxch[i]
		for off, ok := c.next(0); ok; off, ok = c.next(off + 1) {
			if c.get(c.base + off).complete() {
				n++
			}
		}
	}
	return n
}

// Close begins a graceful close at now (docs/protocols/porous.md §3.8). Send is refused from
// then on. A session that has nothing pending and has not seen the peer's
// Connect closes at once. Otherwise it enters StateClosing: the handshake,
// if incomplete, goes on; queued packets are sent and acknowledged; then
// it sends Disconnect every DisconnectInterval until the peer's
// DisconnectAck, and reaches StateClosed. Config.Linger bounds the whole
// close: when it runs out the session sends one last Disconnect if the
// peer is connected and ends, with Err wrapping engine.ErrLingerTimeout if
// messages were left unconfirmed.
func (s *Session) Close(now time.Time) {
	s.setNow(now)
	if !s.BeginClose(s.now, false) {
		return // closing already, or over
	}
	s.closing = true
	if s.st == stConnecting && s.pending == 0 {
		if s.gotConnect {
			s.enterDisconnecting()
		} else {
			s.fail(nil)
		}
	}
}

// SendRoom returns what channel ch may still hold unsent (see
// channelRoom), or with Arrival, where the channels share one queue,
// engine.SendRoom of the bytes of pending packets and the congestion
// window; 0 for a channel that does not exist.
func (s *Session) SendRoom(ch uint8) int {
	switch {
	case int(ch) >= s.cfg.Channels:
		return 0
	case s.cfg.SendOrder == Arrival:
		return engine.SendRoom(s.pendBytes, s.cc.Window())
	}
	return s.channelRoom(ch)
}

// Recycle takes back the Data of a delivered packet that the caller has
// consumed and no longer refers to, for reuse as a reassembly buffer or a
// packet's buffer by any session of the process (engine.Recycler). Only
// buffers of FragmentSize capacity, those of the packets of one fragment,
// go to the shared pool of that class (see packetPools), so that a
// receiver in steady state, losses included, allocates none; others are
// left to the collector.
func (s *Session) Recycle(b []byte) {
	if cap(b) == FragmentSize {
		freeFragmentBuffer(b)
	}
}

// Pending returns the number of messages accepted by Send and not yet
// confirmed: a Reliable or Passive packet until every frame carrying its
// fragments is acknowledged, an Unreliable one until all its fragments are
// sent.
func (s *Session) Pending() int { return s.pending }

// Stats returns a snapshot of the counters. PacketsSent counts datagrams,
// MessagesSent packets whose last fragment went out for the first time,
// Retransmits frames resent, Duplicates fragments and sentinels received
// again, PacketsRejected datagrams that did not decode or were refused,
// TooLarge incoming packets dropped for exceeding Config.MaxPacket.
func (s *Session) Stats() engine.Stats {
	return s.Snapshot(s.rtt.SRTT(), s.rtt.RTTVar(), s.rto(), s.cc)
}

// Capabilities reports packets of up to Config.MaxPacket bytes, ordered
// per channel, on Config.Channels channels, with Unreliable and Passive
// delivery.
func (s *Session) Capabilities() engine.Capabilities {
	return engine.Capabilities{
		MaxMessage: s.cfg.MaxPacket,
		MaxQueued:  s.cfg.MaxQueued,
		Ordered:    true,
		Channels:   s.cfg.Channels,
		Unreliable: true,
	}
}

// fail ends the session with err (nil for a graceful end).
func (s *Session) fail(err error) {
	s.st = stZombie
	s.Fail(err)
	s.ctl.Reset()
	s.ackq = s.ackq[:0]
}

// rto is the retransmission timeout: srtt + max(4·rttvar, srtt/2, 1 ms),
// doubled per back-off, within [MinRTO, MaxRTO]; 600 ms before the first
// RTT sample (docs/protocols/porous.md §2 row 8). The reference uses srtt + max(step time,
// 4·rttvar): its step time (about 15 ms) gives it headroom that a
// continuously driven engine lacks, so srtt/2 stands in for it, letting
// the RTT grow by half (a queue building at a bottleneck, frames of one
// burst serialised one after the other) before a frame counts as lost.
func (s *Session) rto() time.Duration {
	d := initialRTO
	if s.rtt.Sampled() {
		srtt := s.rtt.SRTT()
		d = srtt + max(4*s.rtt.RTTVar(), srtt/2, time.Millisecond)
	}
	return max(MinRTO, min(d<<s.backoff, MaxRTO))
}

// srtt is the smoothed RTT, the reference's 200 ms before any sample.
func (s *Session) srtt() time.Duration {
	if !s.rtt.Sampled() {
		return initialSRTT
	}
	return s.rtt.SRTT()
}
