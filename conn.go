package rudp

import (
	"context"
	"math"
	"math/bits"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/socket"
	"github.com/rudpkit/rudp/internal/stream"
)

// trimAfter is how long a stream moves no bytes before it frees its empty
// buffers (stream.Stream.Trim).
const trimAfter = time.Second

// Conn is a reliable, ordered, flow-controlled byte stream over UDP (or any
// net.PacketConn): a net.Conn like a TCP connection, between rudp peers.
//
// Write returns once its bytes are queued for delivery; it blocks while the
// send buffer (Config.SendBuffer) is full. Bytes reported written are
// delivered in order, even after a write deadline expires, unless the
// conn fails. Read returns exactly io.EOF after the peer's CloseWrite or
// Close, once every byte before it was read.
//
// Other errors are *net.OpError values wrapping os.ErrDeadlineExceeded (a
// deadline passed), net.ErrClosed (after Close, whatever the deadlines),
// ErrReset (the peer aborted or restarted), syscall.ECONNREFUSED (a dialed
// conn's peer port kept answering ICMP port unreachable; see the package
// doc), ErrIdleTimeout, ErrHandshakeTimeout or ErrProtocol. A Conn is safe
// for concurrent use.
type Conn struct {
	connBase

	// guarded by a.mu
	st        *stream.Stream
	frame     []byte    // the next frame, borrowed from framePool while held (engines that are not Builders)
	maxFrame  int       // the engine's largest message
	held      int       // bytes of a frame in frame that the engine refused, to hand it again
	active    time.Time // when bytes were last written or received
	busy      bool      // counted in busyStreams: see touch and rest
	maxQueued int
	// largeChecked: useLarge has decided whether the engine sends large
	// frames.
	largeChecked bool
	flowBlocked  bool                // last reported to the tracer (see traceFlow)
	accepted     *acceptQueue[*Conn] // accepted conns: their listener's queue
	aborted      bool                // an RST was queued
	recycle      engine.Recycler     // the engine, if it reuses delivered buffers
	build        engine.Builder      // the engine, if it builds messages in place

	linger atomic.Pointer[time.Duration] // SetLinger's bound; nil: Config.Linger
}

var _ net.Conn = (*Conn)(nil)

// framePool holds frame buffers: a conn borrows one while it has a frame
// to hand to its engine, so that an idle conn holds none. Frames are at
// most an engine's largest message, below maxSend.
var framePool = sync.Pool{New: func() any { return new([maxSend]byte) }}

// newConn returns a conn shell; attach gives it its engine.
func newConn(cfg *Config, raddr net.Addr, q *acceptQueue[*Conn]) *Conn {
	c := &Conn{accepted: q}
	c.connBase = newBase(cfg, raddr, c)
	return c
}

// attach binds the conn to eng on ep. The caller then calls begin.
func (c *Conn) attach(ep *socket.Endpoint, eng engine.Engine, tr *connTrace) {
	c.a = newAssoc(ep, c.raddr, eng, tr)
	c.a.up = c
	c.a.sealed = true
	c.a.isOpening = func(p []byte) bool { return c.cfg.proto.IsOpening(p, c.cfg.opts) }
	if c.accepted == nil {
		c.a.plainPeer = c.cfg.proto
	}
	c.bind(eng)
}

// bind makes a new stream over eng, the association's engine.
func (c *Conn) bind(eng engine.Engine) {
	caps := eng.Capabilities()
	c.maxFrame = caps.MaxMessage
	c.maxQueued = caps.MaxQueued
	var token uint64 // an accepted conn waits for the dialer to echo it
	for c.accepted != nil && token == 0 {
		token = c.cfg.random64()
	}
	c.st = stream.New(stream.Config{
		MaxFrame:      caps.MaxMessage,
		RecvWindow:    c.cfg.RecvWindow,
		MaxRecvWindow: c.cfg.MaxRecvWindow,
		SendBuffer:    c.cfg.SendBuffer,
		Ordered:       caps.Ordered,
		Start:         c.cfg.random64(),
		Token:         token,
	})
	c.setLimits(eng.Stats().Congestion.Cwnd) // before the HELLO and the first Write
	_, c.a.takesLarge = eng.(engine.LargeFramer)
	c.recycle, _ = eng.(engine.Recycler)
	c.build, _ = eng.(engine.Builder)
	if s, ok := eng.(engine.Sinker); ok {
		s.SetSink(c.take)
	}
}

