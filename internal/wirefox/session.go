package wirefox

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
)

var _ engine.Engine = (*Session)(nil)

// Errors a client's handshake ends with when the server answers
// ERROR_OCCURRED (docs/protocols/wirefox.md §1.5). INCOMPATIBLE_PROTOCOL,
// INCOMPATIBLE_VERSION and INCOMPATIBLE_SECURITY end it with an error
// wrapping engine.ErrIncompatible.
var (
	// ErrNoFreeSlots: the server has no free connection slot.
	ErrNoFreeSlots = errors.New("wirefox: server has no free slots")
	// ErrAlreadyConnected: the server already has a connection with this
	// end's PeerID.
	ErrAlreadyConnected = errors.New("wirefox: already connected")
	// ErrConnectRefused: the server refused the connection for another
	// reason (CONNECT_FAILED, wrong password, rate limit, ban).
	ErrConnectRefused = errors.New("wirefox: connection refused")
	// ErrIncorrectRemoteIdentity: the server failed the identity
	// challenge sealed to Config.ServerKey (docs/protocols/wirefox.md
	// §3.8): it answered other bytes or none (the reference's server that
	// cannot open it), or ERROR_OCCURRED INCOMPATIBLE_SECURITY in answer to
	// it (earlier versions of this package), or ERROR_OCCURRED
	// INCORRECT_REMOTE_IDENTITY.
	ErrIncorrectRemoteIdentity = errors.New("wirefox: server failed the identity challenge")
)

// Timing (docs/protocols/wirefox.md §3.3, §3.4, §6).
const (
	ackDelay     = 10 * time.Millisecond
	ackThreshold = 10
	rtoInitial   = 105 * time.Millisecond
	rtoSlack     = 5 * time.Millisecond
	rttSamples   = 32
	// maxOwedAcks and maxOwedNaks bound the IDs waiting to be
	// acknowledged or NAKed; beyond them an ID is dropped (the peer's
	// timeout resends what it carried).
	maxOwedAcks = 4096
	maxOwedNaks = 1024
	// packetWindow bounds the packet IDs between the oldest
	// unacknowledged and the next: half the receiver's history.
	packetWindow = historySize / 2
	// challengeSlack is added to two round trips for a challenge's answer.
	challengeSlack = 10 * time.Millisecond
	// proofInterval and proofAttempts: an unencrypted server sends its
	// proof probe every proofInterval, proofAttempts times, and then ends
	// with engine.ErrHandshakeTimeout (see Session.proves).
	proofInterval = 200 * time.Millisecond
	proofAttempts = 10
)

// handshake phases.
type phase uint8

const (
	phaseWait    phase = iota // server: no INITIAL_CLIENT yet
	phaseInitial              // INITIAL_CLIENT (client) or INITIAL_SERVER (server) sent
	phaseProof                // server, unencrypted: UNENCRYPTED_ACK taken, the client's address not yet proven
	phaseDone                 // established
)

// outMsg is a message accepted by Send (or an internal one: keepalive,
// DISCONNECT_REQUEST).
type outMsg struct {
	blob      []byte
	ch        uint8
	seq       uint32
	opts      byte
	container uint32
	nseg      int // segments
	next      int // next segment to send
	unacked   int // reliable segments sent and not acknowledged
	internal  bool
}

func (m *outMsg) reliable() bool { return m.opts&OptReliable != 0 }

// outPkt is one segment of a message sent reliably, until acknowledged.
type outPkt struct {
	msg        *outMsg
	index      int
	id         uint32
	sends      int
	sentAt     time.Time
	dg         uint32 // the datagram of its latest transmission
	due        bool   // in the due queue
	acked      bool
	prev, next *outPkt // the in-flight list, by latest transmission
}

// sentDgram is a datagram carrying reliable packets, until acknowledged,
// NAKed or found lost.
type sentDgram struct {
	id      uint32
	sentAt  time.Time
	cc      congestion.Packet
	packets []*outPkt
}

