package rudp

import (
	"cmp"
	"errors"
	"io"
	"net"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/socket"
)

// Delivery is how a message is delivered. Which modes exist depends on the
// protocol: Airhook has only Reliable.
type Delivery uint8

const (
	// Reliable messages are delivered exactly once, or the conn fails.
	Reliable Delivery = 0
	// Unreliable messages are delivered at most once.
	Unreliable Delivery = 1
	// Passive messages are delivered at most once and dropped first under
	// pressure.
	Passive Delivery = 2
)

// String returns "reliable", "unreliable" or "passive".
func (d Delivery) String() string { return engine.Delivery(d).String() }

// Message is one protocol message with its metadata.
type Message struct {
	// Data is the message body. Airhook: 1 to 256 bytes; POROUS: up to
	// Config.MaxMessage bytes; LLUDP: up to 1190 bytes; Wirefox: the
	// command byte, 15 (USER_PACKET) or above, then the payload, up to
	// Config.MaxMessage bytes in all (a lower command fails with
	// ErrUnsupported; only user commands are delivered); Avara: up to 984
	// bytes (MessageConn.MaxMessage, less with a Config.MTU below 1024).
	Data []byte
	// Delivery is the delivery mode; the zero value is Reliable; Wirefox
	// refuses Passive. On a received message it is Unreliable only where
	// the wire says so (LLUDP's and Wirefox's reliable flags); POROUS does
	// not carry the mode, so its messages read as Reliable.
	Delivery Delivery
	// Channel is the POROUS channel, below Config.Channels, or the
	// Wirefox channel, 0 to len(Config.WirefoxChannels); 0 on the other
	// protocols.
	Channel uint8
	// Number is the LLUDP message number in the template's full form:
	// High n is n (1..254), Medium n is 0xFF00|n, Low n is 0xFFFF0000|n,
	// Fixed numbers are 0xFFFFFFFA..0xFFFFFFFF. The numbers LLUDP itself
	// uses (StartPingCheck 1, CompletePingCheck 2, UseCircuitCode
	// 0xFFFF0003, PacketAck, OpenCircuit, CloseCircuit) are refused with
	// ErrUnsupported. 0 on the other protocols.
	Number uint32
	// Command is the Avara message's command: the game's are 0 to 36 at
	// the cited commit, any of 0..127 is carried; negative commands
	// belong to the transport (login, TOC, logout...) and are refused
	// with ErrUnsupported. The Avara fields are 0 on the other protocols,
	// which refuse nonzero ones with ErrUnsupported.
	Command int8
	// P1 is the Avara message's first parameter (the reference's p1,
	// one byte on the wire).
	P1 int8
	// P2 is the Avara message's second parameter (p2, 16 bits).
	P2 int16
	// P3 is the Avara message's third parameter (p3, 32 bits).
	P3 int32
}

// params returns m's Avara fields as the engine takes them.
func (m *Message) params() engine.Params {
	return engine.Params{Command: m.Command, P1: m.P1, P2: m.P2, P3: m.P3}
}

