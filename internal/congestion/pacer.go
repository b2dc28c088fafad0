package congestion

import "time"

// Pacing bounds (draft-ietf-ccwg-bbr-02 §5.6.3, send quantum).
const (
	// MaxBurst is the most bytes a pacer lets leave back to back: 64 KiB,
	// what one GSO send carries at most.
	MaxBurst = 64 << 10
	// burstTime is how much of the pacing rate one burst may carry: the
	// pacer lets rate × 1 ms leave at once, within [2 datagrams,
	// MaxBurst], so a timer that fires up to a millisecond late loses no
	// rate and a burst never exceeds a millisecond of sending at the
	// pacing rate.
	burstTime = time.Millisecond
)

// pacer is a token bucket: credit in bytes accrues at the pacing rate up
// to one burst; a datagram may leave while the credit is positive, and
// takes its size from it (the credit may go negative by one datagram). A
// datagram sent ahead (canOwe) takes its size as a debt, down to minus
// one burst and a datagram: the datagrams after it wait until the credit
// is positive again, so the bytes sent over any interval stay within
// rate × interval plus two bursts and a datagram.
type pacer struct {
	credit int64
	at     time.Time // when credit was last brought up to date
	rate   uint64    // bytes per second; 0 means unpaced
	burst  int64
}

// setRate changes the pacing rate (bytes/s, 0 for none); mss is the
// largest datagram, which bounds the burst from below.
func (p *pacer) setRate(now time.Time, rate uint64, mss int) {
	first := p.at.IsZero()
	p.refill(now)
	p.rate = rate
	p.burst = int64(burstFor(rate, mss))
	if first {
		p.credit = p.burst
	}
	p.credit = min(p.credit, p.burst)
}

// refill brings the credit up to now.
func (p *pacer) refill(now time.Time) {
	if p.at.IsZero() {
		p.at, p.credit = now, p.burst
		return
	}
	if !now.After(p.at) {
		return
	}
	if p.rate == 0 {
		p.credit, p.at = p.burst, now
		return
	}
	add := bytesIn(p.rate, min(now.Sub(p.at), time.Second))
	if add == 0 {
		return // keep p.at so that small steps add up
	}
	p.credit += int64(min(add, uint64(p.burst-p.credit))) // up to the burst, repaying any debt first
	p.at = now
}

// ready reports whether a datagram may leave at now.
func (p *pacer) ready(now time.Time) bool {
	if p.rate == 0 {
		return true
	}
	p.refill(now)
	return p.credit > 0
}

// canOwe reports whether a datagram may leave at now ahead of the
// pacer: while the credit is above minus one burst, so that the debt
// never exceeds a burst and a datagram.
func (p *pacer) canOwe(now time.Time) bool {
	if p.rate == 0 {
		return true
	}
	p.refill(now)
	return p.credit > -p.burst
}

// sent takes n bytes from the credit.
func (p *pacer) sent(now time.Time, n int) {
	if p.rate == 0 {
		return
	}
	p.refill(now)
	p.credit -= int64(n)
}

// next returns when the credit is next positive: now if it already is.
func (p *pacer) next(now time.Time) time.Time {
	if p.rate == 0 {
		return now
	}
	p.refill(now)
	if p.credit > 0 {
		return now
	}
	need := uint64(1 - p.credit)
	d := time.Duration(mulDiv(need, uint64(time.Second), p.rate) + 1)
	return p.at.Add(max(d, time.Microsecond))
}

// burstFor is the burst of a pacer at rate: rate × 1 ms, at least two
// datagrams of mss bytes, at most MaxBurst.
func burstFor(rate uint64, mss int) int {
	return max(2*mss, int(min(bytesIn(rate, burstTime), MaxBurst)))
}