// Session is one end of one Wirefox connection: a sans-I/O state machine
// implementing engine.Engine. It is not safe for concurrent use. Its Err
// is listed in the package doc.
type Session struct {
	cfg Config
	engine.Lifecycle
	now time.Time

	// Small fields together, to keep a Session in its allocation size
	// class (TestSessionSize).
	phase      phase
	authWant   uint8 // the AUTH_MSG state expected from the peer
	kaDue      bool  // a keepalive is due
	discSent   bool  // DISCONNECT_REQUEST queued
	gotFirst   bool  // a connected datagram arrived
	refusedRun bool  // the last new packet was refused (logged once per run)
	oobID      uint32
	hsSent     uint32 // handshake messages sent (attempts; docs/protocols/wirefox.md §3.2)

	// Handshake (docs/protocols/wirefox.md §3.2).
	peerID      uint64 // the peer's PeerID, once known
	hsNext      time.Time
	hsLast      oobMsg    // the last handshake message sent, sent again on a repeat
	oob         []oobMsg  // out-of-band blobs due
	failAfter   error     // set: fail once the out-of-band blobs are out
	lastKA      time.Time // when the last keepalive was due
	peerCloseAt time.Time // the peer's DISCONNECT_REQUEST waits for our last ACKs until then

	// Encryption (docs/protocols/wirefox.md §1.7, §3.8); Config.Rand is
	// set.
	keys  *SessionKeys // set: every datagram but those marked plain is sealed and opened
	crypt *cryptoState // with Config.Encrypt, once needed

	// Sending (docs/protocols/wirefox.md §3.4).
	nextDgram uint32
	nextPkt   uint32
	chans     []channel // channel 0, then Config.Channels
	active    engine.FIFO[uint8]
	inflight  struct{ head, tail *outPkt }
	unackedN  int
	byID      engine.FIFO[*outPkt] // reliable packets by ID, acknowledged ones popped lazily
	dueQ      engine.FIFO[*outPkt]
	dgrams    map[uint32]*sentDgram
	dgOrder   engine.FIFO[uint32]
	cc        *congestion.Controller
	pace      *refPacer // with Config.ReferencePeer
	rtts      [rttSamples]time.Duration
	nrtt      int
	pending   int
	pendBytes int

	// Acknowledging (docs/protocols/wirefox.md §3.3).
	expected   uint32
	owedAcks   []uint32
	prevAcks   []uint32 // the owed ACKs the last ack-only datagram carried (Config.RepeatAcks)
	ackScratch []uint32 // the ACK list of an ack-only datagram being built
	owedNaks   []uint32
	gaps       []gapID // skipped datagram IDs not yet NAKed, oldest first
	owedSince  time.Time

	// Receiving.
	dgHist, pktHist history
	reasm           map[uint32]*reassembly
	buffered        int      // footprint of reassembly and held ORDERED messages (see recvmem.go)
	pkts            []Packet // scratch
	dg              Datagram // scratch

	chal engine.Challenge
}

// cryptoState is what an encrypted session keeps besides its keys, made
// when first needed, so that an unencrypted one keeps none of it.
type cryptoState struct {
	kx        KeyPair // client: its key-exchange pair
	challenge []byte  // client: the identity challenge sent
	rxBuf     []byte  // opened datagrams
}

// cryptoOf returns s.crypt, made if needed.
func (s *Session) cryptoOf() *cryptoState {
	if s.crypt == nil {
		s.crypt = new(cryptoState)
	}
	return s.crypt
}

// channel is what a Session keeps for one channel, in one allocation for
// all: every idle stream keeps its channels.
type channel struct {
	txq     engine.FIFO[*outMsg] // queued messages
	held    map[uint32]heldMsg   // ORDERED: messages ahead of rxNext; nil when empty and trimmed
	deficit int                  // deficit round robin credit, while listed
	txSeq   uint32               // next sequence to send
	rxNext  uint32               // ORDERED / SEQUENCED: next sequence expected
	listed  bool                 // in Session.active
}