// Read reads in-order stream bytes into p. It blocks until at least one
// byte is available, the peer has finished (io.EOF), the read deadline
// passes (os.ErrDeadlineExceeded) or the conn fails or is closed.
func (c *Conn) Read(p []byte) (int, error) {
	n := 0
	err := c.waitIO("read", &c.rd, func() (bool, error) {
		if len(p) == 0 {
			return true, nil
		}
		var err error
		n, err = c.st.Read(p)
		if n > 0 && !c.over && c.st.HasFrame() {
			c.a.settleLocked(time.Now()) // a window update is due
		}
		return n > 0, err
	})
	return n, err
}

// Write queues p for delivery. It blocks while the send buffer is full and
// returns when all of p is queued, or with the count queued so far and an
// error: os.ErrDeadlineExceeded after the write deadline, net.ErrClosed
// after Close or CloseWrite, or why the conn failed. Bytes counted as
// written are delivered unless the conn fails.
func (c *Conn) Write(p []byte) (int, error) {
	total := 0
	err := c.waitIO("write", &c.wd, func() (bool, error) {
		if c.over || c.st.Err() != nil {
			return false, c.failure()
		}
		n := c.st.Write(p[total:])
		if n > 0 {
			total += n
			now := time.Now()
			c.touch(now)
			c.a.settleLocked(now)
		} else if c.st.SendDone() {
			return false, errClosed // after CloseWrite
		}
		return total == len(p), nil
	})
	return total, err
}

// CloseWrite shuts down the writing side: the peer reads every byte
// written so far, then io.EOF. Reading goes on. Further Writes fail with
// net.ErrClosed.
func (c *Conn) CloseWrite() error {
	if err := c.Handshake(context.Background()); err != nil {
		return err
	}
	c.a.mu.Lock()
	defer c.a.mu.Unlock()
	if c.closed {
		return opError("close", c.LocalAddr(), c.raddr, errClosed)
	}
	if !c.over {
		c.st.CloseWrite()
		c.a.settleLocked(time.Now())
	}
	return nil
}

// Close closes the conn for the caller at once: blocked and future Reads
// and Writes return net.ErrClosed. Close does not block. In the background,
// the bytes already accepted by Write are still delivered, followed by the
// end of the stream (the peer reads io.EOF); the association ends when the
// peer has finished too. If the peer keeps sending data that will never be
// read, or does not finish within Config.Linger, it is sent a reset.
// SetLinger changes that bound or makes Close reset the stream at once.
// Close returns an error wrapping net.ErrClosed if the conn was already
// closed.
func (c *Conn) Close() error {
	return c.close(func(now time.Time) {
		if c.over {
			return
		}
		linger := c.cfg.Linger
		if d := c.linger.Load(); d != nil {
			linger = *d
		}
		if linger == 0 {
			c.abortLocked(resetAborted)
			return
		}
		c.st.CloseWrite()
		c.timers[1] = time.AfterFunc(linger, c.lingerExpired)
	})
}

// SetLinger sets what Close does with data not yet delivered, as
// net.TCPConn.SetLinger does. With sec < 0 (the default), Close delivers
// it in the background for at most Config.Linger. With sec == 0, Close
// discards it and resets the stream (an abortive close): the peer's Read
// and Write fail with ErrReset at once, unless the peer had already read
// io.EOF. With sec > 0, Close delivers it for at most sec seconds. It
// takes effect at Close and never fails.
func (c *Conn) SetLinger(sec int) error {
	if sec < 0 {
		c.linger.Store(nil)
		return nil
	}
	d := time.Duration(min(sec, math.MaxInt64/int(time.Second))) * time.Second
	c.linger.Store(&d)
	return nil
}

// failure implements kind.
func (c *Conn) failure() error {
	if c.err != nil {
		return c.err // why the association ended: a timeout, a local abort
	}
	if err := c.st.Err(); err != nil {
		return err // the peer's reset or a protocol violation
	}
	return ErrReset
}

// deliver implements upper.
func (c *Conn) deliver(now time.Time, m engine.Message) {
	c.take(now, m)
	if c.recycle != nil {
		c.recycle.Recycle(m.Data) // the stream copied what it keeps
	}
}

