package stream

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"time"
)

// Limits and defaults of Config, in bytes.
const (
	// MinMaxFrame is the smallest Config.MaxFrame: every control frame and
	// a DATA frame with at least 21 payload bytes fit in it.
	MinMaxFrame = 32
	// DefaultMaxFrame is used when Config.MaxFrame is 0.
	DefaultMaxFrame = 1024
	// DefaultRecvWindow is used when Config.RecvWindow is 0.
	DefaultRecvWindow = 256 << 10
	// DefaultSendBuffer is used when Config.SendBuffer is 0.
	DefaultSendBuffer = 256 << 10
	// MaxBuffer is the largest Config.RecvWindow and Config.SendBuffer.
	MaxBuffer = 1 << 30
)

// RST codes with a meaning of their own. Codes 2 to 255 are free for the
// layers above.
const (
	// CodeCancel is a plain abort, with no error to report.
	CodeCancel uint8 = 0
	// CodeProtocol is sent when the peer broke the stream protocol.
	CodeProtocol uint8 = 1
)

// Errors reported by Read, HandleFrame and Err.
var (
	// ErrReset is the error after the peer's RST.
	ErrReset = errors.New("connection reset by peer")
	// ErrProtocol is wrapped by the errors for frames that break the
	// protocol; test with errors.Is.
	ErrProtocol = errors.New("stream protocol violation")
	// ErrAborted is the error after a local Abort.
	ErrAborted = errors.New("stream aborted")
)

// Config sets a Stream's sizes, all in bytes. The zero value of a field
// selects its default.
type Config struct {
	// MaxFrame is the largest frame NextFrame produces: the engine's
	// largest message (engine.Capabilities.MaxMessage). At least
	// MinMaxFrame; 0 selects DefaultMaxFrame.
	MaxFrame int
	// RecvWindow is the receive buffer size, and so the window advertised
	// to the peer: how many bytes the peer may send past those the local
	// reader has consumed. 1 to MaxBuffer; 0 selects DefaultRecvWindow.
	RecvWindow int
	// MaxRecvWindow is how far the receive window may grow, in bytes: while
	// the reader keeps up, the window follows the rate at which the peer's
	// data arrives, up to MaxRecvWindow (see Tune). 0, or a value below
	// RecvWindow, keeps the window at RecvWindow; at most MaxBuffer.
	MaxRecvWindow int
	// SendBuffer is how many bytes accepted by Write and not yet framed
	// the Stream holds. 1 to MaxBuffer; 0 selects DefaultSendBuffer.
	SendBuffer int
	// Ordered declares that the engine delivers frames in the order they
	// were sent (engine.Capabilities.Ordered). A first frame other than
	// HELLO is then a protocol violation; otherwise it may be a frame the
	// engine reordered and is kept until the HELLO.
	Ordered bool
	// Start is the offset of this end's first byte on the wire: choose it
	// at random (RFC 6528's reason), so that a blind attacker must guess
	// in 2^64 to place data, a FIN or an RST inside the peer's window.
	Start uint64
	// Token, when not 0, is sent in the HELLO; the peer must send it back
	// (an ECHO frame) before Validated reports true. An accepting end
	// sets it at random to learn that the peer receives what it sends.
	Token uint64
}

// kind is the kind of the next frame due.
type kind uint8

const (
	kindNone kind = iota
	kindHello
	kindEcho
	kindRst
	kindWindow
	kindData
	kindFin
)

