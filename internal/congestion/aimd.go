package congestion

import (
	"time"
)

// AIMD constants (POROUS paper Rev 0.2 §3.1.3; docs/protocols/porous.md
// §3.3).
const (
	// aimdResetFactor is ρ: the window resets when losses go on for ρ·RTO
	// without an acknowledgement (the paper's T_rst = ρ·T_rto).
	aimdResetFactor = 8
	// aimdMinCapRTT is the smallest RTT used for the window cap RTT ×
	// rate.
	aimdMinCapRTT = time.Millisecond
)

// aimd is the POROUS paper's congestion window in bytes: slow start by
// the bytes acknowledged, congestion avoidance by one datagram per window
// acknowledged, growth only while at least half the window was in
// flight, halving at most once per RTT for a datagram sent after the
// previous halving (eq. 11–12, in the paper's order: cwnd = max(cwnd/2,
// MSS), then ssthresh = max(cwnd, 2·MSS)), and a reset to one datagram
// when losses go on for 8·RTO without an acknowledgement. The window is
// capped at RTT × Config.MaxRate (eq. 10), with an RTT of at least 1 ms.
type aimd struct {
	mss         int
	w           int // cwnd
	ssthresh    int
	caAcked     int
	lossSeen    bool // a loss happened since the last acknowledgement
	firstLoss   time.Time
	noBackoff   time.Time
	lastBackoff time.Time
}

func newAIMD(cfg Config) *aimd {
	return &aimd{mss: cfg.MaxDatagram, w: initialWindow(cfg), ssthresh: MaxWindow}
}

func (a *aimd) cwnd() int              { return a.w }
func (a *aimd) probing() bool          { return false }
func (a *aimd) roundCount() uint64     { return 0 }
func (a *aimd) resolved(*Packet, bool) {}
func (a *aimd) pacingRate() uint64     { return 0 }
func (a *aimd) bandwidth() uint64      { return 0 }
func (a *aimd) minRTT() time.Duration  { return 0 }

// slowStart is the state name of AIMD's slow start, where a fresh model
// begins.
const slowStart = "slow_start"

func (a *aimd) state() string {
	if a.w < a.ssthresh {
		return slowStart
	}
	return "avoidance"
}

func (a *aimd) update(c *Controller, now time.Time, s *sample) bool {
	srtt := s.rtt.Smoothed
	if s.acked > 0 {
		a.lossSeen = false
		if 2*s.priorInFlight >= a.w {
			a.grow(s.acked, srtt, c.cfg.MaxRate)
		}
	}
	if s.lost == 0 {
		return false
	}
	reset := false
	switch {
	case !a.lossSeen:
		a.lossSeen, a.firstLoss = true, now
	case now.Sub(a.firstLoss) >= aimdResetFactor*s.rtt.RTO:
		a.ssthresh = max(a.w/2, 2*a.mss)
		a.w = a.mss
		a.firstLoss = now
		a.noBackoff = now.Add(srtt)
		a.caAcked = 0
		reset = true
		c.events++
		c.log.Debug("congestion: window reset after persistent loss", "ssthresh", a.ssthresh)
	}
	if !now.Before(a.noBackoff) && s.lostSentAt.After(a.lastBackoff) {
		a.lastBackoff = now
		a.w = max(a.w/2, a.mss)
		a.ssthresh = max(a.w, 2*a.mss)
		a.noBackoff = now.Add(srtt)
		a.caAcked = 0
		c.events++
		c.log.Debug("congestion: window halved on loss", "cwnd", a.w)
	}
	return reset
}

// grow opens the window for acked bytes.
func (a *aimd) grow(acked int, srtt time.Duration, rate uint64) {
	if a.w < a.ssthresh {
		a.w += acked
	} else if a.caAcked += acked; a.caAcked >= a.w {
		a.caAcked -= a.w
		a.w += a.mss
	}
	limit := MaxWindow
	if rate > 0 {
		limit = clampInt(bytesIn(rate, max(srtt, aimdMinCapRTT)), a.mss, MaxWindow)
	}
	a.w = max(a.mss, min(a.w, limit))
}
