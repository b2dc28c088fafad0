package congestion

import "time"

// RACK constants (RFC 8985).
const (
	// reoWndPersist is how many loss detections a widened reordering
	// window lasts before it returns to a quarter of the minimum RTT
	// (RFC 8985 §6.2 step 4, RACK.reo_wnd_persist).
	reoWndPersist = 16
	// maxReoMult bounds the widening; the window never exceeds the SRTT
	// anyway.
	maxReoMult = 8
	// minReoWnd is the smallest reordering window: on a path of tens of
	// microseconds a quarter of the RTT is below the precision of timers
	// and schedulers.
	minReoWnd = 500 * time.Microsecond
)

// rack is RFC 8985's state: the send order and RTT of the most recently
// sent datagram that was delivered, and the reordering window.
type rack struct {
	xmit     uint64        // RACK.xmit_ts as a send order: 0 before any delivery
	rtt      time.Duration // RACK.rtt
	minRTT   time.Duration // smallest RTT of an unambiguous acknowledgement
	mult     int           // RACK.reo_wnd_mult
	persist  int           // RACK.reo_wnd_persist
	disabled bool          // AIMD: loss by timeout only
	lastAck  time.Time     // when the latest acknowledgement came (see TimeoutAt)
}

// acked updates RACK for p acknowledged at now (§6.2 step 2). The
// acknowledgement of a retransmitted datagram is taken only when its RTT
// is at least the minimum RTT; a shorter one acknowledges an earlier
// transmission.
func (r *rack) acked(now time.Time, p *Packet) {
	r.lastAck = now
	rtt := now.Sub(p.SentAt)
	if p.retransmit && rtt < r.minRTT {
		// Faster than any round trip: the acknowledgement is of an
		// earlier transmission, so the datagram was not lost; as a
		// DSACK tells TCP, the reordering window was too small.
		r.spurious()
		return
	}
	if !p.retransmit && rtt > 0 && (r.minRTT == 0 || rtt < r.minRTT) {
		r.minRTT = rtt
	}
	if p.order > r.xmit {
		r.xmit, r.rtt = p.order, rtt
	}
}

// window is the reordering window (§6.2 step 4): a quarter of the
// minimum RTT times the multiplier, at most the SRTT, at least minReoWnd.
func (r *rack) window(srtt time.Duration) time.Duration {
	w := time.Duration(max(r.mult, 1)) * r.minRTT / 4
	if srtt > 0 {
		w = min(w, srtt)
	}
	return max(w, minReoWnd)
}

// LostAt returns when p counts as lost by RACK (RFC 8985 §6.2 step 5):
// RACK.rtt plus the reordering window after it was sent, once a datagram
// sent after it has been delivered. ok is false while no datagram sent
// after p has been delivered (nor with AIMD, which detects loss by
// timeout only): p is then not yet a candidate, and neither is any
// datagram sent after it. srtt is the engine's smoothed RTT.
func (c *Controller) LostAt(p *Packet, srtt time.Duration) (at time.Time, ok bool) {
	r := &c.rack
	if r.disabled || p.order >= r.xmit {
		return time.Time{}, false
	}
	return p.SentAt.Add(r.rtt + r.window(srtt)), true
}

// TimeoutAt returns when p, still unacknowledged, counts as lost by
// timeout, rto being the engine's retransmission timeout. With AIMD,
// which detects loss by timeout only, that is rto after p was sent.
// Otherwise the timer restarts at every acknowledgement (RFC 6298 §5.3):
// while acknowledgements arrive RACK finds the losses, and when the path
// or a host stalls for longer than the RTO, the flight is late, not lost,
// so the acknowledgements that follow the stall do not find it all timed
// out and resent.
func (c *Controller) TimeoutAt(p *Packet, rto time.Duration) time.Time {
	return c.TimerStart(p.SentAt).Add(rto)
}

// RACK reports whether the controller finds losses by RACK (RFC 8985)
// as well as by timeout: every algorithm but AIMD, which detects loss by
// timeout only.
func (c *Controller) RACK() bool { return !c.rack.disabled }

// TimerStart is when the retransmission timer of a datagram sent at sent
// runs from (see TimeoutAt), for an engine that times something other
// than a Packet (Wirefox times packets, not the datagrams carrying them).
func (c *Controller) TimerStart(sent time.Time) time.Time {
	if !c.rack.disabled && c.rack.lastAck.After(sent) {
		return c.rack.lastAck
	}
	return sent
}

// Spurious records that a datagram declared lost was delivered after all
// (its first transmission was acknowledged): the reordering window widens
// for the next reoWndPersist detections (§6.2 step 4, as a DSACK would
// tell TCP).
func (c *Controller) Spurious(now time.Time) {
	c.rack.spurious()
	if t := c.cfg.Tracer; t != nil && t.SpuriousRetransmit != nil {
		t.SpuriousRetransmit(now)
	}
}

func (r *rack) spurious() {
	r.mult = min(max(r.mult, 1)+1, maxReoMult)
	r.persist = reoWndPersist
}

// detected counts one RACK loss detection against the widening.
func (r *rack) detected() {
	if r.persist > 0 {
		if r.persist--; r.persist == 0 {
			r.mult = 1
		}
	}
}