// Stream is one end of a byte stream over an engine's reliable messages.
// See the package documentation. Not safe for concurrent use.
type Stream struct {
	maxFrame   int
	recvWindow uint64 // the current receive window
	recvLimit  uint64 // see SetRecvLimit; 0 means none
	// advertisedAt is readOff when advertised was set (see windowDue).
	advertisedAt uint64
	maxWindow    uint64 // Config.MaxRecvWindow
	// Auto-tuning (see Tune): the epoch over which the peer's pace is
	// measured.
	epochAt    time.Time
	epochEnd   uint64  // maxEnd at epochAt
	epochRate  float64 // bytes/s arriving over the previous epoch
	sendBuffer int
	sendLimit  int // see SetSendLimit; 0 means sendBuffer

	// Sending.
	tx         sendRing // bytes written, not framed
	sendStart  uint64   // Config.Start: the wire offset of byte 0
	token      uint64   // Config.Token
	sendOff    uint64   // bytes framed
	peerLimit  uint64   // highest limit the peer advertised
	helloSent  bool
	closeWrite bool
	finSent    bool
	rstPending bool
	rstSent    bool
	rstCode    uint8
	ordered    bool // Config.Ordered

	// Receiving. readOff <= recvNext <= maxEnd <= advertised, all relative
	// to the peer's start.
	rx         recvRing
	peerStart  uint64   // the wire offset of the peer's byte 0
	echo       uint64   // the peer's token, to send back in an ECHO; 0 once sent
	early      [][]byte // frames received before the peer's HELLO (unordered engines)
	earlyBytes int
	ignored    uint64 // frames dropped as implausible (see Ignored)
	advertised uint64 // highest limit sent to the peer
	readOff    uint64 // bytes consumed by the reader
	recvNext   uint64 // bytes received in order
	maxEnd     uint64 // end of the highest byte received
	final      uint64 // the peer's final offset, once finReceived

	// Termination.
	err       error // terminal error: ErrReset, ErrAborted or protocol
	drain     bool  // peer reset after its FIN: reading continues to io.EOF
	peerReset bool
	peerCode  uint8

	// The receiving flags, beside the termination ones so that a Stream
	// fits 320 bytes (every idle stream keeps one).
	opened      bool // the peer's HELLO was received
	validated   bool // the peer echoed Token (or there is no Token)
	finReceived bool
}

// New returns a Stream with a HELLO frame queued. It panics if a Config
// field is out of range (a programming error, never a network one).
func New(cfg Config) *Stream {
	cfg.MaxFrame = cmp.Or(cfg.MaxFrame, DefaultMaxFrame)
	cfg.RecvWindow = cmp.Or(cfg.RecvWindow, DefaultRecvWindow)
	cfg.SendBuffer = cmp.Or(cfg.SendBuffer, DefaultSendBuffer)
	if cfg.MaxFrame < MinMaxFrame {
		panic(fmt.Sprintf("stream: Config.MaxFrame %d below %d", cfg.MaxFrame, MinMaxFrame))
	}
	if cfg.RecvWindow < 0 || cfg.RecvWindow > MaxBuffer {
		panic(fmt.Sprintf("stream: Config.RecvWindow %d out of range", cfg.RecvWindow))
	}
	if cfg.SendBuffer < 0 || cfg.SendBuffer > MaxBuffer {
		panic(fmt.Sprintf("stream: Config.SendBuffer %d out of range", cfg.SendBuffer))
	}
	if cfg.MaxRecvWindow > MaxBuffer {
		panic(fmt.Sprintf("stream: Config.MaxRecvWindow %d out of range", cfg.MaxRecvWindow))
	}
	return &Stream{
		sendStart:  cfg.Start,
		token:      cfg.Token,
		maxFrame:   cfg.MaxFrame,
		recvWindow: uint64(cfg.RecvWindow),
		maxWindow:  uint64(max(cfg.RecvWindow, cfg.MaxRecvWindow)),
		sendBuffer: cfg.SendBuffer,
		ordered:    cfg.Ordered,
	}
}

// Write copies as much of p as the send buffer has room for and returns how
// many bytes it took: min(len(p), Writable()). It never blocks; it returns 0
// when the buffer is full, after CloseWrite or Abort, and once the stream
// has failed (see Err).
func (s *Stream) Write(p []byte) int {
	n := min(len(p), s.Writable())
	s.tx.push(p[:n], s.sendCap())
	return n
}

