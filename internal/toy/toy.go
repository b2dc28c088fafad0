// Package toy is a minimal reliable protocol over UDP that exists for
// rudp's tests: it shows the whole engine.Engine contract in a few
// hundred lines, and that a protocol reaches the package above through
// its descriptor (Protocol) and nothing else. It has no reference
// implementation and no peer but itself; it is not meant for deployment.
//
// Datagrams (wire.go) start with a type byte; every number is big-endian.
//
// Handshake. The client sends a hello carrying a random 64-bit nonce,
// again every RTO (backing off) until answered. The server answers each
// hello with a cookie datagram that echoes the nonce and carries a random
// 64-bit cookie; it keeps no timer for it, so a source that never
// receives gets one 17-byte answer per 9-byte hello. The client is then
// established and echoes the cookie in a ping, again every RTO until the
// server answers; the server's association opens on the first datagram
// that carries its cookie. Every later datagram of either end carries the
// cookie, and one without it is rejected: a blind source can neither
// open an association nor inject data or a close into one. A hello with
// another nonce from the peer's address is rejected too, so a restarted
// peer is heard again only once the old association has ended (its idle
// timeout).
//
// Data. Messages are reliable, numbered from 0, at most Window in
// flight; the receiver delivers them in order, holding up to Window − 1
// ahead of a gap, and acknowledges each data datagram at once with the
// next number it expects and a bitmap of the 64 after it (selective
// acks). A message unacknowledged after the RTO (RFC 6298, engine.RTT)
// is sent again; the RTO backs off when the oldest one is. There is no
// congestion control: the window is fixed.
//
// Liveness. An open end pings after KeepAlive without receiving
// (Setup.StreamKeepAlive for streams), and the peer answers with an ack;
// IdleTimeout without a datagram ends the association with
// engine.ErrIdleTimeout, HandshakeTimeout before it opens with
// engine.ErrHandshakeTimeout.
//
// Close. Once every message of the closing end is acknowledged, it sends
// a close, again every RTO, until the peer's close-ack or close arrives
// or Linger runs out (engine.ErrLingerTimeout if messages were left
// unconfirmed). The peer answers a close with a close-ack and ends at
// once: gracefully, or with engine.ErrPeerClosed if messages of its own
// were unconfirmed. A lost close-ack leaves the closing end to its
// linger, with nothing pending, so its end is still graceful.
package toy

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
)

// Limits and timers.
const (
	// Window is the most messages in flight, and the span of sequence
	// numbers a receiver takes from the next one it expects.
	Window = 64
	// MaxQueued bounds Pending: Send returns engine.ErrQueueFull beyond.
	MaxQueued = 1024
	// MaxRecvQueue is how many delivered messages wait for Recv before
	// new data is refused (Window more may follow a filled gap).
	MaxRecvQueue = 1024
	// DefaultLinger is the linger used when Setup.Linger is zero.
	DefaultLinger = 5 * time.Second
	// RTOInitial, RTOMin and RTOMax bound the retransmission timeout.
	RTOInitial = 200 * time.Millisecond
	RTOMin     = 10 * time.Millisecond
	RTOMax     = 5 * time.Second
	// maxBackoff bounds the doublings of the hello, echo and close repeats.
	maxBackoff = 6
)

// Engine is one end of one toy association. The zero value is not
// usable; build one with New.
type Engine struct {
	client                  bool
	nonce, cookie           uint64 // the client's nonce; the server's cookie (0: not known yet)
	open, closing, closed   bool
	confirmed               bool // client: the server answered the echo
	err                     error
	maxMsg                  int
	keepAlive, idle, linger time.Duration
	handshakeEnd, lingerEnd time.Time // zero: no such timer
	start, now, lastRecv    time.Time // now: the latest time given
	lastPing                time.Time
	rtt                     *engine.RTT
	tracer                  *trace.ConnTracer

	probeAt time.Time // client: the next hello, or echo ping until confirmed
	probes  int       // repeats of the hello or echo so far
	closeAt time.Time // closing: the next close
	closes  int
	// Datagrams due at once.
	cookieDue, ackDue, closeAckDue bool

	queue        engine.FIFO[[]byte] // messages not sent yet
	flight       [Window]outMsg      // sequence numbers sndUna..sndNxt-1, by seq % Window
	sndUna       uint32              // the oldest message not acknowledged cumulatively
	sndNxt       uint32              // the next message's number
	unconfirmed  int                 // messages in flight not acknowledged
	pendingBytes int                 // bytes of the queued and unconfirmed messages

	rcvNext  uint32         // the next number to deliver
	ahead    [Window][]byte // received after a gap, by seq % Window
	recv     engine.FIFO[engine.Message]
	recvOpen bool

	stats engine.Stats
}

