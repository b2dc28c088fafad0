package avara

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// estimate is the reference estimator's state as Stats reports it: the
// mean round trip, its deviation (the square root of the variance) and
// the retransmit time.
type estimate struct{ mean, dev, rto time.Duration }

func estimateOf(s *Session) estimate {
	st := s.Stats()
	return estimate{st.SRTT, st.RTTVar, st.RTO}
}

// sendNow queues one message per command of cmds, with p3, and writes
// them at now.
func sendNow(t *testing.T, s *Session, now time.Time, p3 int32, cmds ...int8) {
	t.Helper()
	for _, c := range cmds {
		require.NoError(t, s.Send([]byte{1}, engine.SendOptions{Params: engine.Params{Command: c, P3: p3}}))
	}
	require.NotEmpty(t, poll(t, s, now))
	require.Empty(t, poll(t, s, now), "all in one datagram")
}

// TestEstimator feeds a server session round trips of known length, by
// acknowledging its messages at chosen virtual times, and checks the
// reference estimator's mean, deviation and retransmit time after each
// (docs/protocols/avara.md §3.4; avaraline/Avara aaa5e63,
// src/net/CUDPConnection.cpp, CUDPConnection::ValidatePacket and
// CommandMultiplierForStats). It starts at mean 500 ms, variance 64² and
// retransmit time 2000 ms. While the highest serial acknowledged is at
// most 10, any message's round trip lowers the mean to it if shorter and
// sets the variance to min(sample², 64²), and the retransmit time stays.
// Past serial 10 only game frames (17, weight fpsScale = 16/64) and pings
// (31) with p3 > 0 (weight 25.6, the sample × 0.82, the weight divided by
// max(4, diff²/variance) when the sample is more than 64 ms above the
// mean) count: α = weight/100, mean += α·diff, variance = (1 − α)
// (variance + α·diff²), retransmit time = clamp(mean + 2.5·deviation,
// 32 ms, 4000 ms), each of the round trip, a ping's × 0.82, 2.5·deviation
// and the retransmit time cut to whole milliseconds as the reference's
// integer ClockTick. The mean and deviation are those of exact
// arithmetic, truncated to the nanosecond.
func TestEstimator(t *testing.T) {
	s := openServer(t, Config{HandshakeTimeout: -1})
	require.NotEmpty(t, poll(t, s, t0), "TOC (serial 0) and Control (2)")
	require.Equal(t, estimate{500 * ms, 64 * ms, 2000 * ms}, estimateOf(s), "initial")
	ack := func(at time.Duration, serial uint16, want estimate, msg string) {
		t.Helper()
		require.NoError(t, s.HandleDatagram(t0.Add(at), fromClient(serial, false, 0)))
		require.Equal(t, want, estimateOf(s), msg)
	}

	ack(80*ms, 0, estimate{80 * ms, 64 * ms, 2000 * ms}, "TOC, 80 ms: mean 80, variance min(80², 64²)")
	ack(100*ms, 2, estimate{80 * ms, 64 * ms, 2000 * ms}, "Control, 100 ms: not below the mean")
	sendNow(t, s, t0.Add(100*ms), 0, CommandKeyAndMouse)
	ack(130*ms, 4, estimate{30 * ms, 30 * ms, 2000 * ms}, "serial 4, 30 ms: a frame is an early sample too")
	sendNow(t, s, t0.Add(130*ms), 0, 1, 1)
	ack(170*ms, 8, estimate{30 * ms, 30 * ms, 2000 * ms}, "serials 6 and 8, 40 ms")
	sendNow(t, s, t0.Add(170*ms), 0, 1)
	ack(190*ms, 10, estimate{20 * ms, 20 * ms, 2000 * ms}, "serial 10, 20 ms: still early")

	sendNow(t, s, t0.Add(190*ms), 0, CommandKeyAndMouse)
	// diff 400, α 0.0025: mean 21, variance 0.9975 × (400 + 400) = 798.
	ack(610*ms, 12, estimate{21 * ms, 28_248_893, 91 * ms}, "serial 12, a frame of 420 ms")
	sendNow(t, s, t0.Add(610*ms), 0, CommandPing, 1)
	ack(660*ms, 16, estimate{21 * ms, 28_248_893, 91 * ms}, "a ping with p3 0 and a game message: not sampled")
	sendNow(t, s, t0.Add(660*ms), 1, CommandPing)
	// 100 × 0.82 = 82, diff 61, α 0.256: mean 36.616, variance
	// 0.744 × (798 + 0.256 × 61²) = 1302.428544.
	ack(760*ms, 18, estimate{36_616_000, 36_089_174, 126 * ms}, "a ping of 100 ms")
	sendNow(t, s, t0.Add(760*ms), 2, CommandPing)
	// 250 × 0.82 = 205, diff 168.384 > 64: weight 25.6 / (diff²/1302.428544).
	ack(1010*ms, 20, estimate{38_596_127, 40_207_130, 138 * ms}, "a ping of 250 ms, 141 ms above the mean")
	sendNow(t, s, t0.Add(1010*ms), 0, CommandKeyAndMouse)
	ack(41010*ms, 22, estimate{138_499_636, 1_995_975_039, 4000 * ms}, "a frame of 40 s: capped at 4000 ms")

	s = openServer(t, Config{HandshakeTimeout: -1})
	require.NotEmpty(t, poll(t, s, t0))
	ack(4*ms, 2, estimate{4 * ms, 4 * ms, 2000 * ms}, "TOC and Control, 4 ms")
	sendNow(t, s, t0.Add(4*ms), 0, 1, 1, 1, 1)
	ack(8*ms, 10, estimate{4 * ms, 4 * ms, 2000 * ms}, "serials 4 to 10, 4 ms")
	sendNow(t, s, t0.Add(8*ms), 0, CommandKeyAndMouse)
	// diff 0: variance 0.9975 × 16; 4 + 2.5 × 3.995 < 32.
	ack(12*ms, 12, estimate{4 * ms, 3_994_996, 32 * ms}, "a frame of 4 ms: at least two 16 ms frames")
}