// Writable is how many bytes Write would accept now: Config.SendBuffer,
// or the lower limit SetSendLimit set, minus Unsent; 0 when Unsent
// exceeds that, after CloseWrite or Abort, and once the stream has
// failed.
func (s *Stream) Writable() int {
	if s.closeWrite || s.err != nil {
		return 0
	}
	return max(0, s.sendCap()-s.tx.n)
}

// sendCap is the most Write may hold unsent now: Config.SendBuffer, or
// the lower limit SetSendLimit set.
func (s *Stream) sendCap() int {
	if s.sendLimit > 0 {
		return min(s.sendBuffer, s.sendLimit)
	}
	return s.sendBuffer
}

// SetSendLimit lowers the bytes Write may hold unsent to n (at least 1),
// or restores Config.SendBuffer with 0; a limit above Config.SendBuffer
// is Config.SendBuffer. The bytes already held stay: Write accepts
// nothing until Unsent falls below the new limit. A caller sets it from
// the engine's congestion window, so that a stream that can send little
// holds little (see the package documentation, Memory).
func (s *Stream) SetSendLimit(n int) { s.sendLimit = n }

// Unsent is the number of bytes accepted by Write and not yet framed by
// NextFrame; 0 once the stream has failed.
func (s *Stream) Unsent() int { return s.tx.n }

// Read copies bytes of the stream, in order, into p and returns how many.
// It returns (0, nil) when nothing is readable yet, (0, io.EOF) once all
// bytes up to the peer's FIN have been read, and (0, Err()) once the stream
// has failed, except that after a peer's RST a stream whose FIN had already
// been received reads on to io.EOF. It never returns n > 0 with an error.
// Nothing is readable before the peer's HELLO has been received.
func (s *Stream) Read(p []byte) (int, error) {
	if s.err != nil && !s.drain {
		return 0, s.err
	}
	if !s.opened {
		return 0, nil
	}
	n := min(uint64(len(p)), s.recvNext-s.readOff)
	if n == 0 {
		if s.finReceived && s.readOff == s.final {
			s.rx.release()
			return 0, io.EOF
		}
		return 0, nil
	}
	s.rx.get(s.readOff, p[:n])
	s.readOff += n
	if s.readOff == s.maxEnd && receiving.Load() > keepRings { // nothing in order or beyond
		s.rx.drained()
	}
	return int(n), nil
}

// Readable reports whether Read would return bytes or a non-nil error.
func (s *Stream) Readable() bool {
	if s.err != nil && !s.drain {
		return true
	}
	return s.opened && (s.readOff < s.recvNext || s.finReceived && s.readOff == s.final)
}

// CloseWrite queues a FIN after the bytes already written: the peer reads
// them, then io.EOF. Write accepts nothing afterwards. Idempotent.
func (s *Stream) CloseWrite() { s.closeWrite = true }

// Abort aborts the stream: the bytes not yet framed are dropped, an RST
// carrying code is queued (after the HELLO if that is not yet framed) and no
// other frame is produced; Write returns 0, and Read and Err return
// ErrAborted. Abort does nothing once the stream has failed.
func (s *Stream) Abort(code uint8) {
	if s.err != nil {
		s.drain = false
		s.rx.release()
		return
	}
	s.err = ErrAborted
	s.rstPending, s.rstCode = true, code
	s.tx.release()
	s.rx.release()
}

// Opened reports whether the peer's HELLO has been received.
func (s *Stream) Opened() bool { return s.opened }

// Starts returns this end's Config.Start and the peer's, from its HELLO
// (0 before Opened): random values that only the two ends know, from
// which they may derive a shared key.
func (s *Stream) Starts() (local, peer uint64) { return s.sendStart, s.peerStart }

// Server reports whether this end sends a Config.Token: the accepting
// end.
func (s *Stream) Server() bool { return s.token != 0 }

// Validated reports whether the peer's HELLO has been received and, with
// Config.Token, the peer has echoed the token: the peer receives what this
// end sends, so it is not a blind spoofer.
func (s *Stream) Validated() bool { return s.opened && (s.token == 0 || s.validated) }

