package congestion

import (
	"time"
)

// BBR constants. Gains are in thousandths (gainUnit). Sections are of
// draft-ietf-ccwg-bbr-02 unless noted.
const (
	startupPacingGain = 2770 // 4·ln 2, §5.1.1 (BBRStartupPacingGain)
	startupCwndGain   = 2000 // §5.1.1 (BBRStartupCwndGain)
	drainPacingGain   = 350  // §5.1.1 (BBRDrainPacingGain)
	probeBWCwndGain   = 2000 // §5.1.1 (BBR.cwnd_gain in ProbeBW)
	probeRTTCwndGain  = 500  // §5.3.4.4: ProbeRTT keeps half a BDP in flight

	// fullBwGrowth and fullBwRounds: Startup ends when the bandwidth has
	// not grown by 25 % for 3 round trips (§5.3.1.2).
	fullBwGrowth = 1250
	fullBwRounds = 3
	// bwWindow is the bottleneck bandwidth filter's length in round trips
	// (the BBR v1 draft's BtlBwFilterLen; v3's two probe cycles are about
	// as long at the cycle length used here).
	bwWindow = 10
	// minRTTWindow is how long a minimum RTT sample is trusted (§5.3.4.3,
	// BBR.MinRTTFilterLen); when it expires, ProbeRTT refreshes it.
	minRTTWindow = 10 * time.Second
	// probeRTTDuration is how long ProbeRTT holds the flight down
	// (§5.3.4.4, ProbeRTTDuration).
	probeRTTDuration = 200 * time.Millisecond
	// nominalRTT is the RTT assumed for the initial pacing rate before any
	// sample (§5.6.2, BBRInitPacingRate's 1 ms).
	nominalRTT = time.Millisecond

	// LossThreshold is how much the loss rate of the datagrams sent while
	// probing (pacing gain above 1) may exceed the background loss rate
	// before the probe counts as congestion, in thousandths of the bytes
	// resolved (BBRv3's BBRLossThresh, 2 %, §5.5.10.2, measured against
	// the background here so that random loss is not congestion). It is
	// also the loss rate that congests a round when the path shows
	// queueing delay.
	LossThreshold = 20
	// StartupLossThreshold is the loss rate of a Startup round, in
	// thousandths, that ends Startup: the background loss rate is not
	// known yet, so random loss below it does not end Startup early.
	StartupLossThreshold = 100
	// maxBackground bounds the background loss rate, in thousandths.
	maxBackground = 500
	// lossSample is how many datagrams' worth of bytes a loss rate is
	// measured over at least: rounds are added up until they resolve that
	// many, so that one loss in a small round is not read as a high rate.
	lossSample = 64
	// minLosses is how many datagrams a sample must lose to be found
	// congested.
	minLosses = 3
	// inflightHiBeta is what is kept of the flight at which a round lost
	// to congestion (BBRv3's β = 0.7 applied to the overflowing flight;
	// 0.85 here because the flight already includes the excess).
	inflightHiBeta = 700
	// inflightHiGrowth is how many datagrams a round without congestion
	// adds to the flight bound per growthRTT of minimum RTT (at least
	// once): an additive increase, the same for flows of one RTT whatever
	// their rates, so that flows that share a bottleneck and cut their
	// bounds by the same factor converge to equal shares (Chiu and Jain,
	// 1989); per unit of time rather than per round, so that a path of
	// 100 ms recovers as fast as one of 10 ms.
	inflightHiGrowth = 4
	growthRTT        = 10 * time.Millisecond
)

// probeBWGains is the ProbeBW cycle, one phase per minimum RTT: probe up,
// drain the queue that made, then cruise (the v1 cycle, §4.3.3 of the v1
// draft).
var probeBWGains = [8]uint64{1250, 750, 1000, 1000, 1000, 1000, 1000, 1000}

// QueueDelay returns the queueing delay that marks a path as queued: an
// RTT at least this much above the minimum RTT. It is HyStart++'s
// threshold (RFC 9406 §4.2): an eighth of the minimum RTT, within 4 to
// 16 ms, so that jitter and scheduling delay do not read as a queue.
func QueueDelay(minRTT time.Duration) time.Duration {
	return min(max(minRTT/8, 4*time.Millisecond), 16*time.Millisecond)
}