// take hands the stream frame that m carries to the stream, which copies
// what it keeps. It is also the engine's sink (engine.Sinker), called
// with the lock held during HandleDatagram, so that a frame that arrives
// in order is copied once, into the stream.
func (c *Conn) take(now time.Time, m engine.Message) {
	if !c.cfg.proto.Stream.Carries(m) {
		c.a.ep.Log().Debug("rudp: message ignored by a stream", "peer", c.raddr, "number", m.MessageNumber)
		return
	}
	c.touch(now)
	if err := c.st.HandleFrame(m.Data[len(c.cfg.proto.Stream.Prefix):]); err != nil {
		c.a.ep.Log().Debug("rudp: stream frame rejected", "peer", c.raddr, "err", err)
	}
}

// recvOpen implements upper: the stream's window bounds what it holds,
// and a closed stream resets a peer that keeps sending (see closeStep).
func (c *Conn) recvOpen() bool { return true }

// ended implements upper.
func (c *Conn) ended(err error) {
	c.endedBase(err)
	c.rest()
	if c.accepted != nil && !c.opened {
		c.accepted.forget(c)
	}
}

// pump implements upper: frames go from the stream to the engine; the
// handshake and close procedures advance.
func (c *Conn) pump(now time.Time) {
	if c.a.tr != nil {
		defer c.traceFlow(now)
	}
	c.keySeal()
	if !c.idle(now) {
		// An idle stream's keepalive leaves both as they were.
		stats := c.a.eng.Stats()
		c.st.Tune(now, stats.SRTT)
		c.setLimits(stats.Congestion.Cwnd)
	}
	c.useLarge()
	for range 2 {
		drained := false // the stream has no frame left to send
		for c.a.eng.Pending() < c.maxQueued && c.a.eng.SendRoom(c.cfg.proto.Stream.Send.Channel) > 0 {
			// No buffer is taken to learn that nothing is due: an idle
			// stream's engine is trimmed, and a keepalive would make it
			// allocate one.
			if c.held == 0 && !c.st.HasFrame() {
				c.releaseFrame()
				drained = true
				break
			}
			frame := c.frameBuffer()
			if c.held == 0 {
				pre := c.cfg.proto.Stream.Prefix
				if c.held = c.st.NextFrame(frame[len(pre):]); c.held > 0 {
					c.held += copy(frame, pre)
				}
			}
			if c.held == 0 { // a frame buffer too short for any frame
				c.releaseFrame()
				drained = true
				break
			}
			if c.sendFrame() != nil {
				break // kept for the next pump; if the engine ended, settle reports why
			}
			c.held = 0
		}
		// An accepted conn is queued for Accept once the dialer has echoed
		// its token: a spoofer sending blind never gets one accepted.
		if !c.opened && c.st.Validated() {
			c.markOpened(now)
			if c.accepted != nil && !c.accepted.ready(c) {
				c.abortLocked(resetRefused)
				continue
			}
		}
		if !c.closeStep(now, drained) {
			return
		}
	}
}

// keySeal moves the association to the keyed seal (socket.SealKey) as
// soon as each step is safe: it takes datagrams under the key once the
// peer's HELLO gave this end the key; the accepting end sends under it
// once the dialer has echoed its token, which shows that the dialer has
// its HELLO and so the key; the dialing end sends under it once a
// datagram under the key has come from the accepting end. Until then the
// plain seal goes on both ways: an end never sends under a key its peer
// may not have.
func (c *Conn) keySeal() {
	a := c.a
	if a.txKey != 0 || !c.st.Opened() {
		return
	}
	if a.rxKey == 0 {
		a.rxKey = socket.SealKey(c.st.Starts())
	}
	if c.st.Server() && c.st.Validated() || !c.st.Server() && a.peerKeyed {
		a.txKey = a.rxKey
	}
}

// setLimits sets the stream's send limit and receive limit from the
// engine's congestion window cwnd and the process's budgets (see
// sendLimit and recvLimit).
func (c *Conn) setLimits(cwnd int) {
	n := int(busyStreams.Load())
	c.st.SetSendLimit(sendLimit(cwnd, n))
	c.st.SetRecvLimit(recvLimit(n))
}

