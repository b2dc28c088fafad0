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
	// MaxRecvWindow is how far the receive window may grow, in bytes: when
	// the reader keeps up with a sender that the window holds back, the
	// window doubles, up to MaxRecvWindow (see Tune). 0, or a value below
	// RecvWindow, keeps the window at RecvWindow; at most MaxBuffer.
	MaxRecvWindow int
	// SendBuffer is how many bytes accepted by Write and not yet framed
	// the Stream holds. 1 to MaxBuffer; 0 selects DefaultSendBuffer.
	SendBuffer int
	// Ordered declares that the engine delivers frames in the order they
	// were sent (engine.Capabilities.Ordered). A first frame other than
	// HELLO is then a protocol violation; otherwise it may be a frame the
	// engine reordered and is accepted.
	Ordered bool
}

// kind is the kind of the next frame due.
type kind uint8

const (
	kindNone kind = iota
	kindHello
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
	maxWindow  uint64 // Config.MaxRecvWindow
	// Auto-tuning (see Tune): the clock and RTT the caller gave, and the
	// epoch over which the reader's pace is measured.
	now        time.Time
	rtt        time.Duration
	epochAt    time.Time
	epochOff   uint64
	sendBuffer int
	threshold  uint64 // limit increase that makes a WINDOW due
	ordered    bool

	// Sending.
	tx         sendRing // bytes written, not framed
	sendOff    uint64   // bytes framed
	peerLimit  uint64   // highest limit the peer advertised
	helloSent  bool
	closeWrite bool
	finSent    bool
	rstPending bool
	rstSent    bool
	rstCode    uint8

	// Receiving. readOff <= recvNext <= maxEnd <= advertised.
	rx          recvRing
	opened      bool   // the peer's HELLO was received
	advertised  uint64 // highest limit sent to the peer
	readOff     uint64 // bytes consumed by the reader
	recvNext    uint64 // bytes received in order
	maxEnd      uint64 // end of the highest byte received
	finReceived bool
	final       uint64 // the peer's final offset, once finReceived

	// Termination.
	err       error // terminal error: ErrReset, ErrAborted or protocol
	drain     bool  // peer reset after its FIN: reading continues to io.EOF
	peerReset bool
	peerCode  uint8
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
		maxFrame:   cfg.MaxFrame,
		recvWindow: uint64(cfg.RecvWindow),
		maxWindow:  uint64(max(cfg.RecvWindow, cfg.MaxRecvWindow)),
		sendBuffer: cfg.SendBuffer,
		threshold:  max(1, uint64(cfg.RecvWindow)/4),
		ordered:    cfg.Ordered,
	}
}

// Write copies as much of p as the send buffer has room for and returns how
// many bytes it took: min(len(p), Writable()). It never blocks; it returns 0
// when the buffer is full, after CloseWrite or Abort, and once the stream
// has failed (see Err).
func (s *Stream) Write(p []byte) int {
	n := min(len(p), s.Writable())
	s.tx.push(p[:n], s.sendBuffer)
	return n
}

// Writable is how many bytes Write would accept now: Config.SendBuffer minus
// Unsent, or 0 after CloseWrite or Abort or once the stream has failed.
func (s *Stream) Writable() int {
	if s.closeWrite || s.err != nil {
		return 0
	}
	return s.sendBuffer - s.tx.n
}

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
	if s.finReceived && s.readOff == s.final {
		s.rx.release()
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

// next is the kind of frame due, in order of priority.
func (s *Stream) next() kind {
	switch {
	case s.peerReset:
		return kindNone
	case !s.helloSent:
		return kindHello
	case s.rstPending:
		return kindRst
	case s.err != nil:
		return kindNone
	case !s.finReceived && s.readOff+s.recvWindow >= s.advertised+s.threshold:
		return kindWindow
	case s.opened && s.tx.n > 0 && s.sendOff < s.peerLimit:
		return kindData
	case s.closeWrite && !s.finSent && s.tx.n == 0:
		return kindFin
	}
	return kindNone
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
		s.advertised = s.readOff + s.recvWindow
		return putHello(buf, s.advertised)
	case kindRst:
		s.rstPending, s.rstSent = false, true
		return putRst(buf, s.rstCode)
	case kindWindow:
		s.autoTune()
		s.advertised = s.readOff + s.recvWindow
		return putValue(buf, typeWindow, s.advertised)
	case kindData:
		h := putValue(buf, typeData, s.sendOff)
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
		return putValue(buf, typeFin, s.sendOff)
	}
	return 0
}