// rttSamplesPerRound is how many RTT samples a round needs before its
// smallest one can end Startup (RFC 9406 §4.2, N_RTT_SAMPLE).
const rttSamplesPerRound = 8

// roundSlots is how many rounds of datagrams are accounted by send round:
// a round's datagrams are judged judgeLag rounds after it, when they have
// all been acknowledged or declared lost (RACK needs a round trip and a
// reordering window after the datagram to find it lost).
const (
	roundSlots = 4
	judgeLag   = 2
)

// sendRound is the loss account of the datagrams sent in one round.
type sendRound struct {
	round        uint64
	probe, other lossCount
}

type bbrMode uint8

const (
	modeStartup bbrMode = iota
	modeDrain
	modeProbeBW
	modeProbeRTT
)

var modeNames = [...]string{"startup", "drain", "probe_bw", "probe_rtt"}

// bbr is the model-based controller; see the package documentation.
type bbr struct {
	mss     int
	initial int
	mode    bbrMode

	bw     maxFilter // bottleneck bandwidth, bytes/s, by round
	minRtt time.Duration
	minAt  time.Time

	round       uint64
	nextRound   uint64                // C.delivered that ends the round
	bySend      [roundSlots]sendRound // loss by the round the datagrams were sent in
	probe       lossCount             // datagrams sent while probing, judged rounds
	other       lossCount             // datagrams sent at a gain of at most 1, judged rounds
	queue       lossCount             // every datagram; lost ones only when the path showed a queue
	lostFlight  int                   // largest flight at which a datagram lost since the last verdict left
	roundMinRTT time.Duration
	roundRTTs   int
	lastMinRTT  time.Duration // the smallest RTT of the last round with enough samples
	background  uint64        // loss rate of datagrams not sent while probing, thousandths: mean of the first samples, then EWMA
	bgSamples   uint64
	bgLast      [3]uint64 // the last loss rates of datagrams not sent while probing, newest first
	bgSeen      int       // how many of bgLast are samples

	fullBw    uint64
	fullCount int
	filled    bool

	phase      int
	phaseStart time.Time

	probeRTTDone      time.Time
	probeRTTRoundDone bool
	priorCwnd         int

	inflightHi int // 0: no bound
	w          int // cwnd
	pacing     uint64
	maxRate    uint64
}

func newBBR(now time.Time, cfg Config) *bbr {
	initial := initialWindow(cfg)
	b := &bbr{mss: cfg.MaxDatagram, initial: initial, w: initial, minAt: now, maxRate: cfg.MaxRate}
	b.pacing = b.capRate(gain(rateOf(uint64(initial), nominalRTT), startupPacingGain))
	return b
}

func (b *bbr) cwnd() int          { return b.w }
func (b *bbr) roundCount() uint64 { return b.round }

func (b *bbr) resolved(p *Packet, lost bool) {
	r := &b.bySend[p.round%roundSlots]
	if r.round != p.round {
		return // sent too long ago to be judged still
	}
	l := &r.other
	if p.probing {
		l = &r.probe
	}
	if lost {
		l.addLost(p.Size)
	} else {
		l.acked += p.Size
	}
}

func (b *bbr) probing() bool {
	return b.mode == modeStartup || b.mode == modeProbeBW && probeBWGains[b.phase] > gainUnit
}
func (b *bbr) pacingRate() uint64    { return b.pacing }
func (b *bbr) bandwidth() uint64     { return b.bw.get() }
func (b *bbr) minRTT() time.Duration { return b.minRtt }
func (b *bbr) state() string         { return modeNames[b.mode] }

func (b *bbr) capRate(r uint64) uint64 {
	if b.maxRate > 0 {
		r = min(r, b.maxRate)
	}
	return max(r, 1)
}

// bdp is the bandwidth-delay product times g, in bytes; the initial
// window before the model has both estimates.
func (b *bbr) bdp(g uint64) int {
	if b.bw.get() == 0 || b.minRtt == 0 {
		return int(gain(uint64(b.initial), g))
	}
	return clampInt(gain(bytesIn(b.bw.get(), b.minRtt), g), 0, MaxWindow)
}

