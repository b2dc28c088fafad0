package lludp

import (
	"cmp"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
)

var _ engine.Engine = (*Session)(nil)

// Averaged ping bounds and start (docs/protocols/lludp.md §3.4, §6).
const (
	pingMin     = 100 * time.Millisecond
	pingMax     = 2 * time.Second
	pingInitial = time.Second
	// ackRTTInitial is the resend timeout with Config.AckRTT before the
	// first sample: RFC 6298 §2.1's 1 s.
	ackRTTInitial = time.Second
	// rtoFactor: the resend timeout is 5 × the averaged ping.
	rtoFactor = 5
	// closeCopies is how many CloseCircuit messages a graceful close
	// sends, one round trip apart (it is unreliable, docs/protocols/lludp.md §3.1).
	closeCopies = 2
	// challengeSlack is added to two round trips for the answer to a
	// challenge ping (see challengeClose).
	challengeSlack = 10 * time.Millisecond
)

// Session is one end of one LLUDP circuit: a sans-I/O state machine
// implementing engine.Engine. It is not safe for concurrent use. It is in
// StateHandshake until the circuit is open (a client's UseCircuitCode
// acknowledged, or a server's received). Err, once it ended, is
// engine.ErrHandshakeTimeout, engine.ErrIdleTimeout, an error wrapping
// engine.ErrRetransmitLimit (for a client's UseCircuitCode, wrapping
// engine.ErrHandshakeTimeout too), engine.ErrLingerTimeout, or
// engine.ErrPeerClosed when the peer sent CloseCircuit with messages of
// ours pending.
type Session struct {
	cfg Config
	engine.Lifecycle

	now time.Time

	// Circuit (docs/protocols/lludp.md §3.1).
	open        bool       // client: UseCircuitCode acknowledged; server: received
	peerCircuit Circuit    // server: the peer's UseCircuitCode
	replaced    [4]Circuit // server: the last circuits replaced by restarts
	nReplaced   int
	hello       *outMsg // client: UseCircuitCode until it is first sent

	// Sending (docs/protocols/lludp.md §3.2, §3.4).
	nextSeq uint32
	queue   engine.FIFO[*outMsg]
	unacked map[uint32]*outMsg // by sequence number
	resend  msgList            // in flight, oldest transmission first
	suspect msgList            // lost by RACK, waiting for the resend timeout (without AckRTT)
	lost    msgList            // declared lost, waiting to be resent
	cc      *congestion.Controller
	// proven: the peer acknowledged a datagram of ours or answered a
	// ping (see PeerProven).
	proven bool
	// ackSample is the RTT of the newest datagram sent once that the
	// datagram being handled acknowledged, 0 if none.
	ackSample time.Duration
	free      []*outMsg
	pending   int
	pendBytes int // bytes of the pending messages' bodies

	// Acknowledgements owed (docs/protocols/lludp.md §3.3).
	acks     ackRing
	prevAcks []uint32  // the acks owed that the last PacketAck carried (Config.RepeatAcks)
	ackSince time.Time // when the oldest owed ack was queued

	// Pings (docs/protocols/lludp.md §3.7).
	pongs      [maxPongs]uint8
	nPongs     int
	pingID     uint8 // ID of the last StartPingCheck sent
	nextPingID uint8
	pingsOut   int // StartPingChecks sent and not answered, up to 255
	pingAt     time.Time
	extraPing  time.Time // a ping asked for by PingAt; zero if none
	avgPing    time.Duration
	pinged     bool        // avgPing holds a sample
	rtt        *engine.RTT // Config.AckRTT: the RFC 6298 estimator
	backoffAt  time.Time   // when rtt was last backed off

	// Receiving (docs/protocols/lludp.md §3.5).
	win     window
	scratch []byte
	pkt     Packet

	// Challenge of a close or restart announced while open (see
	// challenged).
	chal      engine.Challenge
	chalEvery time.Duration // the running challenge's ping interval

	// Closing.
	closeSent int
	closeNext time.Time
}

// withDefaults returns c with defaults filled in, or an error for values
// that cannot be honoured.
func (c Config) withDefaults() (Config, error) {
	c.MaxDatagram = cmp.Or(c.MaxDatagram, DefaultMaxDatagram)
	c.AckDelay = cmp.Or(c.AckDelay, DefaultAckDelay)
	c.ResendLimit = cmp.Or(c.ResendLimit, DefaultResendLimit)
	c.RTOMin = cmp.Or(c.RTOMin, DefaultRTOMin)
	c.RTOMax = cmp.Or(c.RTOMax, DefaultRTOMax)
	c.KeepAlive = cmp.Or(c.KeepAlive, DefaultKeepAlive)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, DefaultIdleTimeout)
	c.Linger = cmp.Or(c.Linger, engine.DefaultLinger)
	c.MaxQueued = cmp.Or(c.MaxQueued, engine.DefaultMaxQueued)
	c.InitialSeq = cmp.Or(c.InitialSeq, 1)
	switch {
	case c.MaxDatagram < MinMaxDatagram:
		return c, engine.ConfigError("lludp", "MaxDatagram %d below %d", c.MaxDatagram, MinMaxDatagram)
	case c.AckDelay < 0:
		return c, engine.ConfigError("lludp", "AckDelay %v", c.AckDelay)
	case c.RTOMin < 0 || c.RTOMax < 0 || c.RTOMin > c.RTOMax:
		return c, engine.ConfigError("lludp", "RTO bounds %v/%v", c.RTOMin, c.RTOMax)
	case c.InitialSeq >= SeqWrap:
		return c, engine.ConfigError("lludp", "InitialSeq %#x not below 2^24", c.InitialSeq)
	}
	return c, engine.CheckConfig("lludp", c.Client, c.Accept, c.MaxQueued, c.HandshakeTimeout, c.Linger)
}