// withDefaults returns c with defaults filled in, or an error for values
// that cannot be honoured.
func (c Config) withDefaults() (Config, error) {
	c.MaxDatagram = cmp.Or(c.MaxDatagram, MTU)
	c.MaxMessage = cmp.Or(c.MaxMessage, MaxMessage)
	c.MaxQueued = cmp.Or(c.MaxQueued, engine.DefaultMaxQueued)
	c.MaxRecvBuffer = cmp.Or(c.MaxRecvBuffer, max(DefaultMaxRecvBuffer, msgCost(c.MaxMessage)))
	c.SendLimit = cmp.Or(c.SendLimit, DefaultSendLimit)
	c.KeepAlive = cmp.Or(c.KeepAlive, DefaultKeepAlive)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.Linger = cmp.Or(c.Linger, engine.DefaultLinger)
	switch {
	case len(c.Channels) > MaxChannels:
		return c, engine.ConfigError("wirefox", "%d channels above %d", len(c.Channels), MaxChannels)
	case c.MaxDatagram < MinMaxDatagram || c.MaxDatagram > MTU:
		return c, engine.ConfigError("wirefox", "MaxDatagram %d outside %d..%d", c.MaxDatagram, MinMaxDatagram, MTU)
	case c.MaxMessage < 1 || c.MaxMessage > MaxMessage:
		return c, engine.ConfigError("wirefox", "MaxMessage %d outside 1..%d", c.MaxMessage, MaxMessage)
	case c.MaxRecvBuffer < msgCost(c.MaxMessage):
		return c, engine.ConfigError("wirefox", "MaxRecvBuffer %d", c.MaxRecvBuffer)
	case (c.Identity != nil || c.ServerKey != nil) && !c.Encrypt,
		c.Identity != nil && c.Client, c.ServerKey != nil && !c.Client:
		return c, engine.ConfigError("wirefox", "Identity is for an encrypting server, ServerKey for an encrypting client")
	case c.Encrypt && c.MaxDatagram-Overhead < MinMaxDatagram:
		return c, engine.ConfigError("wirefox", "MaxDatagram %d below %d with encryption", c.MaxDatagram, MinMaxDatagram+Overhead)
	}
	for i, m := range c.Channels {
		if m > Sequenced {
			return c, engine.ConfigError("wirefox", "channel %d mode %d", i+1, m)
		}
	}
	return c, engine.CheckConfig("wirefox", c.Client, c.Accept, c.MaxQueued, c.HandshakeTimeout, c.Linger)
}

// New returns a session created at now in StateHandshake: a client's
// INITIAL_CLIENT is due at once. It fails on an invalid Config or when
// Rand fails.
func New(now time.Time, cfg Config) (*Session, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if err := engine.DrawID(cfg.Rand, &cfg.PeerID); err != nil {
		return nil, fmt.Errorf("wirefox: PeerID: %w", err)
	}
	n := 1 + len(cfg.Channels)
	s := &Session{
		cfg:       cfg,
		Lifecycle: engine.NewLifecycle(now),
		now:       now,
		chans:     make([]channel, n),
		chal:      engine.Challenge{Tracer: cfg.Tracer},
		cc: congestion.New(now, congestion.Config{
			Algorithm:   cfg.Congestion,
			MaxDatagram: cfg.MaxDatagram,
			Logger:      cfg.Logger,
			Tracer:      cfg.Tracer,
		}),
	}
	if s.nextDgram, err = firstDgramID(cfg.Rand); err != nil {
		return nil, err
	}
	s.dgHist.anyFirst = true
	if cfg.ReferencePeer {
		s.pace = &refPacer{window: refWindowInit, ssthresh: refSsthresh}
		s.pktHist.long = true
	}
	if cfg.Client {
		s.phase = phaseInitial
		s.sendHandshake(now, OpInitialClient, []byte{s.cryptoByte()}, true)
	}
	return s, nil
}

// firstDgramID draws the first datagram ID of a session from r: 31
// random bits, in 0x80000001..0xFFFFFFFF. A blind source cannot guess the
// ID of a datagram it must acknowledge (a server's proof of the client's
// address, a challenge's probe), and an old session's datagrams,
// replayed, fall outside the live session's history. The reference
// numbers from 0 and takes any first ID in that range without a NAK: it
// NAKs every ID between the one it expects (0 at first) and a larger one
// received, and this range counts as older than 0 there
// (CongestionControl::NotifyReceivedDatagram and SequenceGreaterThan,
// source/CongestionControl.cpp); docs/protocols/wirefox.md §3.3.
func firstDgramID(r io.Reader) (uint32, error) {
	var id uint32
	if err := engine.DrawID(r, &id); err != nil {
		return 0, fmt.Errorf("wirefox: datagram ID: %w", err)
	}
	id |= 1 << 31
	if id == 1<<31 {
		id++ // 0x80000000 is half the ID space ahead of 0 at the reference
	}
	return id, nil
}

// PeerID returns this end's PeerID and the peer's (0 until known).
func (s *Session) PeerID() (own, peer uint64) { return s.cfg.PeerID, s.peerID }