// queued reports whether rtt shows a queue on the path.
func (b *bbr) queued(rtt time.Duration) bool {
	return b.minRtt > 0 && rtt >= b.minRtt+QueueDelay(b.minRtt)
}

// standingQueue reports whether the smallest RTT of the last round
// shows a queue: one that lasted a whole round trip, as when flows share
// an overflowing bottleneck, rather than the queue one probe builds and
// drains or the jitter of single datagrams.
func (b *bbr) standingQueue() bool { return b.lastMinRTT > 0 && b.queued(b.lastMinRTT) }

func (b *bbr) update(c *Controller, now time.Time, s *sample) bool {
	b.maxRate = c.cfg.MaxRate
	expired := now.Sub(b.minAt) > minRTTWindow
	if l := s.rtt.Latest; l > 0 {
		if b.minRtt == 0 || l <= b.minRtt || expired {
			b.minRtt, b.minAt = l, now
		}
		if b.roundRTTs == 0 || l < b.roundMinRTT {
			b.roundMinRTT = l
		}
		b.roundRTTs++
	}

	// Round trips (§5.5.1): a round ends when a datagram sent after the
	// previous round ended is acknowledged.
	roundStart := false
	if s.hasRate && s.priorDelivered >= b.nextRound {
		b.nextRound = c.delivered
		b.round++
		roundStart = true
	}
	b.queue.acked += s.acked
	if s.lost > 0 {
		b.lostFlight = max(b.lostFlight, s.lostTxFlight)
		if b.standingQueue() {
			b.queue.add(lossCount{lost: s.lost, losses: s.losses})
		}
	}

	b.sampleBandwidth(s)
	if roundStart {
		b.endRound(c, now)
	}
	b.checkStartup(c, roundStart)
	b.checkDrain(c, now)
	b.advancePhase(c, now, s)
	b.checkProbeRTT(c, now, expired, roundStart)

	g := uint64(gainUnit)
	switch b.mode {
	case modeStartup:
		g = startupPacingGain
	case modeDrain:
		g = drainPacingGain
	case modeProbeBW:
		g = probeBWGains[b.phase]
	}
	if bw := b.bw.get(); bw > 0 {
		r := b.capRate(gain(bw, g))
		if b.filled || r > b.pacing {
			b.pacing = r // §5.6.2: Startup never lowers the rate
		}
	}
	b.pacing = b.capRate(b.pacing) // a cap set since (SetMaxRate) applies in Startup too
	b.setCwnd(c, s)
	return false
}

// sampleBandwidth feeds the bandwidth filter with the delivery rate
// divided by the share the path does not lose at random (1 − the
// background loss rate): random loss is not a property of the bottleneck,
// and counting only delivered bytes (§5.5.5) would lower the estimate by
// the loss rate every round.
func (b *bbr) sampleBandwidth(s *sample) {
	if !s.hasRate || s.rate == 0 {
		return
	}
	rate := mulDiv(s.rate, gainUnit, gainUnit-b.background)
	if s.appLimited && rate < b.bw.get() {
		return // an idle sender says nothing of the path (§5.5.5)
	}
	b.bw.update(rate, b.round, bwWindow)
}