// Ignored counts the frames dropped as implausible: DATA, FIN, WINDOW or
// RST values outside the window, an ECHO of another token, a HELLO with
// another start, and malformed frames once the stream is open. A peer
// following the protocol sends none; spoofed or corrupted frames are
// dropped rather than allowed to end or stall the stream.
func (s *Stream) Ignored() uint64 { return s.ignored }

// Err is the stream's terminal error, if any: ErrReset after the peer's RST,
// ErrAborted after Abort, or an error wrapping ErrProtocol after a frame
// that broke the protocol. A graceful end (FIN both ways) is not an error.
func (s *Stream) Err() error { return s.err }

// ResetCode is the code carried by the peer's RST; ok is false if none has
// been received.
func (s *Stream) ResetCode() (code uint8, ok bool) { return s.peerCode, s.peerReset }

// SendDone reports whether the FIN or an RST has been framed, or the peer's
// RST received: NextFrame will produce nothing more except WINDOW updates.
func (s *Stream) SendDone() bool { return s.finSent || s.rstSent || s.peerReset }

// RecvDone reports whether the peer's HELLO and FIN have been received with
// every byte before the FIN (they may still be unread).
func (s *Stream) RecvDone() bool {
	return s.opened && s.finReceived && s.recvNext == s.final
}

// HasFrame reports whether NextFrame would produce a frame now.
func (s *Stream) HasFrame() bool { return s.next() != kindNone }

// FlowBlocked reports whether the stream holds unsent bytes it may not
// send: the peer's flow-control limit is reached (see Config.RecvWindow).
func (s *Stream) FlowBlocked() bool {
	return s.opened && s.err == nil && s.tx.n > 0 && s.sendOff >= s.peerLimit
}

// next is the kind of frame due, in order of priority.
func (s *Stream) next() kind {
	switch {
	case s.peerReset:
		return kindNone
	case !s.helloSent:
		return kindHello
	case s.echo != 0:
		return kindEcho
	case s.rstPending:
		return kindRst
	case s.err != nil:
		return kindNone
	case s.opened && !s.finReceived && s.windowDue():
		return kindWindow
	case s.opened && s.tx.n > 0 && s.sendOff < s.peerLimit:
		return kindData
	case s.closeWrite && !s.finSent && s.tx.n == 0:
		return kindFin
	}
	return kindNone
}

// FrameSize returns the size of the buffer that the next frame due needs
// from NextFrame, given n bytes at most (n at least MinMaxFrame): 0 when
// none is due, MinMaxFrame for a control frame, and for DATA the largest
// header and the bytes it may carry (those unsent within the peer's limit,
// min(n, MaxFrame) in all), at least MinMaxFrame. A caller that sizes its
// frame buffers with it keeps a small frame in a small buffer.
func (s *Stream) FrameSize(n int) int {
	size := min(n, s.maxFrame)
	switch s.next() {
	case kindNone:
		return 0
	case kindData:
		payload := min(uint64(s.tx.n), s.peerLimit-s.sendOff)
		return max(MinMaxFrame, int(min(uint64(size), maxValueLen+payload)))
	}
	return MinMaxFrame
}

