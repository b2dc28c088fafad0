package congestion

import (
	"log/slog"
	"time"

	"github.com/rudpkit/rudp/trace"
)

// Algorithm selects how a Controller sizes its window and pacing rate.
type Algorithm uint8

const (
	// BBR is the model-based controller (the default); see the package
	// documentation.
	BBR Algorithm = iota
	// AIMD is the POROUS paper's additive-increase, multiplicative-decrease
	// window, without pacing.
	AIMD
)

// String returns "bbr" or "aimd".
func (a Algorithm) String() string {
	switch a {
	case BBR:
		return "bbr"
	case AIMD:
		return "aimd"
	}
	return "algorithm(?)"
}

// Defaults and limits of Config, in bytes.
const (
	// DefaultInitialWindow is BBR's initial window in datagrams (RFC 6928's
	// ten segments).
	DefaultInitialWindow = 10
	// MinWindow is BBR's smallest window in datagrams (draft-ietf-ccwg-bbr-02
	// §5.6.4.1, BBRMinPipeCwnd).
	MinWindow = 4
	// MaxWindow is the largest window: 1 GiB.
	MaxWindow = 1 << 30
)

// Config configures a Controller. MaxDatagram is required; every other
// zero field takes its default.
type Config struct {
	// Algorithm is BBR (default) or AIMD.
	Algorithm Algorithm
	// MaxDatagram is the size of the largest datagram counted in flight,
	// in bytes (the engine's MSS). Windows and bursts are multiples of it.
	MaxDatagram int
	// InitialWindow is the window before any acknowledgement, in bytes:
	// default DefaultInitialWindow datagrams for BBR, one datagram for
	// AIMD (the POROUS paper's initial window).
	InitialWindow int
	// MaxRate caps the sending rate in bytes per second (the pacing rate
	// of BBR, the window / RTT of AIMD); 0 means no cap. SetMaxRate
	// changes it.
	MaxRate uint64
	// Logger receives congestion events (state changes, responses to
	// loss) at Debug level; nil discards them.
	Logger *slog.Logger
	// Tracer, when not nil, receives the controller's events: packets
	// sent and lost, spurious retransmits, metrics after each Update and
	// state changes.
	Tracer *trace.ConnTracer
}

// Packet is a Controller's record of one datagram that counts in flight.
// The engine keeps it with the datagram until the datagram is
// acknowledged or declared lost; OnSent fills it and it must not be
// changed otherwise.
type Packet struct {
	// SentAt is when the datagram (its latest transmission) left.
	SentAt time.Time
	// Size is its size in bytes, as counted in flight.
	Size int

	delivered   uint64    // bytes delivered when it left
	deliveredAt time.Time // when delivered last grew, as it left
	firstSentAt time.Time // send time of the newest datagram acknowledged, as it left
	lost        uint64    // bytes lost when it left
	txInFlight  int       // bytes in flight when it left, itself included
	order       uint64    // send order, from 1
	appLimited  bool      // sent while the sender was application-limited
	probing     bool      // sent while the pacing gain was above 1
	round       uint64    // the algorithm's round trip when it left
	retransmit  bool      // a retransmission
	inFlight    bool      // counted in the bytes in flight
	ahead       bool      // sent ahead of the window and the pacer (OnSentAhead)
}

// InFlight reports whether the datagram still counts in flight: sent and
// neither acknowledged nor declared lost.
func (p *Packet) InFlight() bool { return p.inFlight }

// Ahead reports whether the datagram's latest transmission left ahead of
// the window and the pacer (OnSentAhead).
func (p *Packet) Ahead() bool { return p.ahead }

// RTT is what an engine knows of the round trip at an Update: Latest is
// the sample the event gave (0 if none: acknowledgements of retransmitted
// datagrams give none, by Karn's rule), Smoothed the SRTT and RTO the
// current retransmission timeout (both may be estimates before any
// sample).
type RTT struct {
	Latest   time.Duration
	Smoothed time.Duration
	RTO      time.Duration
}