// endRound reacts to the loss since the last verdict, once enough
// datagrams were resolved (lossSample). The loss rate of the datagrams not
// sent while probing updates the background loss rate. Loss is congestion
// when the datagrams sent while probing lost more than the background
// plus LossThreshold (StartupLossThreshold in Startup), or when the
// datagrams lost while the path showed a standing queue exceed
// LossThreshold; then the flight is bounded below the level that lost,
// and Startup or the probe ends. Startup also ends when the smallest RTT
// of a round shows a queue (RFC 9406 §4.2).
func (b *bbr) endRound(c *Controller, now time.Time) {
	if b.round >= judgeLag {
		r := &b.bySend[(b.round-judgeLag)%roundSlots]
		if r.round == b.round-judgeLag {
			b.probe.add(r.probe)
			b.other.add(r.other)
		}
	}
	b.bySend[b.round%roundSlots] = sendRound{round: b.round}
	minBytes := lossSample * b.mss
	if r, ok := b.other.rate(minBytes); ok {
		b.other = lossCount{}
		b.bgLast = [3]uint64{r, b.bgLast[0], b.bgLast[1]}
		if b.bgSeen = min(b.bgSeen+1, len(b.bgLast)); b.bgSeen == len(b.bgLast) {
			// The median of the last three samples, so that the round or
			// two in which a burst overflowed a queue is not read as the
			// path's random loss; of these, the mean of the first eight,
			// then an average with a weight of 1/8 per sample, so that it
			// is right from the start.
			b.bgSamples = min(b.bgSamples+1, 8)
			bg := int64(b.background) + (int64(median3(b.bgLast))-int64(b.background))/int64(b.bgSamples)
			b.background = min(uint64(max(bg, 0)), maxBackground)
		}
	}
	congested := false
	if r, ok := b.probe.rate(minBytes); ok {
		limit := b.background + LossThreshold
		if b.mode == modeStartup {
			limit = max(limit, StartupLossThreshold)
		}
		// With a standing queue the loss is everyone's, not this probe's:
		// the queue clause below judges it.
		congested = r > limit && b.probe.losses >= minLosses && !b.standingQueue()
		b.probe = lossCount{}
	}
	if _, ok := b.queue.rate(minBytes); ok {
		congested = congested || b.queue.losses >= minLosses
		b.queue = lossCount{}
	}
	if b.roundRTTs >= rttSamplesPerRound {
		b.lastMinRTT = b.roundMinRTT
		if b.mode == modeStartup && b.queued(b.roundMinRTT) {
			b.filled = true
			c.log.Debug("congestion: startup sees queueing delay", "round_min_rtt", b.roundMinRTT, "min_rtt", b.minRtt)
		}
	}
	b.roundRTTs, b.roundMinRTT = 0, 0
	if !congested {
		if b.inflightHi > 0 {
			b.inflightHi += inflightHiGrowth * b.mss * max(1, int(b.minRtt/growthRTT))
			if b.inflightHi >= 2*b.bdp(probeBWCwndGain) {
				b.inflightHi = 0 // far above what the model needs: unbounded
			}
		}
		return
	}
	level := b.lostFlight
	if level == 0 {
		level = c.inFlight
	}
	b.lostFlight = 0
	// The bound is never below the BDP the model shows: the flight that
	// lost went beyond it (a probe, or Startup's overshoot), and below it
	// the link idles until the additive increase makes up for it, a
	// second per 10 % of a 5 MB BDP at 100 ms. BBRv3 likewise keeps
	// inflight_hi at the flight that lost, and at least 0.7 of its target
	// (draft-ietf-ccwg-bbr-02, BBRHandleInflightTooHigh), and sets it to
	// at least the BDP when Startup ends on loss (BBRCheckStartupHighLoss).
	hi := max(int(gain(uint64(level), inflightHiBeta)), MinWindow*b.mss, b.bdp(gainUnit))
	if b.mode == modeStartup {
		// The rounds still to be judged were sent during the same
		// overshoot: they are not judged again.
		for i := range b.bySend {
			b.bySend[i] = sendRound{}
		}
		b.bySend[b.round%roundSlots] = sendRound{round: b.round}
		b.queue = lossCount{}
		b.filled = true
	}
	if b.inflightHi == 0 || hi < b.inflightHi {
		b.inflightHi = hi
	}
	c.events++
	c.log.Debug("congestion: loss is congestion", "state", modeNames[b.mode],
		"background_loss", b.background, "inflight_hi", b.inflightHi, "min_rtt", b.minRtt)
	if b.mode == modeProbeBW && probeBWGains[b.phase] > gainUnit {
		b.setPhase(now, b.phase+1) // stop probing
	}
}

// checkStartup ends Startup once the bandwidth stopped growing (§5.3.1.2).
func (b *bbr) checkStartup(c *Controller, roundStart bool) {
	if !b.filled && roundStart && c.appLimited == 0 {
		bw := b.bw.get()
		if bw >= gain(b.fullBw, fullBwGrowth) {
			b.fullBw, b.fullCount = bw, 0
		} else if b.fullCount++; b.fullCount >= fullBwRounds {
			b.filled = true
		}
	}
	if b.mode == modeStartup && b.filled {
		b.mode = modeDrain
		c.log.Debug("congestion: startup done", "bandwidth", b.bw.get(), "min_rtt", b.minRtt)
	}
}

