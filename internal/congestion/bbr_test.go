package congestion

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

// roundTrip sends n datagrams at now and acknowledges them all one rtt
// later, in one event with that RTT sample; it returns the ack time.
func roundTrip(c *Controller, n int, now time.Time, rtt time.Duration) time.Time {
	ps := make([]Packet, n)
	for i := range ps {
		c.OnSent(now, &ps[i], mss, false)
	}
	at := now.Add(rtt)
	for i := range ps {
		c.OnAcked(at, &ps[i])
	}
	c.Update(at, RTT{Latest: rtt, Smoothed: rtt, RTO: 3 * rtt})
	return at
}

// TestBBRInitial: the initial window is ten datagrams (RFC 6928) and the
// initial pacing rate the Startup gain, 2.77, times that window per the
// nominal 1 ms RTT (draft-ietf-ccwg-bbr-02 §5.6.2, BBRInitPacingRate).
func TestBBRInitial(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	st := c.Stats()
	require.Equal(t, "startup", st.State)
	require.Equal(t, 10*mss, st.Cwnd)
	require.Equal(t, uint64(10*mss*1000*2770/1000), st.Pacing) // 40,774,400 B/s
	require.True(t, c.CanSend(epoch, mss))
}

// TestBBRDeliveryRate: a rate sample is the bytes delivered over the
// longer of the send and ack intervals (draft-cheng-iccrg-delivery-rate-
// estimation-02 §3.3): ten datagrams sent at once and acknowledged 10 ms
// later are 14,720 bytes in 10 ms.
func TestBBRDeliveryRate(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	roundTrip(c, 10, epoch, 10*time.Millisecond)
	st := c.Stats()
	require.Equal(t, uint64(10*mss*100), st.Bandwidth) // 1,472,000 B/s
	require.Equal(t, 10*time.Millisecond, st.MinRTT)
	require.Equal(t, uint64(10*mss*1000*2770/1000), st.Pacing, "Startup never lowers the pacing rate (§5.6.2)")
	require.Equal(t, 20*mss, st.Cwnd, "Startup grows the window by what was acknowledged (§5.6.4.4)")
}

// TestBBRMaxRateInStartup: a cap set by SetMaxRate during Startup takes
// the pacing rate down to it at the next acknowledgement, although
// Startup never lowers the rate it computes.
func TestBBRMaxRateInStartup(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	c.SetMaxRate(epoch, 1_000_000)
	roundTrip(c, 1, epoch, 10*time.Millisecond)
	st := c.Stats()
	require.Equal(t, "startup", st.State)
	require.Equal(t, uint64(1_000_000), st.Pacing)
}

// TestBBRStartupExit: Startup ends once the bandwidth has not grown by
// 25 % for three rounds (§5.3.1.2); Drain ends at once when the flight is
// within the BDP (§5.3.2), and ProbeBW starts cruising at a gain of 1:
// pacing at the bandwidth, window two BDPs plus three bursts (§5.6.4.2).
func TestBBRStartupExit(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	now := epoch
	for range 3 {
		now = roundTrip(c, 10, now, 10*time.Millisecond)
		require.Equal(t, "startup", c.Stats().State)
	}
	now = roundTrip(c, 10, now, 10*time.Millisecond)
	st := c.Stats()
	require.Equal(t, "probe_bw", st.State, "the fourth round without growth: Startup done, Drain passed")
	bw := uint64(10 * mss * 100) // 1,472,000 B/s
	require.Equal(t, bw, st.Bandwidth)
	require.Equal(t, bw, st.Pacing, "cruising: gain 1")
	bdp := 10 * mss  // 1,472,000 B/s × 10 ms
	burst := 2 * mss // rate × 1 ms is one datagram: two at least
	require.Equal(t, 2*bdp+3*burst, st.Cwnd)
}

// TestBBRProbeBWCycle: ProbeBW paces at 1.25 times the bandwidth, then
// 0.75 for a round, then six rounds at 1 (the cycle of the v1 draft,
// §4.3.3.6). It starts cruising (the round that entered it is the first
// of the six), so the probe comes after five more rounds; the probe lasts
// until the flight reaches 1.25 BDPs or a loss, here, with too little to
// send, its limit of two minimum RTTs.
func TestBBRProbeBWCycle(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	now := epoch
	for range 4 {
		now = roundTrip(c, 10, now, 10*time.Millisecond)
	}
	bw := uint64(10 * mss * 100)
	var gains []uint64
	for range 8 {
		now = roundTrip(c, 10, now.Add(time.Millisecond), 10*time.Millisecond)
		gains = append(gains, c.Stats().Pacing*1000/bw)
	}
	require.Equal(t, []uint64{1000, 1000, 1000, 1000, 1000, 1250, 1250, 750}, gains)
}

// TestBBRProbeRTT: when the minimum RTT has not been seen again for ten
// seconds, ProbeRTT holds the window at half a BDP (at least four
// datagrams) for 200 ms and a round, then the fresh minimum is kept and
// ProbeBW resumes (§5.3.4).
func TestBBRProbeRTT(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	now := epoch
	for range 4 {
		now = roundTrip(c, 10, now, 10*time.Millisecond)
	}
	now = now.Add(10*time.Second + time.Millisecond) // the 10 ms minimum was last seen at now
	now = roundTrip(c, 10, now, 12*time.Millisecond)
	st := c.Stats()
	require.Equal(t, "probe_rtt", st.State)
	require.Equal(t, 12*time.Millisecond, st.MinRTT, "the expired minimum is replaced by the next sample")
	require.Equal(t, 10*mss*100*12/1000/2, st.Cwnd, "half a BDP: 1,472,000 B/s × 12 ms / 2")
	now = roundTrip(c, 4, now, 12*time.Millisecond)
	require.Equal(t, "probe_rtt", c.Stats().State, "200 ms not over")
	now = roundTrip(c, 4, now.Add(200*time.Millisecond), 12*time.Millisecond)
	require.Equal(t, "probe_bw", c.Stats().State)
}

