package congestion

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

const mss = 1472

func aimdController() *Controller {
	return New(epoch, Config{Algorithm: AIMD, MaxDatagram: mss})
}

// sendAck sends n datagrams at now and acknowledges them all at ackAt in
// one event.
func sendAck(c *Controller, n int, now, ackAt time.Time, rtt RTT) {
	ps := make([]Packet, n)
	for i := range ps {
		c.OnSent(now, &ps[i], mss, false)
	}
	for i := range ps {
		c.OnAcked(ackAt, &ps[i])
	}
	c.Update(ackAt, rtt)
}

// lose declares one datagram sent at sentAt lost at now.
func lose(c *Controller, sentAt, now time.Time, rtt RTT) bool {
	var p Packet
	c.OnSent(sentAt, &p, mss, false)
	c.OnLost(now, &p, trace.LossTimeout)
	return c.Update(now, rtt)
}

// TestAIMDSlowStart: the POROUS paper's window starts at one datagram
// (Rev 0.2 §3.1.3) and grows by the bytes acknowledged while below
// ssthresh, when at least half of it was in flight; no pacing.
func TestAIMDSlowStart(t *testing.T) {
	c := aimdController()
	rtt := RTT{Latest: 20 * time.Millisecond, Smoothed: 20 * time.Millisecond, RTO: 100 * time.Millisecond}
	require.Equal(t, mss, c.Window())
	sendAck(c, 1, epoch, epoch.Add(20*time.Millisecond), rtt)
	require.Equal(t, 2*mss, c.Window())
	sendAck(c, 2, epoch, epoch.Add(40*time.Millisecond), rtt)
	require.Equal(t, 4*mss, c.Window())
	sendAck(c, 1, epoch, epoch.Add(60*time.Millisecond), rtt)
	require.Equal(t, 4*mss, c.Window(), "a quarter of the window in flight: no growth")
	require.Zero(t, c.Stats().Pacing)
	require.Equal(t, "slow_start", c.Stats().State)
}

// TestAIMDResetAfterRhoRTO: on a LAN the RTO sits at its 10 ms floor, so
// timeouts come at least 10 ms apart; each loss halves the window (at
// most once per RTT, for a datagram sent after the last halving: eq.
// 11–12, cwnd = max(cwnd/2, MSS), then ssthresh = max(cwnd, 2·MSS)); the
// window resets to one datagram only when losses go on for 8·RTO without
// an acknowledgement (T_rst = ρ·T_rto), and that reset asks the engine to
// back its RTO off.
func TestAIMDResetAfterRhoRTO(t *testing.T) {
	c := aimdController()
	rtt := RTT{Latest: 20 * time.Microsecond, Smoothed: 20 * time.Microsecond, RTO: 10 * time.Millisecond}
	for c.Window() < 64*mss {
		sendAck(c, c.Window()/mss, epoch, epoch, rtt)
	}
	require.Equal(t, 64*mss, c.Window())
	start := epoch.Add(time.Second)

	require.False(t, lose(c, start, start, rtt))
	require.Equal(t, 32*mss, c.Window(), "first loss: halved")
	require.False(t, lose(c, start.Add(10*time.Millisecond), start.Add(11*time.Millisecond), rtt))
	require.Equal(t, 16*mss, c.Window(), "second timeout, 11 ms on: halved again, not reset")
	require.Equal(t, "avoidance", c.Stats().State)

	require.True(t, lose(c, start.Add(80*time.Millisecond), start.Add(81*time.Millisecond), rtt), "reset asks for a back-off")
	require.Equal(t, mss, c.Window(), "losses for 8·RTO without an ack: reset")
	require.Equal(t, uint64(3), c.Stats().Events)
}

// TestAIMDCap: the window is capped at RTT × MaxRate (eq. 10), with an
// RTT of at least 1 ms.
func TestAIMDCap(t *testing.T) {
	c := New(epoch, Config{Algorithm: AIMD, MaxDatagram: mss, MaxRate: 10 * mss * 1000}) // 10 datagrams a millisecond
	rtt := RTT{Latest: 10 * time.Microsecond, Smoothed: 10 * time.Microsecond, RTO: 10 * time.Millisecond}
	for range 10 {
		sendAck(c, c.Window()/mss, epoch, epoch, rtt)
	}
	require.Equal(t, 10*mss, c.Window())
}