// checkDrain leaves Drain once the queue Startup built is gone
// (§5.3.2).
func (b *bbr) checkDrain(c *Controller, now time.Time) {
	if b.mode == modeDrain && c.inFlight <= b.bdp(gainUnit) {
		b.mode = modeProbeBW
		b.setPhase(now, 2) // start cruising; the next probe comes in 6 rounds
	}
}

func (b *bbr) setPhase(now time.Time, i int) {
	b.phase = i % len(probeBWGains)
	b.phaseStart = now
}

// advancePhase moves the ProbeBW cycle on: each phase lasts a minimum
// RTT; probing up lasts until the flight reaches the probe's target or a
// loss, but at most two minimum RTTs (a sender with too little to send
// never reaches the target); draining ends early once the flight is down
// to the BDP (v1 draft §4.3.3.6).
func (b *bbr) advancePhase(c *Controller, now time.Time, s *sample) {
	if b.mode != modeProbeBW {
		return
	}
	full := now.Sub(b.phaseStart) > b.minRtt
	g := probeBWGains[b.phase]
	var next bool
	switch {
	case g > gainUnit:
		next = full && (s.lost > 0 || s.priorInFlight >= b.bdp(g)) || now.Sub(b.phaseStart) > 2*b.minRtt
	case g < gainUnit:
		next = full || s.priorInFlight <= b.bdp(gainUnit)
	default:
		next = full
	}
	if next {
		b.setPhase(now, b.phase+1)
	}
}

// checkProbeRTT enters ProbeRTT when the minimum RTT sample has expired,
// holds the flight at half a BDP for ProbeRTTDuration and a round trip,
// and leaves with a fresh minimum (§5.3.4).
func (b *bbr) checkProbeRTT(c *Controller, now time.Time, expired, roundStart bool) {
	if expired && b.mode != modeProbeRTT {
		b.mode = modeProbeRTT
		b.priorCwnd = b.w
		b.probeRTTDone = time.Time{}
		c.log.Debug("congestion: probing the minimum RTT", "min_rtt", b.minRtt)
	}
	if b.mode != modeProbeRTT {
		return
	}
	if b.probeRTTDone.IsZero() {
		if c.inFlight <= b.probeRTTCwnd() {
			b.probeRTTDone = now.Add(probeRTTDuration)
			b.probeRTTRoundDone = false
			b.nextRound = c.delivered
		}
		return
	}
	if roundStart {
		b.probeRTTRoundDone = true
	}
	if b.probeRTTRoundDone && !now.Before(b.probeRTTDone) {
		b.minAt = now
		b.w = max(b.w, b.priorCwnd)
		if b.filled {
			b.mode = modeProbeBW
			b.setPhase(now, 2)
		} else {
			b.mode = modeStartup
		}
	}
}

func (b *bbr) probeRTTCwnd() int { return max(b.bdp(probeRTTCwndGain), MinWindow*b.mss) }

// setCwnd sets the window (§5.6.4): grown by what was acknowledged up to
// cwnd_gain BDPs plus room for three bursts (acknowledgements come in
// batches), bounded by inflightHi, at least MinWindow datagrams; in
// ProbeRTT at most half a BDP.
func (b *bbr) setCwnd(c *Controller, s *sample) {
	g := uint64(probeBWCwndGain)
	if b.mode == modeStartup {
		g = startupCwndGain
	}
	target := b.bdp(g) + 3*burstFor(b.pacing, b.mss)
	switch {
	case b.filled:
		b.w = min(b.w+s.acked, target)
	case b.w < target || c.delivered < uint64(b.initial):
		b.w += s.acked
	}
	minW := MinWindow * b.mss
	if b.inflightHi > 0 {
		b.w = min(b.w, max(b.inflightHi, minW))
	}
	if b.mode == modeProbeRTT {
		b.w = min(b.w, b.probeRTTCwnd())
	}
	b.w = max(minW, min(b.w, MaxWindow))
}