// sendLimit is how many bytes a stream with congestion window cwnd lets
// Write hold unsent, within Config.SendBuffer, when busy streams of the
// process are busy (busyStreams): four windows, and no more than its
// share of sendBudget (at least minLimit), but at least the lower of that
// share and minSendLimit. With the engine's own queue (engine.SendRoom)
// four windows keep several ready behind the one in flight, so that a
// fast stream's writer is not woken for every window; the share keeps a
// thousand streams writing at once from each holding its four windows. It
// is a power of two, rounded down, so that the stream's ring keeps to the
// sizes its pool holds. Linux sizes a TCP socket's send buffer from its
// window in the same way (net/ipv4/tcp_input.c, tcp_sndbuf_expand, at
// v6.12), within a memory limit shared by all sockets (tcp_mem).
func sendLimit(cwnd, busy int) int {
	share := max(sendBudget/max(busy, 1), minLimit)
	return floorPow2(max(min(4*cwnd, share), min(share, minSendLimit)))
}

// minSendLimit is the least a stream may hold unsent while its share of
// sendBudget allows: a large frame's worth (engine.MinSendRoom, 64 KiB),
// so that its frames stay large, and a stream's Write takes at least that
// beyond its peer's window. Beyond 256 busy streams the share is lower.
const minSendLimit = engine.MinSendRoom

// recvLimit is the most a stream advertises of its receive window, within
// Config.RecvWindow and the window's auto-tuning, when busy streams of the
// process are busy (busyStreams): its share of recvBudget, but at least
// minLimit, a power of two rounded down. Linux likewise clamps its TCP
// sockets' receive windows under the memory limit they share
// (net/ipv4/tcp_input.c, tcp_clamp_window, at v6.12).
func recvLimit(busy int) int {
	return floorPow2(max(recvBudget/max(busy, 1), minLimit))
}

// floorPow2 rounds n, positive, down to a power of two.
func floorPow2(n int) int { return 1 << (bits.Len(uint(n)) - 1) }

// sendBudget and recvBudget are the bytes that the streams of a process
// hold unsent, and may be sent unread, between them before each is held to
// its share (see sendLimit and recvLimit). A stream's Write and a peer
// that fills its window hold their share in a ring: a thousand streams
// writing and reading at once hold about both budgets between them, and
// idle streams count for nothing. With the defaults (Config.SendBuffer and
// Config.RecvWindow, 1 MiB) the budgets bind once more than 16 streams of
// the process are busy, and the shares reach minLimit at 1,024.
const (
	sendBudget = 16 << 20
	recvBudget = 16 << 20
)

// minLimit is the least share of the budgets, the least a stream may hold
// unsent or advertise to its peer, in bytes: a dozen datagrams of the
// usual size, so that a stream held to it still fills a window of a few
// datagrams.
const minLimit = 16 << 10

// frameBuffer returns the buffer of the next frame: the engine's own
// where it builds messages in place (engine.Builder), so that the frame
// is not copied again, a buffer from framePool otherwise. A frame the
// engine refused (c.held > 0) is still in it. The engine's buffer is of
// the frame's size (Stream.FrameSize), not the largest frame's: the
// engine keeps it until the frame is acknowledged, and a thousand streams
// held to small windows would otherwise each keep 64 KiB buffers for
// frames of a few KiB.
func (c *Conn) frameBuffer() []byte {
	if c.build != nil {
		n := c.held
		if n == 0 {
			pre := len(c.cfg.proto.Stream.Prefix)
			n = min(c.maxFrame, pre+c.st.FrameSize(c.maxFrame-pre))
		}
		return c.build.MessageBuffer(n)
	}
	if c.frame == nil {
		c.frame = framePool.Get().(*[maxSend]byte)[:c.maxFrame]
	}
	return c.frame
}

// releaseFrame gives back the frame buffer, empty, when the stream has no
// frame left to send: an idle conn holds none. The engine's stays with
// it, freed by its Trim.
func (c *Conn) releaseFrame() {
	if c.frame != nil {
		framePool.Put((*[maxSend]byte)(c.frame[:maxSend]))
		c.frame = nil
	}
}

// sendFrame hands the frame of c.held bytes in frameBuffer to the engine.
func (c *Conn) sendFrame() error {
	if c.build != nil {
		return c.build.SendBuffer(c.held, c.cfg.proto.Stream.Send)
	}
	return c.a.eng.Send(c.frame[:c.held], c.cfg.proto.Stream.Send)
}

// busyStreams counts the streams of the process that have moved bytes
// within trimAfter (Conn.busy): those sharing sendBudget and recvBudget.
var busyStreams atomic.Int64

// touch records that the stream moved bytes at now.
func (c *Conn) touch(now time.Time) {
	c.active = now
	if !c.busy {
		c.busy = true
		busyStreams.Add(1)
	}
}

