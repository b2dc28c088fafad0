package rudp

import (
	"context"
	"io"
	"net"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Delivery is how a message is delivered. Which modes exist depends on the
// protocol: Airhook has only Reliable.
type Delivery uint8

const (
	// Reliable messages are delivered exactly once, or the conn fails.
	Reliable Delivery = Delivery(engine.Reliable)
	// Unreliable messages are delivered at most once.
	Unreliable Delivery = Delivery(engine.Unreliable)
	// Passive messages are delivered at most once and dropped first under
	// pressure.
	Passive Delivery = Delivery(engine.Passive)
)

// String returns "reliable", "unreliable" or "passive".
func (d Delivery) String() string { return engine.Delivery(d).String() }

// Message is one protocol message with its metadata.
type Message struct {
	// Data is the message body. Airhook: 1 to 256 bytes.
	Data []byte
	// Delivery is the delivery mode; the zero value is Reliable.
	Delivery Delivery
	// Channel is the channel on protocols that have them; 0 otherwise.
	Channel uint8
	// Number is the protocol's message number where it has one; 0 otherwise.
	Number uint32
}

// MessageConn is a message-oriented conn that speaks a protocol's own
// messages on the wire, with nothing rudp-specific added, so that it can
// talk to any implementation of that protocol. Over Airhook, each message
// is one Airhook message: 1 to 256 bytes, delivered reliably and exactly
// once, but not necessarily in the order sent (a message lost and resent
// arrives after later ones, as with the reference implementation).
//
// As a net.Conn, each Write sends one message and each Read returns one
// whole message; a buffer too short for the next message gets
// io.ErrShortBuffer and the message stays queued. WriteMessage and
// ReadMessage carry the metadata.
//
// Airhook has no close message: Close delivers what was written (within
// Config.Linger) and then stops answering; the peer notices through its
// own idle timeout. A MessageConn is safe for concurrent use.
type MessageConn struct {
	connBase

	// guarded by a.mu
	queue     []engine.Message // delivered, not yet read
	head      int
	maxQueued int // engine's MaxQueued
	maxRecv   int // Config.MaxRecvQueue
	maxMsg    int
	accepted  *acceptQueue[*MessageConn] // accepted conns: their listener's queue
}

var _ net.Conn = (*MessageConn)(nil)

func newMessageConn(cfg *Config, raddr net.Addr, q *acceptQueue[*MessageConn]) *MessageConn {
	c := &MessageConn{accepted: q, maxRecv: cfg.MaxRecvQueue}
	c.connBase = newBase(cfg, raddr, c)
	return c
}

func (c *MessageConn) attach(ep *endpoint, eng engine.Engine) {
	caps := eng.Capabilities()
	c.maxQueued = caps.MaxQueued
	c.maxMsg = caps.MaxMessage
	c.a = newAssoc(ep, c.raddr, eng, c.cfg.MTU)
	c.a.up = c
}

// ReadMessage returns the next message, blocking until one arrives, the
// read deadline passes (os.ErrDeadlineExceeded), or the conn fails or is
// closed (net.ErrClosed). The returned Data is the caller's.
func (c *MessageConn) ReadMessage() (Message, error) {
	var m Message
	err := c.read(func(e engine.Message) error {
		m = Message{Data: e.Data, Channel: e.Channel, Number: e.MessageNumber}
		if !e.Reliable {
			m.Delivery = Unreliable
		}
		return nil
	})
	return m, err
}

// Read reads one whole message into p and returns its length. If p is
// shorter than the message, Read returns io.ErrShortBuffer and the message
// stays queued for the next call.
func (c *MessageConn) Read(p []byte) (int, error) {
	n := 0
	err := c.read(func(e engine.Message) error {
		if len(p) < len(e.Data) {
			return io.ErrShortBuffer
		}
		n = copy(p, e.Data)
		return nil
	})
	return n, err
}

// read waits for the next message and gives it to take; the message is
// consumed when take returns nil.
func (c *MessageConn) read(take func(engine.Message) error) error {
	if err := c.Handshake(context.Background()); err != nil {
		return err
	}
	if deadlinePassed(c.rd.Done()) {
		return opError("read", c.LocalAddr(), c.raddr, errTimeout)
	}
	return c.wait(c.rd.Done(), deadlineErr, "read", func() (bool, error) {
		if c.head == len(c.queue) {
			return false, nil
		}
		if err := take(c.queue[c.head]); err != nil {
			return false, err
		}
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
// ErrUnsupported (a Delivery, Channel or Number the protocol cannot
// express), os.ErrDeadlineExceeded, net.ErrClosed, or why the conn failed.
// m.Data is copied before WriteMessage returns.
func (c *MessageConn) WriteMessage(m Message) error {
	if err := c.Handshake(context.Background()); err != nil {
		return err
	}
	if deadlinePassed(c.wd.Done()) {
		return opError("write", c.LocalAddr(), c.raddr, errTimeout)
	}
	opt := engine.SendOptions{Delivery: engine.Delivery(m.Delivery), Channel: m.Channel, MessageNumber: m.Number}
	return c.wait(c.wd.Done(), deadlineErr, "write", func() (bool, error) {
		if c.a.eng.Pending() >= c.maxQueued {
			return false, nil
		}
		if err := c.a.eng.Send(m.Data, opt); err != nil {
			return false, err
		}
		c.a.settleLocked(time.Now())
		return true, nil
	})
}

// Write sends p as one reliable message and returns len(p), or 0 and an
// error as WriteMessage does.
func (c *MessageConn) Write(p []byte) (int, error) {
	if err := c.WriteMessage(Message{Data: p}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// MaxMessage is the largest message the protocol carries, in bytes
// (Airhook: 256).
func (c *MessageConn) MaxMessage() int { return c.maxMsg }

// Close closes the conn for the caller at once: blocked and future calls
// return net.ErrClosed. In the background, messages already written are
// still delivered, within Config.Linger. It returns an error wrapping
// net.ErrClosed if already closed.
func (c *MessageConn) Close() error {
	return c.close(func(now time.Time) {
		c.queue, c.head = nil, 0
		c.beginClose(now)
	})
}

// deliver implements upper.
func (c *MessageConn) deliver(m engine.Message) {
	if !c.closed {
		c.queue = append(c.queue, m)
	}
}

// full implements upper.
func (c *MessageConn) full() bool { return len(c.queue)-c.head >= c.maxRecv }

// pump implements upper: messages go to the engine directly in
// WriteMessage; here only the handshake completes.
func (c *MessageConn) pump(time.Time) {
	if !c.opened && c.a.eng.State() != engine.StateHandshake {
		c.markOpened()
		if c.accepted != nil && !c.accepted.ready(c) {
			c.beginClose(time.Now())
		}
	}
}

// ended implements upper.
func (c *MessageConn) ended(err error) {
	c.endedBase(err)
	if c.accepted != nil && !c.opened {
		c.accepted.abandon()
	}
}

// failure implements kind.
func (c *MessageConn) failure() error {
	if c.err != nil {
		return c.err
	}
	return errClosed
}

// abortLocked implements kind: Airhook cannot tell the peer, so the
// association just ends.
func (c *MessageConn) abortLocked(uint8) {}

func (c *MessageConn) base() *connBase { return &c.connBase }