// Stats are a Controller's figures.
type Stats struct {
	Algorithm Algorithm
	State     string        // BBR: "startup", "drain", "probe_bw", "probe_rtt"; AIMD: "slow_start", "avoidance"
	Cwnd      int           // congestion window, bytes
	InFlight  int           // bytes in flight
	Pacing    uint64        // pacing rate, bytes/s; 0 when unpaced
	Bandwidth uint64        // BBR: the bottleneck bandwidth estimate; AIMD: the latest delivery rate; bytes/s
	MinRTT    time.Duration // smallest RTT seen (BBR: over the last 10 s)
	Delivered uint64        // bytes acknowledged
	Lost      uint64        // bytes declared lost
	Losses    uint64        // datagrams declared lost
	Events    uint64        // congestion responses: AIMD halvings and resets, BBR rounds whose loss was congestion
}

// LossRate is Lost / (Lost + Delivered): the share of the bytes sent and
// resolved that were lost; 0 before any.
func (s Stats) LossRate() float64 {
	if s.Lost+s.Delivered == 0 {
		return 0
	}
	return float64(s.Lost) / float64(s.Lost+s.Delivered)
}

// sample is one acknowledgement or loss event as the algorithm sees it.
type sample struct {
	acked         int       // bytes newly acknowledged
	lost          int       // bytes newly declared lost
	priorInFlight int       // bytes in flight before the event
	lostSentAt    time.Time // latest transmission among the lost datagrams
	lostTxFlight  int       // largest flight at which a lost datagram left
	losses        int       // datagrams newly declared lost

	// Delivery rate (draft-cheng-iccrg-delivery-rate-estimation-02 §3.3):
	// from the most recently sent datagram acknowledged.
	hasRate        bool
	priorDelivered uint64
	priorLost      uint64
	priorTime      time.Time
	sendElapsed    time.Duration
	ackElapsed     time.Duration
	appLimited     bool
	txInFlight     int
	rate           uint64 // bytes/s, 0 when no valid sample
	rtt            RTT
}

// algorithm is what BBR and AIMD implement.
type algorithm interface {
	update(c *Controller, now time.Time, s *sample) (backoff bool)
	probing() bool
	roundCount() uint64
	// resolved takes one datagram acknowledged or declared lost.
	resolved(p *Packet, lost bool)
	cwnd() int
	pacingRate() uint64
	state() string
	bandwidth() uint64
	minRTT() time.Duration
}

// Controller is one association's congestion controller. It is not safe
// for concurrent use; the engine serialises all calls.
type Controller struct {
	cfg         Config
	log         *slog.Logger
	alg         algorithm
	pace        pacer
	inFlight    int
	ahead       int // bytes in flight sent by OnSentAhead
	delivered   uint64
	deliveredAt time.Time
	firstSentAt time.Time
	lost        uint64
	losses      uint64
	events      uint64
	appLimited  uint64 // C.app_limited: the delivered mark that ends the application-limited phase, 0 if none
	ev          sample
	evOpen      bool
	lastRate    uint64
	sent        uint64 // datagrams sent, for Packet.order
	rack        rack
}

// New returns a Controller for cfg, at now. It panics if MaxDatagram is
// not positive (a programming error).
func New(now time.Time, cfg Config) *Controller {
	if cfg.MaxDatagram <= 0 {
		panic("congestion: Config.MaxDatagram must be positive")
	}
	c := &Controller{cfg: cfg, log: cfg.Logger, deliveredAt: now, firstSentAt: now}
	c.rack.disabled = cfg.Algorithm == AIMD
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.model(now)
	return c
}

// model makes sure the algorithm has its model, starting a fresh one at
// now after New or Trim.
func (c *Controller) model(now time.Time) {
	if c.alg != nil {
		return
	}
	switch c.cfg.Algorithm {
	case AIMD:
		c.alg = newAIMD(c.cfg)
	default:
		c.alg = newBBR(now, c.cfg)
	}
	c.pace.setRate(now, c.alg.pacingRate(), c.cfg.MaxDatagram)
}

