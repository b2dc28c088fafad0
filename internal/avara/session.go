package avara

import (
	"cmp"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
)

var _ engine.Engine = (*Session)(nil)

// Commands (docs/protocols/avara.md §3.6). Negative commands belong to
// the transport; 0..MaxGameCommand are the game's.
const (
	CommandLogin       int8 = -8 // client to server: serial 0, p3 seed, Pascal password
	CommandLogout      int8 = -7 // close: p1 the sender's id
	CommandTOC         int8 = -5 // server to client: p1 its id, p3 its seed, the peers' addresses
	CommandControl     int8 = -4 // p1 0, p2 the sender's cram level
	CommandKill        int8 = -3 // server to clients: p1 the id of a departed client
	CommandKeyAndMouse int8 = 17 // game frames; feed the reference's RTT estimate
	CommandPing        int8 = 31 // game pings; p3 > 0 feeds the RTT estimate
	// MaxGameCommand is the highest game command at the cited commit.
	MaxGameCommand int8 = 36
	// StreamCommand is the command rudp's stream frames ride in: outside
	// the game's 0..MaxGameCommand, so a game never takes it for its own.
	StreamCommand int8 = 100
)

// Bounds of the session's tables.
const (
	// windowSerials is the send window: a message more than this many
	// serials beyond the last acknowledged one is not sent
	// (docs/protocols/avara.md §3.2); the receive side holds messages up
	// to as far ahead.
	windowSerials = 2048
	// heldSlots is the receive ring: one slot per serial of the window.
	heldSlots = windowSerials / 2
	// mapSerials is how far beyond the base an AckMap names serials
	// (bits 0..31).
	mapSerials = 64
	// MaxRecvQueue bounds the messages delivered and not yet taken by
	// Recv. At the bound, as while SetRecvOpen(false) holds, a new game
	// message is dropped unacknowledged (not held either), counted in
	// Stats.Refused, and the peer resends it; acknowledgements, transport
	// messages and duplicates are handled as always.
	MaxRecvQueue = engine.MaxRecvQueue
	// throttleResends is how many resends go out without hearing from the
	// peer before only never-sent messages go out
	// (docs/protocols/avara.md §3.4).
	throttleResends = 3
	// logoutSends is how many times a closing session with
	// Config.ReferencePeer sends its Logout without an acknowledgement
	// before it ends (see Close).
	logoutSends = 2
	// ackRepeats is how many datagrams a session with
	// Config.ReferencePeer sends, heldAckInterval apart, after a message
	// arrived (see ackDue).
	ackRepeats = 3
)

// outMsg is one message to send: accepted by Send, or a transport message.
type outMsg struct {
	serial    uint16
	params    engine.Params
	data      []byte
	transport bool      // not counted in Pending
	sendCount uint8     // transmissions so far, at most 255 on the wire
	firstSent time.Time // zero until sent
	nextSend  time.Time // when it is due again
	acked     bool
	dg        *dgram // its latest transmission, for the controller
}

// dgram is the congestion controller's record of a datagram that carried
// messages; refs counts those whose latest transmission it is.
type dgram struct {
	pkt  congestion.Packet
	refs int
}

// held is a message received ahead of the next expected serial.
type held struct {
	ok     bool
	serial uint16
	params engine.Params
	data   []byte
}