// MessageConn is a message-oriented conn that speaks a protocol's own
// messages on the wire, with nothing rudp-specific added, so that it can
// talk to any implementation of that protocol:
//
//   - POROUS: messages of 0 to Config.MaxMessage bytes on Config.Channels
//     channels. Reliable messages are delivered exactly once and in order
//     within their channel; Unreliable and Passive ones at most once, and
//     a lost one is skipped rather than waited for (Passive messages never
//     hold back later ones, Unreliable messages never do). Close delivers
//     what was written, then disconnects; the peer's reads then return
//     io.EOF.
//   - Airhook: messages of 1 to 256 bytes, delivered reliably and exactly
//     once, but not necessarily in the order sent (a message lost and
//     resent arrives after later ones, as with the reference). Airhook has
//     no close message: Close delivers what was written (within
//     Config.Linger) and then stops answering; the peer notices through
//     its own idle timeout.
//   - LLUDP: each message is a message number (Message.Number) and a body
//     of up to 1190 bytes, reliable or not, delivered in arrival order;
//     zerocoding, acks, resends and pings are handled here. The dialing
//     end opens the circuit with UseCircuitCode (Config.Circuit). Close
//     delivers what was written, then sends CloseCircuit; the peer's reads
//     then return io.EOF.
//   - Wirefox: each message is a command byte (15 and above are the
//     application's; 15 is USER_PACKET) followed by its payload, up to
//     Config.MaxMessage bytes (16 MiB at most, fragmented into 1200-byte
//     segments), reliable or unreliable, on channel 0 (unordered) or a
//     channel of Config.WirefoxChannels (ordered, sequenced or
//     unordered, as the table says; it must mirror the peer's).
//     Handshake, acks, NAKs and resends are handled here; only user
//     commands are delivered. Close delivers what was written, then sends
//     DISCONNECT_REQUEST; the peer's reads then return io.EOF. Datagrams
//     are encrypted as the reference's libsodium build does with
//     Config.WirefoxEncrypt, which both ends must agree on (else
//     ErrIncompatible).
//   - Avara: each message is a command with parameters (Message.Command,
//     P1, P2, P3) and up to 984 bytes of data, reliable and delivered in
//     order. The dialing end is a client: it logs in with
//     Config.AvaraPassword and is established once the server's table
//     (TOC) gives it its player id (AvaraClientID). A MessageListener is
//     the server: each client gets a conn and a player id from 1 to 7;
//     an eighth client's login is ignored, as the reference's full server
//     does, and its Dial ends in ErrHandshakeTimeout. When a client joins
//     or leaves, every other client is sent the new table (AvaraPeers).
//     Close delivers what was written, then sends a Logout; the peer's
//     reads then return io.EOF. Avara has no keepalive: the conn lives
//     until Close, a Logout, or a message unacknowledged for 120 s.
//
// As a net.Conn, each Write sends one reliable message and each Read
// returns one whole message; a buffer too short for the next message gets
// io.ErrShortBuffer and the message stays queued. WriteMessage and
// ReadMessage carry the metadata. A MessageConn is safe for concurrent use.
type MessageConn struct {
	connBase

	// guarded by a.mu
	queue     []engine.Message // delivered, not yet read
	head      int
	maxQueued int // engine's MaxQueued
	queued    int // bytes of queue, as Config.MaxRecvBuffer counts them
	maxRecv   int // Config.MaxRecvBuffer
	maxMsg    int
	accepted  *acceptQueue[*MessageConn] // accepted conns: their listener's queue
	refused   bool                       // Config.AcceptCircuit refused the circuit
	closer    engine.PeerCloser          // the engine, if it lingers after the peer's close

	roster engine.Roster // its listener's shared state, if the protocol has one
}

var _ net.Conn = (*MessageConn)(nil)

func newMessageConn(cfg *Config, raddr net.Addr, q *acceptQueue[*MessageConn]) *MessageConn {
	c := &MessageConn{accepted: q, maxRecv: cfg.MaxRecvBuffer}
	c.connBase = newBase(cfg, raddr, c)
	return c
}

func (c *MessageConn) attach(ep *socket.Endpoint, eng engine.Engine, tr *connTrace) {
	c.a = newAssoc(ep, c.raddr, eng, tr)
	c.a.up = c
	c.bind(eng)
	if c.accepted != nil && c.cfg.roster != nil {
		c.roster = c.cfg.roster
		c.roster.Join(eng, rosterConn{c})
	}
}

