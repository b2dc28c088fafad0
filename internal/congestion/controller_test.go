package congestion

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

// TestForgetIsNoLoss: a datagram forgotten (Forget, as an engine does with
// a lost probe of the path, RFC 9000 §14.4) leaves the flight and counts
// neither as delivered nor as lost: no bytes or datagrams lost, no
// congestion event, the same window and pacing rate.
func TestForgetIsNoLoss(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	var p Packet
	c.OnSent(epoch, &p, 44*mss, false)
	before := c.Stats()
	require.Equal(t, 44*mss, before.InFlight)
	c.Forget(&p)
	require.False(t, p.InFlight())
	c.Update(epoch.Add(10*time.Millisecond), RTT{Smoothed: 10 * time.Millisecond, RTO: time.Second})
	st := c.Stats()
	require.Zero(t, st.InFlight)
	require.Zero(t, st.Lost)
	require.Zero(t, st.Losses)
	require.Zero(t, st.Events)
	require.Zero(t, st.Delivered)
	require.Equal(t, before.Cwnd, st.Cwnd)
	require.Equal(t, before.Pacing, st.Pacing)
	c.OnLost(epoch.Add(20*time.Millisecond), &p, trace.LossTimeout)
	require.Zero(t, c.Stats().Lost, "a forgotten datagram is no longer in flight: declaring it lost changes nothing")
}

// TestUnackedTakesPacerCredit: a datagram that does not count in flight
// (OnSentUnacked) takes pacer credit as one that does. The initial pacing
// rate is 2.77 × 10 datagrams per 1 ms (draft-ietf-ccwg-bbr-02 §5.6.2),
// 40,774,400 B/s, so a burst is rate × 1 ms, 40,774 bytes: 27 datagrams
// of 1472 bytes leave 1030 bytes of credit, the 28th takes it to −442,
// and the next datagram waits for 443 bytes of credit, 10,865 ns.
func TestUnackedTakesPacerCredit(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	require.Equal(t, uint64(40_774_400), c.Stats().Pacing)
	for i := range 27 {
		c.OnSentUnacked(epoch, mss)
		require.True(t, c.CanSend(epoch, mss), "after datagram %d", i+1)
	}
	c.OnSentUnacked(epoch, mss)
	require.False(t, c.CanSend(epoch, mss), "27 × 1472 + 1472 > 40,774")
	require.Equal(t, epoch.Add(10_865*time.Nanosecond), c.NextSend(epoch, mss), "443 bytes at 40,774,400 B/s, rounded up")
	require.Zero(t, c.InFlight(), "nothing counted in flight")
	require.True(t, c.CanSend(epoch.Add(10_865*time.Nanosecond), mss))
}

// TestAckCompressionNoRateSample: a delivery-rate sample over an interval
// shorter than the minimum RTT reflects ack compression, not the path,
// and is discarded; one over exactly the minimum RTT is taken
// (draft-cheng-iccrg-delivery-rate-estimation-02 §3.3; BBR's filter,
// draft-ietf-ccwg-bbr-02 §5.5.5). After a round of 10 datagrams in 10 ms
// (1,472,000 B/s), 10 datagrams acknowledged 5 ms after they left would
// read 2,944,000 B/s: not taken; 20 datagrams acknowledged 10 ms after
// they left read the same rate over the minimum RTT: taken.
func TestAckCompressionNoRateSample(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	now := roundTrip(c, 10, epoch, 10*time.Millisecond)
	require.Equal(t, uint64(1_472_000), c.Stats().Bandwidth)
	require.Equal(t, 10*time.Millisecond, c.Stats().MinRTT)

	ps := make([]Packet, 10)
	for i := range ps {
		c.OnSent(now, &ps[i], mss, false)
	}
	at := now.Add(5 * time.Millisecond)
	for i := range ps {
		c.OnAcked(at, &ps[i])
	}
	// The engine's RTT sample need not come from these datagrams (an ack
	// delay, a retransmission): the minimum stays 10 ms.
	c.Update(at, RTT{Latest: 10 * time.Millisecond, Smoothed: 10 * time.Millisecond, RTO: 30 * time.Millisecond})
	require.Equal(t, 10*time.Millisecond, c.Stats().MinRTT)
	require.Equal(t, uint64(1_472_000), c.Stats().Bandwidth, "a 5 ms interval is shorter than the 10 ms minimum RTT: no sample")

	roundTrip(c, 20, at, 10*time.Millisecond)
	require.Equal(t, uint64(2_944_000), c.Stats().Bandwidth, "20 datagrams over exactly the minimum RTT: a sample")
}

// TestCanSendWindowEdge: a datagram fits while the bytes in flight plus
// its size are at most cwnd; one byte more does not, until nothing is in
// flight, when any datagram fits. The initial window is ten datagrams
// (RFC 6928), 14,720 bytes; the pacer's burst (40,774 bytes) does not
// hold anything back here.
func TestCanSendWindowEdge(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	require.True(t, c.CanSend(epoch, 20*mss), "nothing in flight: any datagram fits")
	ps := make([]Packet, 9)
	for i := range ps {
		c.OnSent(epoch, &ps[i], mss, false)
	}
	require.Equal(t, 10*mss, c.Window())
	require.Equal(t, 9*mss, c.InFlight())
	require.Equal(t, mss, c.Room())
	require.True(t, c.CanSend(epoch, mss), "13,248 + 1472 = 14,720 = cwnd")
	require.Equal(t, epoch, c.NextSend(epoch, mss))
	require.False(t, c.CanSend(epoch, mss+1), "one byte over cwnd")
	require.True(t, c.NextSend(epoch, mss+1).IsZero(), "an acknowledgement must come first")
	var last Packet
	c.OnSent(epoch, &last, mss, false)
	require.Zero(t, c.Room())
	require.False(t, c.CanSend(epoch, 1))
}

// TestAheadRoom: datagrams sent ahead (OnSentAhead) are MaxDatagram bytes
// in flight at most in all, whatever the window: each acknowledged, lost
// or forgotten gives its bytes back.
func TestAheadRoom(t *testing.T) {
	c := New(epoch, Config{MaxDatagram: mss})
	var bulk [10]Packet
	for i := range bulk {
		c.OnSent(epoch, &bulk[i], mss, false)
	}
	require.False(t, c.CanSend(epoch, 100), "the initial window is full")
	require.Equal(t, mss, c.AheadRoom(epoch))
	var a, b, d Packet
	c.OnSentAhead(epoch, &a, 1000, false)
	c.OnSentAhead(epoch, &b, 400, false)
	require.True(t, a.Ahead())
	require.Equal(t, mss-1400, c.AheadRoom(epoch))
	require.Equal(t, 10*mss+1400, c.InFlight(), "they count in flight")
	at := epoch.Add(10 * time.Millisecond)
	c.OnAcked(at, &a)
	c.OnLost(at, &b, trace.LossTime)
	c.Update(at, RTT{Latest: 10 * time.Millisecond, Smoothed: 10 * time.Millisecond, RTO: time.Second})
	require.Equal(t, mss, c.AheadRoom(at))
	c.OnSentAhead(at, &d, mss, true)
	require.Zero(t, c.AheadRoom(at))
	c.Forget(&d)
	require.Equal(t, mss, c.AheadRoom(at))
}