// New returns a session created at now, in StateHandshake. A client's
// UseCircuitCode is due at once. It fails if cfg holds an impossible value
// (see Config).
func New(now time.Time, cfg Config) (*Session, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Session{
		cfg:       cfg,
		Lifecycle: engine.NewLifecycle(now),
		now:       now,
		nextSeq:   cfg.InitialSeq,
		unacked:   make(map[uint32]*outMsg),
		avgPing:   pingInitial,
		chal:      engine.Challenge{Tracer: cfg.Tracer},
		cc: congestion.New(now, congestion.Config{
			Algorithm:   cfg.Congestion,
			MaxDatagram: min(cfg.MaxDatagram, MTUBytes),
			Logger:      cfg.Logger,
			Tracer:      cfg.Tracer,
		}),
	}
	if cfg.AckRTT {
		s.rtt = engine.NewRTT(ackRTTInitial, cfg.RTOMin, cfg.RTOMax)
	}
	if cfg.Client {
		s.hello = &outMsg{number: UseCircuitCode, reliable: true, hello: true, body: appendCircuit(nil, cfg.Circuit)}
	}
	return s, nil
}

// Circuit returns the circuit: on a server, the peer's UseCircuitCode body,
// with ok false until one is accepted; on a client, Config.Circuit.
func (s *Session) Circuit() (Circuit, bool) {
	if s.cfg.Client {
		return s.cfg.Circuit, true
	}
	return s.peerCircuit, s.open
}

// maxBuilt is the most bytes of a datagram before appended acks.
func (s *Session) maxBuilt() int { return min(MTUBytes, s.cfg.MaxDatagram) }

// Send queues a copy of p as message number opt.MessageNumber (docs/protocols/lludp.md
// §1.2), sent reliably (acknowledged and resent, docs/protocols/lludp.md §3.3–3.4) or
// unreliably as opt.Delivery says. An empty p is a message with no body.
// Errors:
//   - engine.ErrClosed after Close or once the session ended;
//   - engine.ErrUnsupported for Passive or an unknown Delivery, nonzero Params, a Channel
//     other than 0, a number outside the template ranges (High 1..254,
//     Medium 1..254, Low 1..65529, Fixed 0xFFFFFFFA..0xFFFFFFFF, see
//     NumberLen) or a transport number (StartPingCheck,
//     CompletePingCheck, UseCircuitCode, PacketAck, OpenCircuit,
//     CloseCircuit);
//   - engine.ErrMessageTooLarge for a body longer than
//     Capabilities().MaxMessage (1190 bytes by default), whatever the
//     number's length;
//   - engine.ErrQueueFull when Config.MaxQueued messages are pending.
//
// Messages go out in Send order, one per datagram, once the circuit is
// open; they are zerocoded when that makes them strictly shorter.
func (s *Session) Send(p []byte, opt engine.SendOptions) error {
	switch {
	case s.State() >= engine.StateClosing:
		return engine.ErrClosed
	case opt.Delivery == engine.Passive:
		return engine.Unsupported("lludp", "passive delivery (reliable or unreliable only)")
	}
	if err := engine.CheckParams("lludp", opt, 1, true); err != nil {
		return err
	}
	switch {
	case !sendable(opt.MessageNumber):
		return engine.Unsupported("lludp", "message number %#x (outside the template's ranges, or one the transport uses)", opt.MessageNumber)
	case len(p) > s.maxMessage():
		return engine.TooLarge("lludp", len(p), s.maxMessage())
	case s.pending >= s.cfg.MaxQueued:
		return engine.ErrQueueFull
	}
	var m *outMsg
	if n := len(s.free); n > 0 {
		m, s.free = s.free[n-1], s.free[:n-1]
	} else {
		m = new(outMsg)
	}
	m.number, m.reliable, m.resends = opt.MessageNumber, opt.Delivery == engine.Reliable, 0
	m.body = append(m.body[:0], p...)
	s.queue.Push(m)
	s.pending++
	s.pendBytes += len(p)
	return nil
}

// release returns m to the free list.
func (s *Session) release(m *outMsg) {
	if m.hello {
		return
	}
	s.pendBytes -= len(m.body)
	m.prev, m.next = nil, nil
	s.free = append(s.free, m)
}