// TestEstimatorWholeMilliseconds: the reference keeps the retransmit time
// in whole milliseconds (ClockTick): mean + (long)(2.5·deviation), and a
// ping's round trip is a long, so × 0.82 truncates
// (CUDPConnection::ValidatePacket, aaa5e63).
func TestEstimatorWholeMilliseconds(t *testing.T) {
	s := openServer(t, Config{HandshakeTimeout: -1})
	require.NotEmpty(t, poll(t, s, t0))
	require.NoError(t, s.HandleDatagram(t0.Add(20*ms), fromClient(2, false, 0)))
	sendNow(t, s, t0.Add(20*ms), 0, 1, 1, 1, 1)
	require.NoError(t, s.HandleDatagram(t0.Add(40*ms), fromClient(10, false, 0)))
	sendNow(t, s, t0.Add(40*ms), 0, CommandKeyAndMouse)
	require.NoError(t, s.HandleDatagram(t0.Add(460*ms), fromClient(12, false, 0)))
	require.Equal(t, 91*ms, s.Stats().RTO, "21 + (long)(2.5 × 28.2489) = 91")
	sendNow(t, s, t0.Add(460*ms), 1, CommandPing)
	require.NoError(t, s.HandleDatagram(t0.Add(561*ms), fromClient(14, false, 0)))
	// 101 × 0.82 = 82.82 → 82 (long): diff 61, as a 100 ms ping.
	require.Equal(t, time.Duration(36_616_000), s.Stats().SRTT, "a ping of 101 ms counts as 82")
}

// TestEstimatorMapEarly: a message acknowledged by an AckMap bit is
// sampled as early while the ack field (maxValid) is at most 10, whatever
// its own serial (CUDPConnection::ValidatePackets, ValidatePacket).
func TestEstimatorMapEarly(t *testing.T) {
	s := openServer(t, Config{HandshakeTimeout: -1})
	require.NotEmpty(t, poll(t, s, t0))
	require.NoError(t, s.HandleDatagram(t0.Add(20*ms), fromClient(2, false, 0)))
	sendNow(t, s, t0.Add(20*ms), 0, 1, 1, 1, 1, 1)
	require.Equal(t, 5, s.Pending())
	// base 2; bit 4 acknowledges serial 2 + 2·5 = 12, sampled 10 ms.
	require.NoError(t, s.HandleDatagram(t0.Add(30*ms), fromClient(2, true, 1<<4)))
	require.Equal(t, 4, s.Pending(), "serial 12 acknowledged")
	require.Equal(t, 10*ms, s.Stats().SRTT, "maxValid 2 ≤ 10: early, the mean drops to 10")
}