// ReadMessage returns the next message, blocking until one arrives, the
// read deadline passes (os.ErrDeadlineExceeded), or the conn fails or is
// closed (net.ErrClosed). Once the peer has closed (POROUS, LLUDP) and
// every message it sent has been read, it returns io.EOF, or an error
// wrapping ErrPeerClosed if messages written here were left unconfirmed;
// on POROUS that is as soon as the peer's Disconnect is believed, while
// the association still answers the peer's repeats before Done closes.
// The returned Data is the caller's.
func (c *MessageConn) ReadMessage() (Message, error) {
	var m Message
	err := c.read(func(e engine.Message) error {
		m = Message{Data: e.Data, Channel: e.Channel, Number: e.MessageNumber,
			Command: e.Params.Command, P1: e.Params.P1, P2: e.Params.P2, P3: e.Params.P3}
		if !e.Reliable {
			m.Delivery = Unreliable // where the wire tells (LLUDP, Wirefox)
		}
		return nil
	})
	return m, err
}

// Read reads one whole message into p and returns its length. If p is
// shorter than the message, Read returns io.ErrShortBuffer and the message
// stays queued for the next call. On LLUDP, p receives the message in its
// template form: the message number as on the wire (1, 2 or 4 bytes,
// before zerocoding) followed by the body, as Write takes it. On Avara,
// p receives an 8-byte header, the command, p1, p2 and p3 (little-endian,
// as on the wire), followed by the data, as Write takes it.
func (c *MessageConn) Read(p []byte) (int, error) {
	n := 0
	err := c.read(func(e engine.Message) error {
		var num [engine.MaxHeaderLen]byte
		k := 0
		if h := c.cfg.proto.Header; h != nil {
			k = h.Put(num[:], e)
		}
		if len(p) < k+len(e.Data) {
			return io.ErrShortBuffer
		}
		n = copy(p, num[:k])
		n += copy(p[k:], e.Data)
		return nil
	})
	return n, err
}

// read waits for the next message and gives it to take; the message is
// consumed when take returns nil.
func (c *MessageConn) read(take func(engine.Message) error) error {
	return c.waitIO("read", &c.rd, func() (bool, error) {
		if c.head == len(c.queue) {
			if c.over && c.err == nil {
				return false, io.EOF // the peer closed (POROUS, LLUDP)
			}
			if c.closer != nil {
				// The peer closed, while the association may linger to
				// answer its repeats (POROUS's TIME-WAIT): tell the
				// reader now.
				if closed, err := c.closer.PeerClosed(); closed {
					if err == nil {
						err = io.EOF
					}
					return false, err
				}
			}
			return false, nil
		}
		if err := take(c.queue[c.head]); err != nil {
			return false, err
		}
		c.queued -= recvCost(c.queue[c.head])
		c.queue[c.head] = engine.Message{}
		c.head++
		if c.head == len(c.queue) {
			c.queue, c.head = c.queue[:0], 0
		}
		return true, nil
	})
}

// WriteMessage sends one message. It blocks while the protocol's send
// queue is full. Errors: ErrMessageTooLarge, ErrEmptyMessage,
// ErrUnsupported (a Delivery, Channel, Number or Avara field the protocol
// cannot express), os.ErrDeadlineExceeded, net.ErrClosed, or why the conn
// failed. m.Data is copied before WriteMessage returns.
func (c *MessageConn) WriteMessage(m Message) error {
	opt := engine.SendOptions{Delivery: engine.Delivery(m.Delivery), Channel: m.Channel, MessageNumber: m.Number,
		Params: m.params()}
	return c.waitIO("write", &c.wd, func() (bool, error) {
		if c.over {
			return false, c.failure() // why it ended, not the engine's "closed"
		}
		if c.closer != nil {
			if closed, err := c.closer.PeerClosed(); closed {
				return false, cmp.Or(err, errPeerGone) // lingering to answer its repeats
			}
		}
		if c.a.eng.Pending() >= c.maxQueued {
			return false, nil
		}
		if err := c.a.eng.Send(m.Data, opt); err != nil {
			if errors.Is(err, engine.ErrQueueFull) {
				return false, nil // a byte bound (POROUS): wait for confirmations
			}
			return false, err
		}
		c.a.settleLocked(time.Now())
		return true, nil
	})
}