// Close begins a graceful close at now. A server without a circuit, or a
// client that has neither sent its UseCircuitCode nor anything pending,
// closes at once. Otherwise the session
// enters StateClosing: Send is refused, queued and unacknowledged messages
// are still sent and resent, the peer is still answered and owed acks go
// out at once; when nothing is pending, CloseCircuit is sent twice, one
// round trip apart (it is unreliable; there is no close handshake,
// docs/protocols/lludp.md §3.1), and the session reaches StateClosed with Err nil. When
// Config.Linger runs out first, one CloseCircuit goes out with the next
// Poll and Err wraps engine.ErrLingerTimeout if messages are left.
func (s *Session) Close(now time.Time) {
	if s.BeginClose(now, !s.cfg.Client || s.hello != nil && s.pending == 0) {
		s.now, s.closeNext = now, now
	}
}

// SendRoom returns engine.SendRoom of the bytes of pending messages and
// the congestion window (there is one channel).
func (s *Session) SendRoom(uint8) int { return engine.SendRoom(s.pendBytes, s.cc.Window()) }

// Pending returns the number of messages accepted by Send that are queued,
// or were sent reliably and are not yet acknowledged. The client's
// UseCircuitCode is not counted.
func (s *Session) Pending() int { return s.pending }

// Stats returns a snapshot of the counters. SRTT is the viewer's averaged
// ping (docs/protocols/lludp.md §3.4) and RTTVar is 0, except with Config.AckRTT once an ack
// gave a sample, when both come from the RFC 6298 estimator; RTO is the
// current resend timeout.
// Retransmits counts resends; Duplicates counts datagrams whose message
// had arrived before (acknowledged again, not delivered).
func (s *Session) Stats() engine.Stats {
	if s.rtt != nil && s.rtt.Sampled() {
		return s.Snapshot(s.rtt.SRTT(), s.rtt.RTTVar(), s.rto(), s.cc)
	}
	return s.Snapshot(s.avgPing, 0, s.rto(), s.cc)
}

// maxMessage is the largest body Send accepts: what fits the message
// budget with a 4-byte number.
func (s *Session) maxMessage() int { return s.maxBuilt() - HeaderLen - 4 }

// Capabilities reports unordered delivery on one channel with reliable
// and unreliable messages: Recv gives them in arrival order (LLUDP has
// no ordering, docs/protocols/lludp.md §3.6), MessageNumber the message's
// number and Reliable its RELIABLE flag. MaxMessage is the largest body, for every
// message number: min(MTUBytes, Config.MaxDatagram) − 6 (header) − 4 (a
// Low or Fixed number), 1190 bytes by default. (The viewer's budget would
// leave a High number 3 bytes more and a Medium one 2; a single limit
// keeps the engine contract simple.)
func (s *Session) Capabilities() engine.Capabilities {
	return engine.Capabilities{
		MaxMessage: s.maxMessage(),
		MaxQueued:  s.cfg.MaxQueued,
		Channels:   1,
		Unreliable: true,
	}
}

// roundTrip is the session's round-trip estimate: the RFC 6298 SRTT with
// Config.AckRTT once sampled, else the averaged ping.
func (s *Session) roundTrip() time.Duration {
	if s.rtt != nil && s.rtt.Sampled() {
		return s.rtt.SRTT()
	}
	return s.avgPing
}

// rto is the resend timeout: 5 × the averaged ping within
// [Config.RTOMin, Config.RTOMax] (docs/protocols/lludp.md §3.4), or with Config.AckRTT the
// RFC 6298 RTO but at least 1.5 × SRTT (within RTOMax): RACK finds
// ordinary losses within a round trip, so the timeout is the last resort,
// and acknowledgements that wait up to AckDelay on a steady path (where
// RTTVAR is tiny) must not read as losses. POROUS keeps the same headroom.
func (s *Session) rto() time.Duration {
	if s.rtt != nil {
		return max(s.rtt.RTO(), min(s.rtt.SRTT()*3/2, s.cfg.RTOMax))
	}
	return max(s.cfg.RTOMin, min(rtoFactor*s.avgPing, s.cfg.RTOMax))
}

// timeoutAt is when m, in flight, counts as lost by timeout: rto after
// its last transmission, or with Config.AckRTT, where RACK finds
// ordinary losses, as the controller's retransmission timer says (one
// datagram per timeout, congestion.Controller.TimeoutAt).
func (s *Session) timeoutAt(m *outMsg) time.Time {
	if s.rtt != nil {
		return s.cc.TimeoutAt(&m.pkt, s.rto())
	}
	return m.sentAt.Add(s.rto())
}

// Trim frees what an idle session keeps for traffic: the ring of owed
// acks when none is owed, the empty queues, the zerocoding scratch buffer,
// the recycled messages and the congestion controller's model when
// nothing is in flight; with Config.DeliverDuplicates, which makes it matter only for
// transport messages, the duplicate window too (it starts again from the
// next number). They are allocated again when needed.
func (s *Session) Trim() {
	s.acks.trim()
	s.prevAcks = nil
	s.cc.Trim()
	s.queue.Trim()
	s.Inbox.Trim()
	s.scratch = nil
	s.free = nil
	if s.cfg.DeliverDuplicates {
		s.win = window{}
	}
}
