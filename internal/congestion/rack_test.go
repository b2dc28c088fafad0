package congestion

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

// TestRACKLostAt: a datagram is lost RACK.rtt plus the reordering window
// after it was sent, once a datagram sent after it was delivered (RFC
// 8985 §6.2 step 5); the window is a quarter of the minimum RTT (step 4).
func TestRACKLostAt(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	var p [3]Packet
	for i := range p {
		c.OnSent(epoch.Add(time.Duration(i)*time.Millisecond), &p[i], mss, false)
	}
	_, ok := c.LostAt(&p[0], 20*time.Millisecond)
	require.False(t, ok, "nothing delivered yet")

	c.OnAcked(epoch.Add(22*time.Millisecond), &p[2]) // RTT 20 ms
	c.Update(epoch.Add(22*time.Millisecond), RTT{Latest: 20 * time.Millisecond, Smoothed: 20 * time.Millisecond})
	at, ok := c.LostAt(&p[0], 20*time.Millisecond)
	require.True(t, ok)
	require.Equal(t, epoch.Add(20*time.Millisecond+5*time.Millisecond), at)
	at, _ = c.LostAt(&p[1], 20*time.Millisecond)
	require.Equal(t, epoch.Add(time.Millisecond+25*time.Millisecond), at)
	_, ok = c.LostAt(&p[2], 20*time.Millisecond)
	require.False(t, ok, "not sent before the latest delivered datagram")

	// The window is at most the SRTT, at least 500 µs.
	at, _ = c.LostAt(&p[0], 2*time.Millisecond)
	require.Equal(t, epoch.Add(22*time.Millisecond), at)
}

// TestRACKSpurious: an acknowledgement of a retransmission that comes
// sooner than the minimum RTT is of the first transmission, so the loss
// was spurious: the window doubles, for 16 detections (RFC 8985 §6.2
// step 4, reo_wnd_mult and reo_wnd_persist).
func TestRACKSpurious(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	var a, b, r Packet
	c.OnSent(epoch, &a, mss, false)
	c.OnSent(epoch.Add(time.Millisecond), &b, mss, false)
	c.OnAcked(epoch.Add(21*time.Millisecond), &b) // RTT 20 ms
	c.OnLost(epoch.Add(30*time.Millisecond), &a, trace.LossTimeout)
	c.Update(epoch.Add(30*time.Millisecond), RTT{Latest: 20 * time.Millisecond, Smoothed: 40 * time.Millisecond})
	c.OnSent(epoch.Add(30*time.Millisecond), &r, mss, true)
	c.OnAcked(epoch.Add(32*time.Millisecond), &r) // 2 ms: the first transmission's
	c.Update(epoch.Add(32*time.Millisecond), RTT{Smoothed: 40 * time.Millisecond})

	var d Packet
	c.OnSent(epoch.Add(33*time.Millisecond), &d, mss, false)
	at, ok := c.LostAt(&d, 40*time.Millisecond)
	require.False(t, ok, "the spurious acknowledgement does not move RACK.xmit_ts")
	var e Packet
	c.OnSent(epoch.Add(34*time.Millisecond), &e, mss, false)
	c.OnAcked(epoch.Add(54*time.Millisecond), &e)
	at, ok = c.LostAt(&d, 40*time.Millisecond)
	require.True(t, ok)
	require.Equal(t, epoch.Add(33*time.Millisecond+20*time.Millisecond+10*time.Millisecond), at, "window 2 × 20 ms / 4")
	for range 16 {
		var x Packet
		c.OnSent(epoch.Add(time.Second), &x, mss, false)
		c.OnLost(epoch.Add(time.Second), &x, trace.LossTimeout)
	}
	at, _ = c.LostAt(&d, 40*time.Millisecond)
	require.Equal(t, epoch.Add(33*time.Millisecond+20*time.Millisecond+5*time.Millisecond), at, "back to a quarter after 16 detections")
}

// TestAIMDNoRACK: the AIMD controller detects loss by timeout only.
func TestAIMDNoRACK(t *testing.T) {
	c := aimdController()
	var a, b Packet
	c.OnSent(epoch, &a, mss, false)
	c.OnSent(epoch, &b, mss, false)
	c.OnAcked(epoch.Add(10*time.Millisecond), &b)
	_, ok := c.LostAt(&a, 10*time.Millisecond)
	require.False(t, ok)
}

// TestTimeoutAt: the retransmission timer runs from the later of a
// datagram's transmission and the latest acknowledgement (RFC 6298 §5.3),
// except with AIMD, which times each datagram from its transmission.
func TestTimeoutAt(t *testing.T) {
	const rto = 30 * time.Millisecond
	for _, alg := range []Algorithm{BBR, AIMD} {
		c := New(epoch, Config{Algorithm: alg, MaxDatagram: mss})
		var p [2]Packet
		c.OnSent(epoch, &p[0], mss, false)
		c.OnSent(epoch.Add(time.Millisecond), &p[1], mss, false)
		require.Equal(t, epoch.Add(rto), c.TimeoutAt(&p[0], rto), "%v: nothing acknowledged yet", alg)
		c.OnAcked(epoch.Add(40*time.Millisecond), &p[0])
		want := epoch.Add(40*time.Millisecond + rto)
		if alg == AIMD {
			want = epoch.Add(time.Millisecond + rto)
		}
		require.Equal(t, want, c.TimeoutAt(&p[1], rto), "%v", alg)
	}
}