// NextFrame writes the next frame due into buf and returns its size, or 0
// if no frame is due. In order of priority: the HELLO (first, once), an RST,
// a WINDOW update, DATA within the peer's limit, the FIN once every byte
// written has been framed. Frames are at most min(len(buf), MaxFrame)
// bytes; buf should hold MaxFrame bytes, and NextFrame returns 0 if it
// holds fewer than MinMaxFrame. The frame is consumed: the caller must hand
// it to the engine, so it should call NextFrame only when the engine can take
// a message. NextFrame does not allocate.
func (s *Stream) NextFrame(buf []byte) int {
	size := min(len(buf), s.maxFrame)
	if size < MinMaxFrame {
		return 0
	}
	switch s.next() {
	case kindHello:
		s.helloSent = true
		s.advertised, s.advertisedAt = s.readOff+s.window(), s.readOff
		return putHello(buf, s.sendStart, s.token, s.advertised)
	case kindEcho:
		t := s.echo
		s.echo = 0
		return putEcho(buf, t)
	case kindRst:
		s.rstPending, s.rstSent = false, true
		return putRst(buf, s.rstCode, s.sendStart+s.sendOff)
	case kindWindow:
		s.advertised, s.advertisedAt = s.readOff+s.window(), s.readOff
		return putValue(buf, typeWindow, s.peerStart+s.advertised)
	case kindData:
		h := putValue(buf, typeData, s.sendStart+s.sendOff)
		end := size
		if credit := s.peerLimit - s.sendOff; credit < uint64(size-h) {
			end = h + int(credit)
		}
		n := s.tx.pop(buf[h:end])
		s.sendOff += uint64(n)
		return h + n
	case kindFin:
		s.finSent = true
		s.tx.release()
		return putValue(buf, typeFin, s.sendStart+s.sendOff)
	}
	return 0
}

// Trim frees the send and receive buffers when they hold nothing (no byte
// written and not framed, none received and not read), so that an idle
// stream keeps no buffer; they are taken again from their pools when
// used. While more than 32 streams of the process hold buffers, a drained
// buffer goes back at once, without Trim; call Trim when the stream has
// been idle for a while.
func (s *Stream) Trim() {
	if s.tx.n == 0 {
		s.tx.release()
	}
	if s.readOff == s.maxEnd {
		s.rx.drained()
	}
}

// RecvWindow is the current receive window in bytes.
func (s *Stream) RecvWindow() int { return int(s.recvWindow) }

// Tune gives the stream the time and the path's round-trip time, which
// auto-tuning of the receive window needs; call it before NextFrame. A
// stream that is never given an RTT keeps its window at RecvWindow.
//
// Over spans of at least an RTT, Tune measures the rate at which the
// peer's bytes arrive and, while the reader keeps up (it has read all but
// a quarter window of the bytes received in order), grows the window to
// eight RTTs of that rate, times the rate's growth since the previous span
// (at most 2: a sender in slow start doubles per RTT, and the window must
// be ahead of it by the time the peer learns of it), up to MaxRecvWindow.
// A slow reader, not keeping up, keeps the window at RecvWindow. Eight,
// where quic-go's auto-tuning settles at four (internal/flowcontrol,
// base_flow_controller.go, maybeAdjustWindowSize, at v0.65.0), because on
// a lossy path the window covers more than the data in flight: what
// arrives behind a lost datagram waits a round trip or more for its
// resend (an ordered engine holds it, unseen here), and the WINDOW frame
// takes half a round trip to arrive. With a third of the window in
// flight, eight RTTs of the rate still grows it faster than slow start.
// Scaling by the rate's growth is what Linux does for a sender in slow
// start (net/ipv4/tcp_input.c,
// tcp_rcv_space_adjust, at v6.12).
func (s *Stream) Tune(now time.Time, rtt time.Duration) {
	if rtt <= 0 || s.recvWindow >= s.maxWindow {
		return
	}
	if s.epochAt.IsZero() {
		s.epochAt, s.epochEnd = now, s.maxEnd
		return
	}
	elapsed := now.Sub(s.epochAt)
	if elapsed < rtt || s.recvNext-s.readOff > s.recvWindow/4 {
		return // too short to measure, or the reader is behind: the span goes on
	}
	rate := float64(s.maxEnd-s.epochEnd) / elapsed.Seconds()
	growth := 1.0
	if s.epochRate > 0 {
		growth = min(max(rate/s.epochRate, 1), 2)
	}
	if want := uint64(8 * growth * rate * rtt.Seconds()); want > s.recvWindow {
		s.recvWindow = min(want, s.maxWindow)
	}
	s.epochAt, s.epochEnd, s.epochRate = now, s.maxEnd, rate
}