// outMsg is a message in flight.
type outMsg struct {
	data   []byte
	sentAt time.Time
	sends  int
	acked  bool // selectively, ahead of sndUna
}

var _ engine.Engine = (*Engine)(nil)

// New builds the engine of one association from s: a server if
// s.Accept, a client otherwise. Its datagrams are at most s.MTU bytes
// (less s.Overhead for a stream); it fails if that leaves no room for a
// message.
func New(s *engine.Setup) (*Engine, error) {
	maxDatagram, keepAlive := s.MTU, s.KeepAlive
	if s.Stream {
		maxDatagram -= s.Overhead
		keepAlive = s.StreamKeepAlive()
	}
	if maxDatagram <= dataHeader {
		return nil, fmt.Errorf("toy: datagrams of %d bytes leave no room for a message", maxDatagram)
	}
	e := &Engine{
		client:    !s.Accept,
		maxMsg:    maxDatagram - dataHeader,
		keepAlive: keepAlive,
		idle:      s.IdleTimeout,
		linger:    cmp.Or(s.Linger, DefaultLinger),
		start:     s.Now,
		now:       s.Now,
		lastRecv:  s.Now,
		probeAt:   s.Now,
		rtt:       engine.NewRTT(RTOInitial, RTOMin, RTOMax),
		tracer:    s.Tracer,
		recvOpen:  true,
	}
	if s.HandshakeTimeout > 0 {
		e.handshakeEnd = s.Now.Add(s.HandshakeTimeout)
	}
	id := &e.nonce
	if s.Accept {
		id = &e.cookie
	}
	for *id == 0 {
		*id = s.Random64()
	}
	return e, nil
}

// State implements engine.Engine.
func (e *Engine) State() engine.State {
	switch {
	case e.closed:
		return engine.StateClosed
	case e.closing:
		return engine.StateClosing
	case e.open:
		return engine.StateEstablished
	}
	return engine.StateHandshake
}

// Err implements engine.Engine.
func (e *Engine) Err() error { return e.err }

// Pending implements engine.Engine.
func (e *Engine) Pending() int { return e.queue.Len() + e.unconfirmed }

// SendRoom implements engine.Engine: a fixed window of Window full
// messages stands for the congestion window.
func (e *Engine) SendRoom(ch uint8) int {
	if ch != 0 {
		return 0
	}
	return engine.SendRoom(e.pendingBytes, Window*e.maxMsg)
}

// Capabilities implements engine.Engine: reliable messages of up to the
// datagram size less 13 bytes, in order, on one channel.
func (e *Engine) Capabilities() engine.Capabilities {
	return engine.Capabilities{MaxMessage: e.maxMsg, MaxQueued: MaxQueued, Ordered: true, Channels: 1}
}

// Stats implements engine.Engine; SRTT, RTTVar and RTO are those of the
// data's acknowledgements.
func (e *Engine) Stats() engine.Stats {
	s := e.stats
	s.SRTT, s.RTTVar, s.RTO = e.rtt.SRTT(), e.rtt.RTTVar(), e.rtt.RTO()
	return s
}

// SetRecvOpen implements engine.Engine.
func (e *Engine) SetRecvOpen(open bool) { e.recvOpen = open }

// Recv implements engine.Engine.
func (e *Engine) Recv() (engine.Message, bool) {
	m, ok := e.recv.Take()
	if ok {
		e.stats.MessagesRecv++
	}
	return m, ok
}