// Write sends p as one reliable message and returns len(p), or 0 and an
// error as WriteMessage does. On LLUDP, p is the message in its template
// form: the message number as on the wire (FF FF 00 01 for Low 1), then
// the body; a p too short to hold a number fails with ErrUnsupported. On
// Avara, p is the 8-byte header (command, p1, p2, p3, little-endian) and
// then the data, as Read returns it; a p shorter than the header fails
// with ErrUnsupported.
func (c *MessageConn) Write(p []byte) (int, error) {
	m := Message{Data: p}
	if h := c.cfg.proto.Header; h != nil {
		e, err := h.Parse(p)
		if err != nil {
			return 0, opError("write", c.LocalAddr(), c.raddr, err)
		}
		m = Message{Number: e.MessageNumber, Command: e.Params.Command, P1: e.Params.P1,
			P2: e.Params.P2, P3: e.Params.P3, Data: e.Data}
	}
	if err := c.WriteMessage(m); err != nil {
		return 0, err
	}
	return len(p), nil
}

// MaxMessage is the largest message the protocol carries, in bytes
// (Airhook: 256; Avara: 984, the data without the command and
// parameters).
func (c *MessageConn) MaxMessage() int { return c.maxMsg }

// Close closes the conn for the caller at once: blocked and future calls
// return net.ErrClosed. In the background, messages already written are
// still delivered, within Config.Linger, and then the protocol's close,
// if it has one, goes to the peer. Messages not yet read are dropped
// (those queued, and those received after a message still missing, which
// POROUS holds back to deliver them in order), and further messages from
// the peer are refused without being acknowledged; Stats.Unread counts
// both. It returns an error wrapping net.ErrClosed if
// already closed.
func (c *MessageConn) Close() error {
	return c.close(func(now time.Time) {
		c.a.discard(c.unread())
		c.queue, c.head, c.queued = nil, 0, 0
		if !c.over {
			c.beginClose(now)
		}
	})
}

// unread is how many messages the conn has taken and not handed to the
// caller: its queue, and those the engine holds until it can deliver
// them (engine.Holder). Call with a.mu held.
func (c *MessageConn) unread() int {
	n := len(c.queue) - c.head
	if h, ok := c.a.eng.(engine.Holder); ok {
		n += h.Held()
	}
	return n
}

// deliver implements upper.
func (c *MessageConn) deliver(_ time.Time, m engine.Message) {
	if c.closed {
		c.a.discard(1)
		return
	}
	c.queue = append(c.queue, m)
	c.queued += recvCost(m)
}

// RecvMessageOverhead is what Config.MaxRecvBuffer counts for each
// message a message conn holds besides its data, in bytes: about what
// the conn keeps per message (its metadata and queue slot).
const RecvMessageOverhead = 64

// recvCost is what m counts against Config.MaxRecvBuffer.
func recvCost(m engine.Message) int { return len(m.Data) + RecvMessageOverhead }

// recvOpen implements upper: the conn takes new messages while it is open
// and holds less than Config.MaxRecvBuffer.
func (c *MessageConn) recvOpen() bool { return !c.closed && c.queued < c.maxRecv }

// settled implements upper: a message conn keeps what it has.
func (c *MessageConn) settled(time.Time) time.Time { return time.Time{} }

// pump implements upper: messages go to the engine directly in
// WriteMessage; here only the handshake completes.
//
// A listener's conn is ready for Accept once its handshake is done, which
// validates the peer for POROUS (it acknowledged our nonce) and Airhook
// (it echoed our session ID); LLUDP has no such proof, so its circuit
// must also pass Config.AcceptCircuit, when set.
func (c *MessageConn) pump(now time.Time) {
	switch st := c.a.eng.State(); {
	case c.opened || c.refused || st == engine.StateHandshake:
		return
	case st == engine.StateClosed && c.a.eng.Err() != nil:
		return // the handshake failed (ErrIncompatible, a timeout): never opened
	}
	if c.accepted != nil && c.cfg.AcceptCircuit != nil {
		if circ, ok := circuitOf(c.a.eng); ok && !c.cfg.AcceptCircuit(circ) {
			c.refused = true
			c.a.ep.Log().Debug("rudp: circuit refused by Config.AcceptCircuit", "peer", c.raddr, "code", circ.Code)
			c.beginClose(now)
			return
		}
	}
	c.markOpened(now)
	if c.accepted != nil && !c.accepted.ready(c) {
		c.beginClose(now)
	}
}