// windowDue reports whether a WINDOW is due: the limit it would advertise
// is a step (windowStep of the window now) above the last one, and the
// peer has sent at least a step of the last window advertised since then.
// A window that grew while the peer sends nothing (a stream whose share
// of a budget rose, see SetRecvLimit) waits until the peer uses it; a peer
// held by the window has sent everything up to the limit, so it is never
// kept waiting.
func (s *Stream) windowDue() bool {
	w := s.window()
	return s.readOff+w >= s.advertised+windowStep(w) &&
		s.maxEnd >= s.advertisedAt+windowStep(s.advertised-s.advertisedAt)
}

// window is the receive window advertised now: recvWindow, or the lower
// limit SetRecvLimit set.
func (s *Stream) window() uint64 {
	if s.recvLimit > 0 {
		return min(s.recvWindow, s.recvLimit)
	}
	return s.recvWindow
}

// SetRecvLimit caps the receive window advertised from now on at n bytes
// (at least 1), or lifts the cap with 0. The limit already advertised is
// never taken back, so a lower cap binds as the reader moves on; the
// window's auto-tuning (Tune) goes on beneath it. A caller sets it from
// a budget that the streams of a process share, so that a thousand
// streams receiving at once hold about that budget between them rather
// than a window each (see the package documentation, Memory).
func (s *Stream) SetRecvLimit(n int) { s.recvLimit = uint64(n) }

// maxWindowStep bounds how far the reader may get ahead of the limit last
// advertised before a WINDOW is due, in bytes.
const maxWindowStep = 1 << 20

// windowStep is the increase of the limit that makes a WINDOW due with
// window w: a quarter of it, at most maxWindowStep, so that a large
// window is not a quarter short on average (a 16 MiB window on a 100 ms
// path, with a round trip of data held behind each loss, needs every
// MiB of it).
func windowStep(w uint64) uint64 { return max(1, min(w/4, maxWindowStep)) }

// HandleFrame processes one frame from the peer; f is not retained.
//
// Before the peer's HELLO only a HELLO is understood: with Config.Ordered
// any other first frame, and any malformed one, breaks the protocol (the
// peer is not a rudp stream); otherwise such frames are kept (copied, at
// most a receive window of them) until the HELLO gives the peer's start.
// Once the stream is open, frames are checked for plausibility: offsets
// must lie within the window this end advertised (or, for WINDOW, within
// MaxBuffer of what it sent), an RST must carry an offset the peer could
// have reached, an ECHO the token; other frames, malformed ones included,
// are dropped and counted (Ignored) rather than ending the stream, so
// that a spoofed or corrupted frame can do no harm. A frame that breaks
// the protocol returns an error wrapping ErrProtocol, and the stream is
// aborted: an RST with CodeProtocol is queued and Read, Write and Err
// report the error. Frames arriving after the stream has ended (Abort,
// the peer's RST, a protocol error) are ignored, except those completing
// a FIN received before the peer's RST.
func (s *Stream) HandleFrame(f []byte) error {
	if s.err != nil && !s.drain {
		return nil
	}
	fr, err := parseFrame(f)
	if err != nil {
		if s.opened {
			s.ignored++
			return nil
		}
		return s.fail(err)
	}
	if !s.opened && fr.typ != typeHello {
		if s.ordered {
			return s.fail(protoErr("first frame is %s, not HELLO", typeName(fr.typ)))
		}
		s.keepEarly(f)
		return nil
	}
	if s.drain && fr.typ != typeHello && fr.typ != typeData && fr.typ != typeFin {
		return nil
	}
	switch fr.typ {
	case typeHello:
		return s.handleHello(fr)
	case typeEcho:
		if s.token != 0 && fr.value == s.token {
			s.validated = true
		} else {
			s.ignored++
		}
	case typeWindow:
		limit := fr.value - s.sendStart
		if limit > s.sendOff+MaxBuffer {
			s.ignored++ // no window reaches that far: not the peer's
			return nil
		}
		s.peerLimit = max(s.peerLimit, limit)
	case typeData:
		return s.handleData(fr.value-s.peerStart, fr.payload)
	case typeFin:
		return s.handleFin(fr.value - s.peerStart)
	case typeRst:
		if off := fr.value - s.peerStart; off < s.maxEnd || off > s.advertised {
			s.ignored++ // the peer never framed up to there: not its RST
			return nil
		}
		s.peerReset, s.peerCode = true, fr.code
		s.err = ErrReset
		s.drain = s.finReceived
		s.rstPending = false
		s.tx.release()
		if !s.drain {
			s.rx.release()
		}
	}
	return nil
}