// Send implements engine.Engine. Only reliable messages on channel 0
// exist; others fail with engine.ErrUnsupported.
func (e *Engine) Send(p []byte, opt engine.SendOptions) error {
	switch err := engine.CheckParams("toy", opt, 1, false); {
	case err != nil:
		return err
	case opt.Delivery != engine.Reliable:
		return engine.Unsupported("toy", "%v delivery (reliable only)", opt.Delivery)
	case e.closed || e.closing:
		return engine.ErrClosed
	case len(p) == 0:
		return engine.ErrEmptyMessage
	case len(p) > e.maxMsg:
		return engine.TooLarge("toy", len(p), e.maxMsg)
	case e.Pending() >= MaxQueued:
		return engine.ErrQueueFull
	}
	e.queue.Push(bytes.Clone(p))
	e.pendingBytes += len(p)
	return nil
}

// Close implements engine.Engine. Before the handshake completes it ends
// the association at once (engine.ErrLingerTimeout if messages were
// queued, which are dropped).
func (e *Engine) Close(now time.Time) {
	if e.closed || e.closing {
		return
	}
	e.now = now
	if !e.open {
		e.end(e.unconfirmedErr(engine.ErrLingerTimeout))
		return
	}
	e.closing, e.lingerEnd, e.closeAt = true, now.Add(e.linger), now
}

// unconfirmedErr returns err, wrapped with the count, when messages are
// pending, nil otherwise.
func (e *Engine) unconfirmedErr(err error) error {
	if n := e.Pending(); n > 0 {
		return fmt.Errorf("%w: toy: %d messages unconfirmed", err, n)
	}
	return nil
}

// end ends the association with err (nil: gracefully).
func (e *Engine) end(err error) {
	e.closed, e.err = true, err
}

// HandleDatagram implements engine.Engine.
func (e *Engine) HandleDatagram(now time.Time, b []byte) error {
	e.now = now
	p, err := decode(b)
	if err == nil {
		err = e.handle(now, p)
	}
	if err != nil {
		e.stats.PacketsRejected++
		return err
	}
	e.stats.PacketsReceived++
	e.stats.BytesReceived += uint64(len(b))
	e.lastRecv = now
	return nil
}

// rejected returns an error wrapping engine.ErrRejected.
func rejected(format string, args ...any) error {
	return fmt.Errorf("%w: toy: %s", engine.ErrRejected, fmt.Sprintf(format, args...))
}

// handle applies p, or returns why it is refused without changing
// anything.
func (e *Engine) handle(now time.Time, p packet) error {
	switch {
	case e.closed:
		return rejected("association over")
	case p.Type == typeHello:
		if e.client || e.nonce != 0 && p.ID != e.nonce {
			return rejected("hello from %#x", p.ID)
		}
		e.nonce, e.cookieDue = p.ID, true
		return nil
	case p.Type == typeCookie:
		switch {
		case !e.client || p.ID != e.nonce || p.Cookie == 0 || e.cookie != 0 && p.Cookie != e.cookie:
			return rejected("cookie for nonce %#x", p.ID)
		case e.open:
			e.stats.Duplicates++
			return nil
		}
		e.cookie, e.open, e.probeAt, e.probes = p.Cookie, true, now, 0
		e.rtt.ClearBackoff()
		return nil
	case e.cookie == 0 || p.ID != e.cookie:
		return rejected("cookie %#x", p.ID)
	case p.Type == typeAck && (engine.Less32(p.Seq, e.sndUna) || engine.Less32(e.sndNxt, p.Seq)):
		return rejected("ack of %d outside %d..%d", p.Seq, e.sndUna, e.sndNxt)
	case p.Type == typeData && p.Seq-e.rcvNext >= Window && !engine.Less32(p.Seq, e.rcvNext):
		return rejected("data %d beyond the window at %d", p.Seq, e.rcvNext)
	}
	// The cookie proves the peer: it received what this end sent.
	e.open = true
	e.confirmed = e.confirmed || e.client
	switch p.Type {
	case typePing:
		e.ackDue = true
	case typeAck:
		e.onAck(now, p.Seq, p.SACK)
	case typeData:
		e.onData(p.Seq, p.Data)
	case typeClose:
		e.closeAckDue = true
		e.end(e.unconfirmedErr(engine.ErrPeerClosed))
	case typeCloseAck:
		if e.closing && e.Pending() == 0 {
			e.end(nil)
		}
	}
	return nil
}