// ended implements upper.
func (c *MessageConn) ended(err error) {
	c.endedBase(err)
	if c.roster != nil {
		c.roster.Leave()
	}
	if c.accepted != nil && !c.opened {
		c.accepted.forget(c)
	}
}

// failure implements kind.
func (c *MessageConn) failure() error {
	switch {
	case c.err != nil:
		return c.err
	case c.closed || c.engClosing:
		return errClosed // this end closed
	}
	return errPeerGone // the peer closed, gracefully
}

// abortLocked implements kind: message protocols carry no reset, so
// nothing is sent and the association just ends.
func (c *MessageConn) abortLocked(uint8) {}

func (c *MessageConn) base() *connBase { return &c.connBase }

// Circuit returns the circuit an LLUDP peer opened with its UseCircuitCode
// message: on an accepted conn, the code, session and agent IDs it
// presented (check them before trusting the peer); on a dialed conn,
// Config.Circuit with the code actually sent. ok is false for other
// protocols and before the circuit is known.
func (c *MessageConn) Circuit() (circuit Circuit, ok bool) {
	if c.a == nil {
		return Circuit{}, false
	}
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	return circuitOf(c.a.eng)
}

// rosterConn is a listener's conn as its protocol's engine.Roster sees
// it.
type rosterConn struct{ c *MessageConn }

// Ended implements engine.RosterConn.
func (r rosterConn) Ended() bool { return r.c.done.Load() == closedChan }

// Locked implements engine.RosterConn.
func (r rosterConn) Locked(f func()) {
	a := r.c.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.over {
		return
	}
	f()
	a.settleLocked(time.Now())
}

// AvaraPeers returns the Avara connection table, each player with the
// address the server sees it at. On a dialed conn it is the table of the
// server's latest TOC (nil before the login was accepted), this client
// included (see AvaraClientID); on a conn of a MessageListener, the
// listener's current table of clients. Opening direct conns to the
// players listed, as the reference's clients do for the game's
// peer-to-peer traffic, is the caller's choice: this package relays
// nothing between clients and has no client-to-client mode. Only IPv4
// addresses fit the table; others are left out. Nil on other protocols.
func (c *MessageConn) AvaraPeers() []AvaraPeer {
	if c.a == nil {
		return nil
	}
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	return avaraPeers(c.a.eng, c.roster)
}

// AvaraClientID returns the player id (1..7) of the client end of the
// conn: on a dialed conn this end's id, given by the server's TOC; on a
// conn of a MessageListener the peer's. It is 0 on other protocols and
// before the login was accepted.
func (c *MessageConn) AvaraClientID() int8 {
	if c.a == nil {
		return 0
	}
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	return avaraClientID(c.a.eng, c.roster != nil)
}

// names implements kind.
func (c *MessageConn) names() (what, other string) { return "message conn", "streams (Listen)" }

// bind takes eng's limits.
func (c *MessageConn) bind(eng engine.Engine) {
	caps := eng.Capabilities()
	c.maxQueued = caps.MaxQueued
	c.maxMsg = caps.MaxMessage
	c.closer, _ = eng.(engine.PeerCloser)
}

// crossed implements crosser: eng is the server engine of a simultaneous
// open.
func (c *MessageConn) crossed(_ time.Time, eng engine.Engine) { c.bind(eng) }

// claim implements acceptable.
func (c *MessageConn) claim() bool { return claimConn(c.a, &c.accepted, c) }