// mode returns the mode of channel ch (channel 0 is unordered).
func (s *Session) mode(ch uint8) ChannelMode {
	if ch == 0 {
		return Unordered
	}
	return s.cfg.Channels[ch-1]
}

// Send queues a copy of p, a message blob: its command byte, then the
// payload (docs/protocols/wirefox.md §1.4), on channel opt.Channel,
// reliable or not as opt.Delivery says. A blob longer than SegmentSize
// is fragmented (§3.6). Errors:
//   - engine.ErrClosed after Close, once the peer's DISCONNECT_REQUEST
//     was taken, or once the session ended;
//   - engine.ErrEmptyMessage for an empty p;
//   - engine.ErrUnsupported for a command below CmdUser (internal
//     commands), Passive delivery, a channel not in Config.Channels, a
//     MessageNumber or Params (other protocols' fields);
//   - engine.ErrMessageTooLarge above Config.MaxMessage;
//   - engine.ErrQueueFull when Config.MaxQueued messages are pending.
func (s *Session) Send(p []byte, opt engine.SendOptions) error {
	switch {
	case s.State() >= engine.StateClosing || !s.peerCloseAt.IsZero() || s.failAfter != nil:
		return engine.ErrClosed
	case len(p) == 0:
		return engine.ErrEmptyMessage
	case p[0] < CmdUser:
		return engine.Unsupported("wirefox", "command %d (commands below %d are the protocol's own)", p[0], CmdUser)
	case opt.Delivery == engine.Passive:
		return engine.Unsupported("wirefox", "passive delivery (reliable or unreliable only)")
	case int(opt.Channel) > len(s.cfg.Channels):
		return engine.Unsupported("wirefox", "channel %d (channels 0 to %d: Config.WirefoxChannels lists %d)", opt.Channel, len(s.cfg.Channels), len(s.cfg.Channels))
	}
	if err := engine.CheckParams("wirefox", opt, 256, false); err != nil {
		return err
	}
	switch {
	case len(p) > s.cfg.MaxMessage:
		return engine.TooLarge("wirefox", len(p), s.cfg.MaxMessage)
	case s.pending >= s.cfg.MaxQueued:
		return engine.ErrQueueFull
	}
	var opts byte
	if opt.Delivery == engine.Reliable {
		opts = OptReliable
	}
	s.queue(&outMsg{blob: append([]byte(nil), p...), ch: opt.Channel, opts: opts})
	s.pending++
	s.pendBytes += len(p)
	return nil
}

// queue numbers m on its channel and puts it in line.
func (s *Session) queue(m *outMsg) {
	c := &s.chans[m.ch]
	if s.mode(m.ch) != Unordered {
		m.seq = c.txSeq
		c.txSeq++
	}
	m.nseg = max(1, (len(m.blob)+SegmentSize-1)/SegmentSize)
	c.txq.Push(m)
	if !c.listed {
		c.listed = true
		c.deficit = s.quantum()
		s.active.Push(m.ch)
	}
}

// quantum is a channel's deficit round robin quantum: one datagram.
func (s *Session) quantum() int { return s.cfg.MaxDatagram }

// done accounts for a message fully sent (unreliable) or acknowledged.
func (s *Session) done(m *outMsg) {
	if m.internal {
		return
	}
	s.pending--
	s.pendBytes -= len(m.blob)
}

// Close begins a graceful close at now. A session still in its handshake
// with nothing pending closes at once. Otherwise it enters StateClosing: Send is refused,
// pending messages are still sent, then a reliable DISCONNECT_REQUEST
// goes out (docs/protocols/wirefox.md §3.7) and the session closes when
// the peer's DISCONNECT_ACK arrives, or when Config.Linger runs out (Err
// wraps engine.ErrLingerTimeout if messages were left).
func (s *Session) Close(now time.Time) {
	if s.BeginClose(now, s.pending == 0) {
		s.now = now
	}
}

// Pending returns the messages accepted by Send not yet acknowledged
// (reliable) or sent (unreliable).
func (s *Session) Pending() int { return s.pending }

// SendRoom returns engine.SendRoom of the pending bytes and the
// congestion window, for every channel.
func (s *Session) SendRoom(uint8) int { return engine.SendRoom(s.pendBytes, s.cc.Window()) }

// Stats returns the counters. SRTT is the average of the last 32 RTT
// samples, RTTVar their spread (max − min), RTO the reference's timeout
// (docs/protocols/wirefox.md §3.4).
func (s *Session) Stats() engine.Stats {
	avg, lo, hi := s.rttStats()
	return s.Snapshot(avg, hi-lo, s.rto(), s.cc)
}