// TestBBRRandomLossKeepsRate: losses of datagrams not sent while probing
// set the background loss rate, which the bandwidth estimate corrects
// for, and are no congestion: the window is not cut.
func TestBBRRandomLossKeepsRate(t *testing.T) {
	c, now := cruising()
	cwnd := c.Stats().Cwnd
	for range 40 {
		now = lossyRound(c, 100, 20, now, 10*time.Millisecond) // 5 of 100 lost
	}
	st := c.Stats()
	require.Zero(t, st.Events, "random loss is not congestion")
	require.GreaterOrEqual(t, st.Cwnd, cwnd)
	require.Equal(t, uint64(100*mss*100), st.Bandwidth, "95 delivered of 100 sent, corrected by the 5 % background loss")
}

// cruising returns a controller past Startup, in ProbeBW at 100
// datagrams per 10 ms, and the time of its last acknowledgement.
func cruising() (*Controller, time.Time) {
	c := New(epoch, Config{MaxDatagram: mss})
	now := epoch
	for range 4 {
		now = roundTrip(c, 100, now, 10*time.Millisecond)
	}
	return c, now
}

// lossyRound sends n datagrams at now and, one rtt later, declares every
// lostEvery-th of them lost (none when lostEvery is 0) and acknowledges
// the others, in one event; it returns the ack time.
func lossyRound(c *Controller, n, lostEvery int, now time.Time, rtt time.Duration) time.Time {
	ps := make([]Packet, n)
	for i := range ps {
		c.OnSent(now, &ps[i], mss, false)
	}
	at := now.Add(rtt)
	for i := range ps {
		if lostEvery > 0 && i%lostEvery == lostEvery-1 {
			c.OnLost(at, &ps[i], trace.LossTimeout)
		} else {
			c.OnAcked(at, &ps[i])
		}
	}
	c.Update(at, RTT{Latest: rtt, Smoothed: rtt, RTO: 3 * rtt})
	return at
}

// TestBBRBackgroundIgnoresBurst: one round that loses half its datagrams
// (a burst overflowing a queue) among rounds losing 5 % at random does not
// move the background loss rate, which takes the median of the last
// three samples: the bandwidth estimate, corrected by it, stays exact.
func TestBBRBackgroundIgnoresBurst(t *testing.T) {
	c, now := cruising()
	burst := false
	for i := range 30 {
		lostEvery := 20
		if st := c.Stats(); i >= 10 && !burst && st.Pacing == st.Bandwidth {
			lostEvery, burst = 2, true // a round sent while cruising
		}
		now = lossyRound(c, 100, lostEvery, now, 10*time.Millisecond)
	}
	require.True(t, burst)
	st := c.Stats()
	require.Zero(t, st.Events, "loss of datagrams not sent while probing is not congestion")
	require.Equal(t, uint64(100*mss*100), st.Bandwidth, "95 delivered of 100 sent, corrected by the 5 % background loss")
}

// TestBBRStartupLossBound: Startup ends when its rounds lose more than
// StartupLossThreshold; the flight bound it sets is at least the BDP the
// model shows (draft-ietf-ccwg-bbr-02, BBRCheckStartupHighLoss), and the later rounds of
// the same overshoot, judged after it, are not a second congestion event.
func TestBBRStartupLossBound(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	now := epoch
	for n := 10; n <= 160; n *= 2 {
		now = roundTrip(c, n, now, 10*time.Millisecond)
	}
	require.Equal(t, "startup", c.Stats().State)
	for range 3 {
		now = lossyRound(c, 320, 5, now, 10*time.Millisecond) // 20 % lost
	}
	for range 3 {
		now = roundTrip(c, 100, now, 10*time.Millisecond)
	}
	st := c.Stats()
	require.NotEqual(t, "startup", st.State)
	require.Equal(t, uint64(1), st.Events, "one overshoot, one congestion event")
	bdp := int(st.Bandwidth * uint64(st.MinRTT) / uint64(time.Second))
	require.GreaterOrEqual(t, st.Cwnd, bdp)
	t.Logf("%+v, BDP %d", st, bdp)
}

// TestBBRProbeLossFloor: a probe that loses more than the background plus
// LossThreshold is congestion, and the flight bound is cut to 0.7 times
// the flight that lost, but not below the BDP: here the probe sent one
// BDP, and the bound is that BDP rather than 0.7 of it.
func TestBBRProbeLossFloor(t *testing.T) {
	c, now := cruising()
	bw := c.Stats().Bandwidth
	for range 20 {
		lostEvery := 0
		if c.Stats().Pacing > bw {
			lostEvery = 10 // the probe loses 10 %
		}
		now = lossyRound(c, 100, lostEvery, now, 10*time.Millisecond)
		if c.Stats().Events > 0 {
			break
		}
	}
	st := c.Stats()
	require.Equal(t, uint64(1), st.Events)
	require.Equal(t, 100*mss, st.Cwnd, "1,472,000 B/s × 10 ms")
}