// handleHello takes the peer's HELLO: its start, its token to echo and
// its window; the frames kept before it are then handled. A repeat with
// the same start changes nothing; one with another start is dropped.
func (s *Stream) handleHello(fr frame) error {
	if s.opened {
		if fr.start != s.peerStart {
			s.ignored++
		}
		return nil
	}
	s.opened = true
	s.peerStart = fr.start
	s.echo = fr.token
	s.peerLimit = max(s.peerLimit, fr.value)
	early := s.early
	s.early, s.earlyBytes = nil, 0
	for _, f := range early {
		if err := s.HandleFrame(f); err != nil {
			return err
		}
	}
	return nil
}

// keepEarly keeps a copy of a frame that came before the peer's HELLO.
// The peer frames DATA only within the window this end advertised, so a
// receive window (plus room for the other frames) holds every legitimate
// one; beyond that the frame is dropped and counted.
func (s *Stream) keepEarly(f []byte) {
	if s.earlyBytes+len(f) > int(s.recvWindow)+maxEarlyExtra || len(s.early) >= maxEarlyFrames {
		s.ignored++
		return
	}
	s.early = append(s.early, append([]byte(nil), f...))
	s.earlyBytes += len(f)
}

// Bounds of the frames kept before the peer's HELLO, beyond a receive
// window of DATA payload.
const (
	maxEarlyExtra  = 64 << 10
	maxEarlyFrames = 1 << 14
)

// handleData takes DATA at offset off (relative to the peer's start).
// Bytes outside the advertised window, or beyond a FIN, are dropped and
// counted: the peer never sends them.
func (s *Stream) handleData(off uint64, p []byte) error {
	n := uint64(len(p))
	if off > s.advertised || n > s.advertised-off {
		s.ignored++
		return nil
	}
	end := off + n
	if s.finReceived && end > s.final {
		s.ignored++
		return nil
	}
	if end <= s.recvNext {
		return nil // duplicate
	}
	if off < s.recvNext {
		p = p[s.recvNext-off:]
		off = s.recvNext
	}
	// The span from readOff fits the ring: end <= advertised, and what was
	// advertised is at most readOff + recvWindow. A ring regrows to the
	// window advertised now, not to a larger one of the past.
	limit := roundUp64(max(s.window(), s.advertised-s.readOff))
	s.rx.ensure(end-s.readOff, limit, s.readOff, s.recvNext, s.maxEnd)
	s.rx.put(off, p)
	if off == s.recvNext {
		s.rx.mark(off, min(end, s.maxEnd), false)
		s.recvNext = s.rx.absorb(end, s.maxEnd)
	} else {
		s.rx.mark(off, end, true)
	}
	s.maxEnd = max(s.maxEnd, end)
	return nil
}

// handleFin takes a FIN at final (relative to the peer's start). One
// before the data received, beyond the window, or conflicting with an
// earlier FIN is dropped and counted.
func (s *Stream) handleFin(final uint64) error {
	if s.finReceived && final != s.final || final < s.maxEnd || final > s.advertised {
		s.ignored++
		return nil
	}
	s.finReceived, s.final = true, final
	if s.readOff == final {
		s.rx.release()
	}
	return nil
}

// fail ends the stream with the protocol error e, queues an RST with
// CodeProtocol unless the peer has reset, and returns e.
func (s *Stream) fail(e error) error {
	s.err = e
	s.drain = false
	if !s.peerReset && !s.rstSent {
		s.rstPending, s.rstCode = true, CodeProtocol
	}
	s.tx.release()
	s.rx.release()
	return e
}