// onAck confirms the messages before next and those sack marks.
func (e *Engine) onAck(now time.Time, next uint32, sack uint64) {
	var sample time.Duration
	progress := false
	confirm := func(m *outMsg) {
		if m.acked || m.data == nil {
			return
		}
		if m.sends == 1 { // Karn's rule
			sample = now.Sub(m.sentAt)
		}
		e.unconfirmed--
		e.pendingBytes -= len(m.data)
		m.acked, m.data, progress = true, nil, true
	}
	for ; e.sndUna != next; e.sndUna++ {
		m := &e.flight[e.sndUna%Window]
		confirm(m)
		*m = outMsg{}
	}
	for i := range uint32(64) {
		if seq := next + 1 + i; sack>>i&1 != 0 && engine.Less32(seq, e.sndNxt) {
			confirm(&e.flight[seq%Window])
		}
	}
	switch {
	case sample > 0:
		e.rtt.Sample(sample)
	case progress:
		e.rtt.ClearBackoff()
	}
}

// onData takes message seq, within the window, unless this end refuses
// new data.
func (e *Engine) onData(seq uint32, data []byte) {
	slot := &e.ahead[seq%Window]
	switch {
	case engine.Less32(seq, e.rcvNext) || *slot != nil:
		e.stats.Duplicates++
		e.ackDue = true
		return
	case !e.recvOpen || e.recv.Len() >= MaxRecvQueue:
		e.stats.Refused++
		return
	}
	*slot = bytes.Clone(data)
	for s := &e.ahead[e.rcvNext%Window]; *s != nil; s = &e.ahead[e.rcvNext%Window] {
		e.recv.Push(engine.Message{Data: *s, Reliable: true})
		*s = nil
		e.rcvNext++
	}
	e.ackDue = true
}

// timers ends the association when one of its timers ran out at now.
func (e *Engine) timers(now time.Time) {
	switch {
	case e.closed:
	case !e.open && !e.handshakeEnd.IsZero() && !now.Before(e.handshakeEnd):
		e.end(engine.ErrHandshakeTimeout)
	case e.idle > 0 && !now.Before(e.lastRecv.Add(e.idle)):
		e.end(engine.ErrIdleTimeout)
	case e.closing && !now.Before(e.lingerEnd):
		e.end(e.unconfirmedErr(engine.ErrLingerTimeout))
	}
}

// backoff returns when the next repeat of a hello, echo or close is due
// after n repeats.
func (e *Engine) backoff(now time.Time, n int) time.Time {
	return now.Add(min(e.rtt.RTO()<<min(n, maxBackoff), RTOMax))
}

// Poll implements engine.Engine. buf must hold at least the datagram
// size (Setup.MTU, less Setup.Overhead for a stream).
func (e *Engine) Poll(now time.Time, buf []byte) int {
	e.now = now
	e.timers(now)
	if e.closeAckDue {
		e.closeAckDue = false
		return e.sent(put(buf, typeCloseAck, e.cookie))
	}
	if e.closed {
		return 0
	}
	switch {
	case e.client && !e.open && !now.Before(e.probeAt):
		e.probeAt, e.probes = e.backoff(now, e.probes), e.probes+1
		return e.sent(put(buf, typeHello, e.nonce))
	case e.cookieDue:
		e.cookieDue = false
		put(buf, typeCookie, e.nonce)
		binary.BigEndian.PutUint64(buf[9:], e.cookie)
		return e.sent(cookieLen)
	case !e.open:
		return 0
	case e.ackDue:
		e.ackDue = false
		return e.sent(e.putAck(buf))
	case !e.confirmed && e.client && !now.Before(e.probeAt):
		e.probeAt, e.probes = e.backoff(now, e.probes), e.probes+1
		return e.sent(put(buf, typePing, e.cookie))
	case e.keepAliveDue(now):
		e.lastPing = now
		engine.TraceKeepAlive(e.tracer, now)
		return e.sent(put(buf, typePing, e.cookie))
	}
	if n := e.resend(now, buf); n > 0 {
		return n
	}
	if m, ok := e.nextData(); ok {
		e.flight[e.sndNxt%Window] = outMsg{data: m, sentAt: now, sends: 1}
		e.unconfirmed++
		e.stats.MessagesSent++
		e.sndNxt++
		return e.sent(putData(buf, e.cookie, e.sndNxt-1, m))
	}
	if e.closing && e.Pending() == 0 && !now.Before(e.closeAt) {
		e.closeAt, e.closes = e.backoff(now, e.closes), e.closes+1
		return e.sent(put(buf, typeClose, e.cookie))
	}
	return 0
}