// Trim frees the algorithm's model (its bandwidth, RTT and loss
// estimates, its window) when nothing is in flight, as an engine does
// when its association has been idle for a while (engine.Trimmer): the
// next datagram sent starts a fresh model at the initial window, as a TCP
// sender restarts from its initial window after an idle period longer
// than its RTO (RFC 5681 §4.1; RFC 6298 §2.4's RTO is at least 1 s).
// Until then the window and the state read as the initial ones; the
// counters (Stats.Delivered, Lost, ...) are kept.
func (c *Controller) Trim() {
	if c.inFlight == 0 && !c.evOpen {
		c.alg = nil
	}
}

// SetMaxRate changes Config.MaxRate (bytes/s, 0 for no cap), as when a
// peer advertises its receive rate.
func (c *Controller) SetMaxRate(now time.Time, rate uint64) {
	c.cfg.MaxRate = rate
	if c.alg != nil {
		c.pace.setRate(now, c.alg.pacingRate(), c.cfg.MaxDatagram)
	}
}

// OnSent records that a datagram of size bytes that counts in flight left
// at now, filling p. A retransmission (retransmit true) gets a fresh
// record too: the latest transmission is the one acknowledged or lost,
// and an acknowledgement that may be of an earlier one is treated as
// RFC 8985 §6.2 says.
func (c *Controller) OnSent(now time.Time, p *Packet, size int, retransmit bool) {
	c.model(now)
	c.sent++
	if c.inFlight == 0 {
		// draft-cheng-iccrg-delivery-rate-estimation-02 §3.2: a send
		// after idle starts the send and ack intervals afresh.
		c.firstSentAt, c.deliveredAt = now, now
	}
	c.inFlight += size
	if t := c.cfg.Tracer; t != nil && t.PacketSent != nil {
		t.PacketSent(now, size, retransmit)
	}
	*p = Packet{
		SentAt:      now,
		Size:        size,
		delivered:   c.delivered,
		deliveredAt: c.deliveredAt,
		firstSentAt: c.firstSentAt,
		lost:        c.lost,
		txInFlight:  c.inFlight,
		order:       c.sent,
		appLimited:  c.appLimited != 0,
		probing:     c.alg.probing(),
		round:       c.alg.roundCount(),
		retransmit:  retransmit,
		inFlight:    true,
	}
	c.pace.sent(now, size)
}

// OnSentAhead records, as OnSent does, a datagram that left at now ahead
// of the window and the pacer, as CanSendAhead allowed: it counts in
// flight like any other, and also against the bytes that may be in
// flight ahead until it is acknowledged, declared lost or forgotten.
func (c *Controller) OnSentAhead(now time.Time, p *Packet, size int, retransmit bool) {
	c.OnSent(now, p, size, retransmit)
	p.ahead = true
	c.ahead += size
}

// OnSentUnacked takes pacer credit for a datagram of size bytes that does
// not count in flight (nothing acknowledges it, as an unreliable
// message), so that pacing covers every datagram carrying data.
func (c *Controller) OnSentUnacked(now time.Time, size int) { c.pace.sent(now, size) }

// open starts an event if none is open.
func (c *Controller) open() {
	if !c.evOpen {
		c.evOpen = true
		c.ev = sample{priorInFlight: c.inFlight}
	}
}