// Session is one end of one Avara connection: a sans-I/O state machine
// implementing engine.Engine. It is not safe for concurrent use. A client
// is established once the TOC gave it its id, a server once the client
// acknowledged its first TOC (validate.go). Err, once it ended, wraps
// engine.ErrHandshakeTimeout (a client without a TOC: the password may be
// wrong or the server full, which the reference does not answer),
// engine.ErrRetransmitLimit (Config.DeadTimeout without an
// acknowledgement), engine.ErrIdleTimeout, engine.ErrLingerTimeout, or
// engine.ErrPeerClosed when the peer logged out with messages of ours
// pending.
type Session struct {
	cfg Config
	engine.Lifecycle

	now       time.Time
	lastPoke  time.Time // when the last keepalive Ping was queued (Config.KeepAlive)
	extraPoke time.Time // a Ping asked for by PingAt; zero if none

	// Identities (docs/protocols/avara.md §3.1).
	id       int8    // our player id: 0 on a server, from the TOC on a client (−1 before)
	peerID   int8    // the connection's id: the client's on a server, 0 on a client
	prevID   int8    // a server's: the client's id before Config.Join changed it (−2: none)
	login    bool    // a server's: the client's Login was taken
	toc      *outMsg // a server's first TOC, until acknowledged (validation)
	seed     int32   // the client's seed: a client's own, a server's from the Login
	table    TOC     // a client's: the last TOC
	peerCram int8

	// Sending (docs/protocols/avara.md §3.2, §3.4).
	nextSerial uint16
	ctl        []*outMsg // transport messages not yet sent, ahead of queue
	queue      engine.FIFO[*outMsg]
	flight     []*outMsg // sent, oldest first, from the oldest unacknowledged
	peerAck    uint16    // the newest ack field processed
	lastAcked  time.Time // when a message was last newly acknowledged
	unheard    int       // resends since the peer was last heard
	est        estimator
	rtt        *engine.RTT // Config.AckRTT
	cc         *congestion.Controller
	pending    int
	pendBytes  int
	lastSent   time.Time // when the last datagram went out
	quota      int       // bytes, Config.ReferencePeer (pacing.go)
	quotaAt    time.Time // up to when the quota was earned

	// Receiving (docs/protocols/avara.md §3.3).
	expected  uint16
	ring      []held // heldSlots, allocated when a message is first held
	nHeld     int
	owe       bool      // something arrived since our last datagram
	oweSince  time.Time // when it first did
	acksSent  int       // datagrams sent since a message last arrived, up to ackRepeats
	loggedOut bool      // the peer's Logout was processed: ack it, then end
	dg        Datagram

	// Config.ReliablePeer (spoof.go).
	seen        []seenSum // checksums of the messages taken, seenSerials/2 slots
	behindSince time.Time // since when the peer's ack fields stay behind peerAck

	logout *outMsg // our Logout, once Close queued it

	// Challenged closes (Config.ChallengeClose, challenge.go).
	chal       engine.Challenge
	challenges uint32  // challenge ids
	probe      *outMsg // the running challenge's probe
}

// withDefaults returns c with defaults filled in, or an error for values
// that cannot be honoured.
func (c Config) withDefaults() (Config, error) {
	c.Version = cmp.Or(c.Version, DefaultVersion)
	c.Cram = cmp.Or(c.Cram, DefaultCram)
	if c.Cram < 0 {
		c.Cram = 0
	}
	c.MaxDatagram = cmp.Or(c.MaxDatagram, MaxDatagram)
	c.AckDelay = cmp.Or(c.AckDelay, DefaultAckDelay)
	c.RTOMin = cmp.Or(c.RTOMin, 10*time.Millisecond)
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
		if !c.Client {
			c.HandshakeTimeout = DefaultServerHandshakeTimeout
		}
	}
	c.DeadTimeout = cmp.Or(c.DeadTimeout, DefaultDeadTimeout)
	c.Linger = cmp.Or(c.Linger, DefaultLinger)
	c.MaxQueued = cmp.Or(c.MaxQueued, engine.DefaultMaxQueued)
	switch {
	case !c.Client && (c.ClientID < 1 || c.ClientID > MaxClients):
		return c, engine.ConfigError("avara", "ClientID %d outside 1..%d", c.ClientID, MaxClients)
	case len(c.Password) > MaxPassword:
		return c, engine.ConfigError("avara", "password of %d bytes, at most %d", len(c.Password), MaxPassword)
	case c.Cram > MaxCram:
		return c, engine.ConfigError("avara", "Cram %d above %d", c.Cram, MaxCram)
	case c.MaxDatagram < MinMaxDatagram || c.MaxDatagram > MaxDatagram:
		return c, engine.ConfigError("avara", "MaxDatagram %d outside %d..%d", c.MaxDatagram, MinMaxDatagram, MaxDatagram)
	case c.LoginPad < 0 || c.LoginPad > MaxData:
		return c, engine.ConfigError("avara", "LoginPad %d outside 0..%d", c.LoginPad, MaxData)
	case c.SkipAfter < 0:
		return c, engine.ConfigError("avara", "SkipAfter %d", c.SkipAfter)
	}
	return c, engine.CheckConfig("avara", c.Client, c.Accept, c.MaxQueued,
		c.AckDelay, c.RTOMin, c.DeadTimeout, c.Linger, c.IdleTimeout, c.KeepAlive)
}