// Capabilities reports 1 + len(Config.Channels) channels, reliable and
// unreliable messages up to Config.MaxMessage bytes (command byte
// included), in order on ORDERED channels. Recv gives a message's blob
// as its Data (command byte first, always CmdUser or above), its channel
// and its RELIABLE option as Reliable.
func (s *Session) Capabilities() engine.Capabilities {
	ordered := false
	for _, m := range s.cfg.Channels {
		ordered = ordered || m == Ordered
	}
	return engine.Capabilities{
		MaxMessage: s.cfg.MaxMessage,
		MaxQueued:  s.cfg.MaxQueued,
		Ordered:    ordered,
		Channels:   1 + len(s.cfg.Channels),
		Unreliable: true,
	}
}

// Trim frees the empty queues (the out-of-band messages' included) and
// histories' slack kept for traffic, the duplicate histories' bitmaps
// (8 KiB each) where every ID they cover counts as seen (see
// history.trim), the ID lists' room beyond what a keepalive exchange
// needs (see shrink), the empty maps, the congestion controller's model
// and, with Config.ReferencePeer, the record of datagrams in flight once
// none is left.
func (s *Session) Trim() {
	if s.unackedN == 0 {
		s.byID = engine.FIFO[*outPkt]{} // only acknowledged packets, popped lazily
	}
	s.dgHist.trim(true)
	s.pktHist.trim(false)
	for i := range s.chans {
		c := &s.chans[i]
		c.txq.Trim()
		if len(c.held) == 0 {
			c.held = nil
		}
	}
	if len(s.oob) == 0 {
		s.oob = nil // the array that held the handshake's messages
	}
	s.dueQ.Trim()
	s.dgOrder.Trim()
	s.Inbox.Trim()
	s.pkts = nil
	s.owedAcks, s.owedNaks, s.prevAcks = shrink(s.owedAcks), shrink(s.owedNaks), shrink(s.prevAcks)
	s.ackScratch, s.gaps = shrink(s.ackScratch[:0]), shrink(s.gaps)
	s.dg.Acks, s.dg.Naks = shrink(s.dg.Acks[:0]), shrink(s.dg.Naks[:0])
	s.cc.Trim()
	if s.pace != nil && s.pace.head == len(s.pace.recs) {
		s.pace.recs, s.pace.head = nil, 0
	}
	// Maps keep the buckets a transfer grew: empty ones are made again
	// when needed.
	if len(s.dgrams) == 0 {
		s.dgrams = nil
	}
	if len(s.reasm) == 0 {
		s.reasm = nil
	}
}

// idleIDs is the room an ID list keeps through Trim: what an idle
// stream's keepalive exchange uses (the probe's ID, and with
// Config.RepeatAcks the previous one's again), so that it allocates
// nothing.
const idleIDs = 2

// shrink returns l, or, when it has room for more elements than it
// holds and than idleIDs, a copy with room for idleIDs elements or for
// those it holds: what a transfer grew is given back, and the next
// keepalive exchange finds the room it uses.
func shrink[T any](l []T) []T {
	if cap(l) <= max(len(l), idleIDs) {
		return l
	}
	return append(make([]T, 0, max(len(l), idleIDs)), l...)
}

// rttStats returns the average, minimum and maximum of the RTT samples.
func (s *Session) rttStats() (avg, lo, hi time.Duration) {
	n := min(s.nrtt, rttSamples)
	if n == 0 {
		return 0, 0, 0
	}
	lo, hi = s.rtts[0], s.rtts[0]
	var sum time.Duration
	for _, r := range s.rtts[:n] {
		sum += r
		lo, hi = min(lo, r), max(hi, r)
	}
	return sum / time.Duration(n), lo, hi
}

// rto is the reference's timeout: 105 ms before two samples, then
// 2·avg + 4·(max − min) + 5 ms over the last 32 (§3.4).
func (s *Session) rto() time.Duration {
	if s.nrtt < 2 {
		return rtoInitial
	}
	avg, lo, hi := s.rttStats()
	return 2*avg + 4*(hi-lo) + rtoSlack
}

// sample takes an RTT sample.
func (s *Session) sample(rtt time.Duration) {
	s.rtts[s.nrtt%rttSamples] = rtt
	s.nrtt++
}
