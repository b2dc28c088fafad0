package engine

import "time"

// RTT is the RFC 6298 round-trip-time estimator: SRTT, RTTVAR and the
// retransmission timeout RTO, with exponential back-off.
//
// The zero value is not usable; build one with NewRTT.
type RTT struct {
	srtt, rttvar time.Duration
	base         time.Duration // RTO from the samples (or the initial one)
	rto          time.Duration // current RTO including back-off
	min, max     time.Duration
	granularity  time.Duration
	sampled      bool
}

// NewRTT returns an estimator whose RTO starts at initial (RFC 6298 §2.1
// recommends 1 s) and is always kept within [min, max] (§2.4 recommends a
// 1 s minimum; real-time protocols use less). min must be positive and
// not above max; initial is clamped into range.
func NewRTT(initial, min, max time.Duration) *RTT {
	r := &RTT{min: min, max: max, granularity: time.Millisecond}
	r.base = r.clamp(initial)
	r.rto = r.base
	return r
}

func (r *RTT) clamp(d time.Duration) time.Duration {
	return max(r.min, min(d, r.max))
}

// Sample feeds one RTT measurement R (RFC 6298 §2.2–2.3, K = 4,
// alpha = 1/8, beta = 1/4) and clears any back-off. Callers must follow
// Karn's rule: never sample a retransmitted packet. A non-positive sample
// is ignored.
func (r *RTT) Sample(rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	if !r.sampled {
		r.srtt = rtt
		r.rttvar = rtt / 2
		r.sampled = true
	} else {
		diff := r.srtt - rtt
		if diff < 0 {
			diff = -diff
		}
		r.rttvar = (3*r.rttvar + diff) / 4
		r.srtt = (7*r.srtt + rtt) / 8
	}
	r.base = r.clamp(r.srtt + max(r.granularity, 4*r.rttvar))
	r.rto = r.base
}

// Backoff doubles the RTO, up to the maximum (RFC 6298 §5.5).
func (r *RTT) Backoff() {
	r.rto = r.clamp(2 * r.rto)
}

// ClearBackoff undoes Backoff: the RTO returns to the value computed from
// the samples (or the initial RTO before any). Call it when the peer shows
// progress without a sample being possible, as TCP clears its back-off on
// an acknowledgement of new data.
func (r *RTT) ClearBackoff() { r.rto = r.base }

// RTO is the current retransmission timeout.
func (r *RTT) RTO() time.Duration { return r.rto }

// SRTT is the smoothed RTT, zero before the first sample.
func (r *RTT) SRTT() time.Duration { return r.srtt }

// RTTVar is the RTT variation, zero before the first sample.
func (r *RTT) RTTVar() time.Duration { return r.rttvar }

// Sampled reports whether at least one sample was taken.
func (r *RTT) Sampled() bool { return r.sampled }