// New returns a session created at now, in StateHandshake. A client's
// Login is due at once. It fails if cfg holds an impossible value (see
// Config).
func New(now time.Time, cfg Config) (*Session, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Session{
		cfg:       cfg,
		Lifecycle: engine.NewLifecycle(now),
		now:       now,
		lastAcked: now,
		quotaAt:   now,
		peerAck:   NothingReceived,
		est:       newEstimator(),
		chal:      engine.Challenge{Tracer: cfg.Tracer},
		cc: congestion.New(now, congestion.Config{
			Algorithm:   cfg.Congestion,
			MaxDatagram: cfg.MaxDatagram,
			Logger:      cfg.Logger,
			Tracer:      cfg.Tracer,
		}),
	}
	if cfg.AckRTT {
		s.rtt = engine.NewRTT(time.Second, cfg.RTOMin, maxRetransmit)
	}
	if cfg.Client {
		s.id, s.peerID, s.seed = -1, 0, cfg.Seed
		pw := append([]byte{byte(len(cfg.Password))}, cfg.Password...)
		pw = append(pw, make([]byte, max(0, cfg.LoginPad-len(pw)))...)
		s.ctl = append(s.ctl, &outMsg{transport: true, data: pw,
			params: engine.Params{Command: CommandLogin, P3: cfg.Seed}})
	} else {
		s.id, s.peerID, s.prevID = 0, cfg.ClientID, -2
	}
	return s, nil
}

// ID returns our player id: 0 on a server, the id the TOC gave on a
// client, −1 before it arrived.
func (s *Session) ID() int8 { return s.id }

// PeerID returns the connection's player id: the client's on a server
// (ClientID, or the id Config.Join gave once the client was validated),
// 0 (the server) on a client.
func (s *Session) PeerID() int8 { return s.peerID }

// Table returns the connection table a client received from its server,
// with ok false before it arrived (a server returns the zero TOC and
// false). Opening direct connections to the listed peers is the
// caller's choice.
func (s *Session) Table() (t TOC, ok bool) {
	return s.table, s.cfg.Client && s.id >= 0
}

// SendTOC queues a TOC message with table t to a server's client: p1 its
// id, p3 its seed (docs/protocols/avara.md §3.1), as a server sends to
// every client when one joins. Errors: engine.ErrUnsupported on a client;
// engine.ErrClosed unless established.
func (s *Session) SendTOC(t TOC) error {
	switch {
	case s.cfg.Client:
		return engine.ErrUnsupported
	case s.State() != engine.StateEstablished:
		return engine.ErrClosed
	}
	s.queueTOC(&t)
	return nil
}

func (s *Session) queueTOC(t *TOC) *outMsg {
	m := &outMsg{transport: true, data: appendTOC(nil, t),
		params: engine.Params{Command: CommandTOC, P1: s.peerID, P3: s.seed}}
	s.ctl = append(s.ctl, m)
	return m
}

// queueControl queues our Control message: p1 0, p2 our cram level.
func (s *Session) queueControl() {
	s.ctl = append(s.ctl, &outMsg{transport: true, params: engine.Params{Command: CommandControl, P2: int16(s.cfg.Cram)}})
}

// maxMessage is the largest data Send accepts: what fits a datagram with
// an AckMap and the longest message header, at most MaxData.
func (s *Session) maxMessage() int {
	return min(MaxData, s.cfg.MaxDatagram-HeaderLen-AckMapLen-MaxMessageHeader)
}

// Send queues a copy of p as a message with the command and parameters of
// opt.Params. Every message is reliable and delivered in order
// (docs/protocols/avara.md §3.2); an empty p is a message without data.
// Errors:
//   - engine.ErrClosed after Close or once the session ended;
//   - engine.ErrUnsupported for a delivery other than Reliable, a
//     Channel or MessageNumber other than 0, or a negative command (those
//     belong to the transport: Login, Logout, TOC, Control...);
//   - engine.ErrMessageTooLarge above Capabilities().MaxMessage (984
//     bytes with the default MaxDatagram);
//   - engine.ErrQueueFull when Config.MaxQueued messages are pending.
//
// A client's messages wait until the TOC has given it its id.
func (s *Session) Send(p []byte, opt engine.SendOptions) error {
	switch {
	case s.State() >= engine.StateClosing:
		return engine.ErrClosed
	case opt.Delivery != engine.Reliable && opt.Delivery <= engine.Passive:
		return engine.Unsupported("avara", "%v delivery (every Avara message is reliable)", opt.Delivery)
	case opt.Params.Command < 0:
		return engine.Unsupported("avara", "command %d (negative commands are the transport's)", opt.Params.Command)
	}
	if err := engine.CheckParams("avara", engine.SendOptions{Delivery: opt.Delivery, Channel: opt.Channel, MessageNumber: opt.MessageNumber}, 1, false); err != nil {
		return err
	}
	switch {
	case len(p) > s.maxMessage():
		return engine.TooLarge("avara", len(p), s.maxMessage())
	case s.pending >= s.cfg.MaxQueued:
		return engine.ErrQueueFull
	}
	s.queue.Push(&outMsg{params: opt.Params, data: append([]byte(nil), p...)})
	s.pending++
	s.pendBytes += len(p)
	return nil
}