// rest records that the stream has moved no bytes for trimAfter, or ended.
func (c *Conn) rest() {
	if c.busy {
		c.busy = false
		busyStreams.Add(-1)
	}
}

// idle reports whether the stream has moved no bytes for trimAfter and
// holds none to send: its receive window needs no tuning (see
// stream.Stream.Tune) and its send limit no update.
func (c *Conn) idle(now time.Time) bool {
	return now.Sub(c.active) >= trimAfter && c.st.Unsent() == 0
}

// settled implements upper: a stream idle for trimAfter keeps no buffers,
// nor its engine (see engine.Trimmer), and stops counting as busy (see
// busyStreams). It trims after the engine has written what was due, its
// answer to a probe included, so that nothing allocated for that stays.
// A busy stream asks for a settle when it will have been idle for
// trimAfter, so that it trims then rather than at its next keepalive.
func (c *Conn) settled(now time.Time) time.Time {
	if now.Sub(c.active) >= trimAfter {
		c.rest()
		c.st.Trim()
		c.a.spare = nil
		// The engine keeps a frame it refused in its buffer (see
		// frameBuffer): it is trimmed once that frame has gone.
		if t, ok := c.a.eng.(engine.Trimmer); ok && (c.build == nil || c.held == 0) {
			t.Trim()
		}
	}
	if c.busy {
		return c.active.Add(trimAfter)
	}
	return time.Time{}
}

// closeStep advances an aborted or closing conn towards the engine's
// close; it returns true if it queued a frame.
func (c *Conn) closeStep(now time.Time, drained bool) bool {
	if c.engClosing {
		return false
	}
	if c.aborted || c.st.Err() != nil {
		if drained {
			c.beginClose(now)
		}
		return false
	}
	if !c.closed || !c.st.SendDone() || c.a.eng.Pending() > 0 {
		return false
	}
	if c.st.RecvDone() {
		c.beginClose(now)
		return false
	}
	if c.st.Readable() { // data arrives that nobody will read
		c.abortLocked(resetClosed)
		return true
	}
	return false
}

// abortLocked implements kind: an RST frame goes to the peer.
func (c *Conn) abortLocked(code uint8) {
	if !c.aborted {
		c.aborted = true
		c.st.Abort(code)
	}
}

func (c *Conn) base() *connBase { return &c.connBase }

// traceFlow reports the stream's becoming blocked by the peer's
// flow-control limit.
func (c *Conn) traceFlow(now time.Time) {
	blocked := c.st.FlowBlocked()
	if blocked && !c.flowBlocked && c.a.tr.t.FlowBlocked != nil {
		c.a.tr.t.FlowBlocked(now, c.st.Unsent())
	}
	c.flowBlocked = blocked
}

// useLarge lets the engine send large frames once the conn is open (the
// peer's HELLO has arrived, and a listener's peer has shown that it
// receives, which lifts the amplification limit that would otherwise drop
// a large frame as if the path had), if the engine can and the address
// and MTU allow. No RTT tells the loopback interface from a relay on a
// loopback address in front of a smaller MTU, least of all in a busy
// process, whose queues make a thousand loopback streams' RTTs tens of
// milliseconds: the engine's first large frames probe the path, and one
// lost before any is acknowledged gives them up (engine.LargeFramer).
// Call with the lock held.
func (c *Conn) useLarge() {
	if c.largeChecked || !c.opened {
		return
	}
	c.largeChecked = true
	lf, ok := c.a.eng.(engine.LargeFramer)
	if !ok {
		return
	}
	if n := largeFrame(lf, c.raddr, loopbackMTU()); n > 0 {
		lf.SetMaxFrame(n)
		c.a.sendsLarge = true
	}
}

// names implements kind.
func (c *Conn) names() (what, other string) { return "stream", "message conns (ListenMessages)" }

// crossed implements crosser: the stream starts again over eng, the
// server engine of a simultaneous open. Nothing was written yet (the
// dial waits for the handshake), and what the old engine had of the
// stream (its HELLO) goes with it.
func (c *Conn) crossed(_ time.Time, eng engine.Engine) {
	c.releaseFrame()
	c.held = 0
	c.bind(eng)
}

// claim implements acceptable.
func (c *Conn) claim() bool { return claimConn(c.a, &c.accepted, c) }