// sent counts a datagram of n bytes and returns n.
func (e *Engine) sent(n int) int {
	e.stats.PacketsSent++
	e.stats.BytesSent += uint64(n)
	return n
}

// keepAliveDue reports whether a keepalive ping is due at now.
func (e *Engine) keepAliveDue(now time.Time) bool {
	at, ok := engine.KeepAliveAt(e.keepAlive, e.lastRecv, e.lastPing)
	return ok && !now.Before(at)
}

// nextData takes the next queued message if the window has room.
func (e *Engine) nextData() ([]byte, bool) {
	if e.sndNxt-e.sndUna >= Window {
		return nil, false
	}
	return e.queue.Take()
}

// resend writes into buf the first message in flight whose RTO ran out
// at now, and returns the datagram's length; 0 if none.
func (e *Engine) resend(now time.Time, buf []byte) int {
	for seq := e.sndUna; seq != e.sndNxt; seq++ {
		m := &e.flight[seq%Window]
		if m.acked || now.Before(m.sentAt.Add(e.rtt.RTO())) {
			continue
		}
		if seq == e.sndUna {
			e.rtt.Backoff()
		}
		m.sentAt = now
		m.sends++
		e.stats.Retransmits++
		return e.sent(putData(buf, e.cookie, seq, m.data))
	}
	return 0
}

// putData writes a data datagram into buf and returns its length.
func putData(buf []byte, cookie uint64, seq uint32, m []byte) int {
	put(buf, typeData, cookie)
	binary.BigEndian.PutUint32(buf[9:], seq)
	return dataHeader + copy(buf[dataHeader:], m)
}

// putAck writes an ack of what was received into buf and returns its
// length.
func (e *Engine) putAck(buf []byte) int {
	var sack uint64
	for i := range uint32(Window - 1) {
		if e.ahead[(e.rcvNext+1+i)%Window] != nil {
			sack |= 1 << i
		}
	}
	put(buf, typeAck, e.cookie)
	binary.BigEndian.PutUint32(buf[9:], e.rcvNext)
	binary.BigEndian.PutUint64(buf[13:], sack)
	return ackLen
}

// Deadline implements engine.Engine.
func (e *Engine) Deadline() time.Time {
	if e.closeAckDue {
		return e.now
	}
	if e.closed {
		return time.Time{}
	}
	if e.cookieDue || e.open && (e.ackDue || e.queue.Len() > 0 && e.sndNxt-e.sndUna < Window) {
		return e.now
	}
	var t time.Time
	at := func(c time.Time) {
		if !c.IsZero() && (t.IsZero() || c.Before(t)) {
			t = c
		}
	}
	if e.idle > 0 {
		at(e.lastRecv.Add(e.idle))
	}
	if !e.open {
		at(e.handshakeEnd)
		if e.client {
			at(e.probeAt)
		}
		return t
	}
	if e.client && !e.confirmed {
		at(e.probeAt)
	}
	if ka, ok := engine.KeepAliveAt(e.keepAlive, e.lastRecv, e.lastPing); ok {
		at(ka)
	}
	for seq := e.sndUna; seq != e.sndNxt; seq++ {
		if m := &e.flight[seq%Window]; !m.acked {
			at(m.sentAt.Add(e.rtt.RTO()))
		}
	}
	if e.closing {
		at(e.lingerEnd)
		if e.Pending() == 0 {
			at(e.closeAt)
		}
	}
	return t
}