// Close begins a graceful close at now (docs/protocols/avara.md §3.5). A
// client not yet established, or a server before the Login, closes at
// once. Otherwise a Logout (p1 our
// id) is queued after what is pending, Send is refused, and the session
// keeps sending, resending and acknowledging until everything, the Logout
// included, is acknowledged (StateClosed, Err nil), or Config.Linger runs
// out (Err wraps engine.ErrLingerTimeout if messages are left).
//
// With Config.ReferencePeer the Logout goes out only once everything
// before it is acknowledged, and the session also ends, Err nil, a
// retransmit time after the Logout's second transmission (itself a
// retransmit time after the first, logoutSends in all) without its
// acknowledgement: the reference drops a connection as soon as it reads
// a Logout, without acknowledging it or what came with it
// (avaraline/Avara aaa5e63: CUDPComm::PacketHandler in
// src/net/CUDPComm.cpp posts kpKillConnection to itself;
// CProtoControl::DelayedPacketHandler hands it to
// CNetManager::HandleDisconnect, which calls CUDPComm::DisconnectSlot,
// and CUDPConnection::CloseSlot clears the connection's port and flushes
// its queues, so nothing, the acknowledgement included, is written to it
// again).
func (s *Session) Close(now time.Time) {
	if !s.BeginClose(now, !s.login) {
		return
	}
	s.now = now
	s.logout = &outMsg{transport: true, params: engine.Params{Command: CommandLogout, P1: s.id}}
	s.queue.Push(s.logout)
}

// SendRoom returns engine.SendRoom of the bytes of pending messages and
// the congestion window (there is one channel).
func (s *Session) SendRoom(uint8) int { return engine.SendRoom(s.pendBytes, s.cc.Window()) }

// Pending returns the number of messages accepted by Send that are not
// yet acknowledged. Transport messages are not counted.
func (s *Session) Pending() int { return s.pending }

// Stats returns a snapshot of the counters. SRTT, RTTVar and RTO are the
// reference estimator's mean, deviation and retransmit time
// (docs/protocols/avara.md §3.4), or with Config.AckRTT the RFC 6298
// estimator's. Retransmits counts messages sent again; Duplicates counts
// messages that had arrived before; Skipped counts the peer's serials
// given up with Config.SkipAfter; Challenges and SpoofsRefused count the
// closes challenged with Config.ChallengeClose and those refused as
// spoofed.
func (s *Session) Stats() engine.Stats {
	if s.rtt != nil {
		return s.Snapshot(s.rtt.SRTT(), s.rtt.RTTVar(), s.rto(), s.cc)
	}
	return s.Snapshot(s.est.srtt(), s.est.dev(), s.rto(), s.cc)
}

// Capabilities reports ordered reliable delivery on one channel: Recv
// gives the messages in serial order, with their command and parameters
// in Params, Reliable always true.
// MaxMessage is min(984, Config.MaxDatagram − 25): a datagram's header
// and AckMap and the longest message header leave room for it.
func (s *Session) Capabilities() engine.Capabilities {
	return engine.Capabilities{
		MaxMessage: s.maxMessage(),
		MaxQueued:  s.cfg.MaxQueued,
		Ordered:    true,
		Channels:   1,
	}
}

// Trim frees what an idle session keeps for traffic: the empty queues,
// the receive ring when nothing is held, and the checksums of the
// messages taken (Config.ReliablePeer).
func (s *Session) Trim() {
	s.queue.Trim()
	s.Inbox.Trim()
	if s.nHeld == 0 {
		s.ring = nil
	}
	s.seen = nil // a later forged copy of an old serial is then a duplicate
	if len(s.flight) == 0 {
		s.flight = nil
	}
	s.cc.Trim()
}