// OnAcked records that the peer acknowledged p at now. A datagram already
// declared lost still counts as delivered (its loss was spurious). Call
// Update after the last OnAcked and OnLost of the event.
func (c *Controller) OnAcked(now time.Time, p *Packet) {
	c.model(now) // an acknowledgement of a datagram declared lost may come after Trim
	c.open()
	c.leave(p)
	c.delivered += uint64(p.Size)
	c.deliveredAt = now
	c.ev.acked += p.Size
	c.alg.resolved(p, false)
	c.rack.acked(now, p)
	// §3.3: the sample comes from the most recently sent datagram acked.
	if !c.ev.hasRate || p.delivered > c.ev.priorDelivered ||
		p.delivered == c.ev.priorDelivered && p.SentAt.After(c.firstSentAt) {
		c.ev.hasRate = true
		c.ev.priorDelivered = p.delivered
		c.ev.priorLost = p.lost
		c.ev.priorTime = p.deliveredAt
		c.ev.appLimited = p.appLimited
		c.ev.sendElapsed = p.SentAt.Sub(p.firstSentAt)
		c.ev.ackElapsed = now.Sub(p.deliveredAt)
		c.ev.txInFlight = p.txInFlight
		c.firstSentAt = p.SentAt
	}
}

// OnLost records that p was declared lost at now, for reason (which the
// tracer reports). Call Update after the last OnAcked and OnLost of the
// event.
func (c *Controller) OnLost(now time.Time, p *Packet, reason trace.LossReason) {
	if !p.inFlight {
		return
	}
	if t := c.cfg.Tracer; t != nil && t.PacketLost != nil {
		t.PacketLost(now, p.Size, reason)
	}
	c.open()
	c.leave(p)
	c.lost += uint64(p.Size)
	c.losses++
	c.ev.losses++
	c.rack.detected()
	c.ev.lost += p.Size
	c.alg.resolved(p, true)
	if p.SentAt.After(c.ev.lostSentAt) {
		c.ev.lostSentAt = p.SentAt
	}
	c.ev.lostTxFlight = max(c.ev.lostTxFlight, p.txInFlight)
}

// Forget stops counting p in flight without counting it as delivered or
// lost, as when a datagram is abandoned.
func (c *Controller) Forget(p *Packet) { c.leave(p) }

// leave stops counting p in flight, if it still counts.
func (c *Controller) leave(p *Packet) {
	if !p.inFlight {
		return
	}
	p.inFlight = false
	c.inFlight -= p.Size
	if p.ahead {
		c.ahead -= p.Size
	}
}

// Update ends an event of OnAcked and OnLost calls at now, with what the
// engine knows of the RTT, and adapts the window and pacing rate. It
// returns true when the window collapsed after persistent loss (AIMD's
// reset after losses for eight RTOs), when the engine should back its
// RTO off; BBR never asks for that.
func (c *Controller) Update(now time.Time, rtt RTT) (backoff bool) {
	if !c.evOpen {
		return false
	}
	c.evOpen = false
	s := &c.ev
	s.rtt = rtt
	if s.hasRate {
		if c.appLimited != 0 && c.delivered > c.appLimited {
			c.appLimited = 0
		}
		// §3.3: the interval is the longer of the send and ack phases, so
		// that neither compression of acks nor of sends inflates the rate.
		interval := max(s.sendElapsed, s.ackElapsed)
		// A sample over less than the minimum RTT reflects ack
		// compression, not the path: it is discarded (§3.3).
		if interval > 0 && interval >= c.alg.minRTT() {
			s.rate = rateOf(c.delivered-s.priorDelivered, interval)
			c.lastRate = s.rate
		}
	}
	var state string
	if c.cfg.Tracer != nil {
		state = c.alg.state()
	}
	backoff = c.alg.update(c, now, s)
	c.pace.setRate(now, c.alg.pacingRate(), c.cfg.MaxDatagram)
	if c.cfg.Tracer != nil {
		c.traceUpdate(now, state, rtt)
	}
	return backoff
}

// traceUpdate reports the figures after an Update at now, and the new
// state if it is not before.
func (c *Controller) traceUpdate(now time.Time, before string, rtt RTT) {
	t := c.cfg.Tracer
	if after := c.alg.state(); after != before && t.CongestionStateChanged != nil {
		t.CongestionStateChanged(now, after)
	}
	if t.MetricsUpdated != nil {
		st := c.Stats()
		t.MetricsUpdated(now, trace.Metrics{
			LatestRTT: rtt.Latest, SmoothedRTT: rtt.Smoothed, RTO: rtt.RTO, MinRTT: st.MinRTT,
			Cwnd: st.Cwnd, BytesInFlight: st.InFlight, PacingRate: st.Pacing, Bandwidth: st.Bandwidth,
		})
	}
}