// Tune gives the stream the time and the path's round-trip time, which
// auto-tuning of the receive window needs; call it before NextFrame. A
// stream that is never given an RTT keeps its window at RecvWindow.
func (s *Stream) Tune(now time.Time, rtt time.Duration) { s.now, s.rtt = now, rtt }

// RecvWindow is the current receive window in bytes.
func (s *Stream) RecvWindow() int { return int(s.recvWindow) }

// autoTune runs when a WINDOW update is due: if the reader consumed more
// than half the window since the last update that started an epoch, in
// less than 4 RTTs times the fraction of the window consumed (as quickly
// as a sender limited by the window delivers it), the window, not the
// reader, limits the sender, and it doubles, up to MaxRecvWindow. This is
// how quic-go tunes its flow-control windows (internal/flowcontrol,
// base_flow_controller.go, maybeAdjustWindowSize, at v0.65.0).
func (s *Stream) autoTune() {
	if s.rtt <= 0 || s.recvWindow >= s.maxWindow {
		return
	}
	read := s.readOff - s.epochOff
	if !s.epochAt.IsZero() && read > s.recvWindow/2 {
		elapsed := s.now.Sub(s.epochAt)
		fraction := float64(read) / float64(s.recvWindow)
		if elapsed < time.Duration(4*fraction*float64(s.rtt)) {
			s.recvWindow = min(2*s.recvWindow, s.maxWindow)
			s.threshold = max(1, s.recvWindow/4)
		}
	}
	if s.epochAt.IsZero() || read > s.recvWindow/2 {
		s.epochAt, s.epochOff = s.now, s.readOff
	}
}

// HandleFrame processes one frame from the peer; f is not retained. A frame
// that breaks the protocol returns an error wrapping ErrProtocol, and the
// stream is aborted: an RST with CodeProtocol is queued and Read, Write and
// Err report the error. Frames arriving after the stream has ended (Abort,
// the peer's RST, a protocol error) are ignored, except those completing a
// FIN received before the peer's RST.
func (s *Stream) HandleFrame(f []byte) error {
	if s.err != nil && !s.drain {
		return nil
	}
	fr, err := parseFrame(f)
	if err != nil {
		return s.fail(err)
	}
	if s.ordered && !s.opened && fr.typ != typeHello {
		return s.fail(protoErr("first frame is %s, not HELLO", typeName(fr.typ)))
	}
	if s.drain && fr.typ != typeHello && fr.typ != typeData && fr.typ != typeFin {
		return nil
	}
	switch fr.typ {
	case typeHello:
		s.opened = true
		s.peerLimit = max(s.peerLimit, fr.value)
	case typeWindow:
		s.peerLimit = max(s.peerLimit, fr.value)
	case typeData:
		return s.handleData(fr.value, fr.payload)
	case typeFin:
		return s.handleFin(fr.value)
	case typeRst:
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

func (s *Stream) handleData(off uint64, p []byte) error {
	n := uint64(len(p))
	if off > s.advertised || n > s.advertised-off {
		return s.fail(protoErr("DATA [%d,+%d) beyond window limit %d", off, n, s.advertised))
	}
	end := off + n
	if s.finReceived && end > s.final {
		return s.fail(protoErr("DATA [%d,%d) beyond final offset %d", off, end, s.final))
	}
	if end <= s.recvNext {
		return nil // duplicate
	}
	if off < s.recvNext {
		p = p[s.recvNext-off:]
		off = s.recvNext
	}
	// The span from readOff fits the ring: end <= advertised <= readOff+recvWindow.
	s.rx.ensure(end-s.readOff, roundUp64(s.recvWindow), s.readOff, s.recvNext, s.maxEnd)
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

func (s *Stream) handleFin(final uint64) error {
	switch {
	case s.finReceived && final != s.final:
		return s.fail(protoErr("FIN at %d conflicts with FIN at %d", final, s.final))
	case final < s.maxEnd:
		return s.fail(protoErr("FIN at %d before received data ending at %d", final, s.maxEnd))
	case final > s.advertised:
		return s.fail(protoErr("FIN at %d beyond window limit %d", final, s.advertised))
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