// AppLimited records that the engine had room to send at now and nothing
// to send, so that the delivery-rate samples of the datagrams it sends
// next do not lower the bandwidth estimate (§3.4).
func (c *Controller) AppLimited() {
	c.appLimited = max(c.delivered+uint64(c.inFlight), 1)
}

// CanSend reports whether a datagram of size bytes that counts in flight
// may leave at now: it fits what is left of the window (any datagram fits
// when nothing is in flight) and the pacer has credit.
func (c *Controller) CanSend(now time.Time, size int) bool {
	return c.fits(size) && c.pace.ready(now)
}

// AheadRoom returns the size of the largest datagram that may leave at
// now ahead of the window and the pacer (0 when none may), for a
// latency-sensitive message that would otherwise wait behind bulk data.
// Such datagrams may be in flight beyond the window by MaxDatagram bytes
// in all, and take pacer credit as a debt of at most one burst, which the
// datagrams after them repay by waiting: the window is exceeded by at
// most MaxDatagram bytes and the long-run pacing rate is unchanged. Send
// one with OnSentAhead.
func (c *Controller) AheadRoom(now time.Time) int {
	if !c.pace.canOwe(now) {
		return 0
	}
	return max(0, c.cfg.MaxDatagram-c.ahead)
}

func (c *Controller) fits(size int) bool {
	return c.inFlight == 0 || c.inFlight+size <= c.cwnd()
}

// cwnd is the algorithm's window, or the initial one while it has no
// model (see Trim).
func (c *Controller) cwnd() int {
	if c.alg == nil {
		return initialWindow(c.cfg)
	}
	return c.alg.cwnd()
}

// initialWindow is the window a fresh model starts with:
// Config.InitialWindow, by default DefaultInitialWindow datagrams for BBR
// and one for AIMD.
func initialWindow(cfg Config) int {
	switch {
	case cfg.InitialWindow > 0:
		return cfg.InitialWindow
	case cfg.Algorithm == AIMD:
		return cfg.MaxDatagram
	}
	return DefaultInitialWindow * cfg.MaxDatagram
}

// Room returns how many more bytes the window takes now (0 when full).
func (c *Controller) Room() int { return max(0, c.cwnd()-c.inFlight) }

// NextSend returns when CanSend(now, size) may next be true: now if it
// is, the time the pacer allows the datagram if only pacing holds it
// back, and the zero time when it does not fit the window (an
// acknowledgement must come first).
func (c *Controller) NextSend(now time.Time, size int) time.Time {
	if !c.fits(size) {
		return time.Time{}
	}
	return c.pace.next(now)
}

// InFlight returns the bytes in flight.
func (c *Controller) InFlight() int { return c.inFlight }

// Window returns the congestion window in bytes.
func (c *Controller) Window() int { return c.cwnd() }

// Stats returns the controller's figures.
func (c *Controller) Stats() Stats {
	st := Stats{
		Algorithm: c.cfg.Algorithm,
		Cwnd:      c.cwnd(),
		InFlight:  c.inFlight,
		Pacing:    c.pace.rate,
		Bandwidth: c.lastRate,
		Delivered: c.delivered,
		Lost:      c.lost,
		Losses:    c.losses,
		Events:    c.events,
	}
	if c.alg == nil { // trimmed: as a fresh model starts
		st.State = modeNames[modeStartup]
		if c.cfg.Algorithm == AIMD {
			st.State = slowStart
		}
		return st
	}
	st.State, st.MinRTT = c.alg.state(), c.alg.minRTT()
	if bw := c.alg.bandwidth(); bw != 0 {
		st.Bandwidth = bw
	}
	return st
}
