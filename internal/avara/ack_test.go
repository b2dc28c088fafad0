package avara

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// sentServer returns a server that has sent its TOC and Control (serials
// 0 and 2) and then n messages (serials 4, 6, ...), none acknowledged.
func sentServer(t *testing.T, n int) *Session {
	s := openServer(t, Config{MaxDatagram: MaxDatagram, HandshakeTimeout: -1})
	for i := range n {
		require.NoError(t, s.Send([]byte{byte(i)}, engine.SendOptions{Params: engine.Params{Command: 1}}))
	}
	for poll(t, s, t0) != "" {
	}
	require.Equal(t, uint16(4+2*n), s.nextSerial)
	return s
}

// fromClient is a datagram of client 1 acknowledging up to ack, with
// ackMap when hasMap.
func fromClient(ack uint16, hasMap bool, ackMap uint32) []byte {
	return datagram(Datagram{Ack: ack, HasAckMap: hasMap, AckMap: ackMap})
}

// TestAckMapTrust: AckMap bits are applied while no message more than 64
// serials beyond the base was sent; beyond that a reference receiver sets
// aliased bits (docs/protocols/avara.md §4.1: a map with only bit 1 made
// the reference drop serials 6, 70 and 134), so they are ignored and the
// messages are left to the ack field and the resend timers.
func TestAckMapTrust(t *testing.T) {
	s := sentServer(t, 30) // serials up to 62
	require.NoError(t, s.HandleDatagram(t0.Add(ms), fromClient(2, true, 1<<1)))
	require.Equal(t, 29, s.Pending(), "serial 6 acknowledged by bit 1 over base 2")

	s = sentServer(t, 66) // serials up to 134
	require.NoError(t, s.HandleDatagram(t0.Add(ms), fromClient(2, true, 1<<1)))
	require.Equal(t, 66, s.Pending(), "bit 1 may mean 6, 70 or 134: ignored")
	require.NoError(t, s.HandleDatagram(t0.Add(2*ms), fromClient(6, false, 0)))
	require.Equal(t, 64, s.Pending(), "the ack field is trusted: serials 4 and 6")
}

// TestStaleAckField: an ack field older than the newest processed, as the
// reference sends while it holds messages (docs/protocols/avara.md §4.2),
// does not move the window back; its AckMap bits still count.
func TestStaleAckField(t *testing.T) {
	s := sentServer(t, 10) // serials 4..22
	require.NoError(t, s.HandleDatagram(t0.Add(ms), fromClient(12, false, 0)))
	require.Equal(t, uint16(12), s.peerAck)
	require.Equal(t, 5, s.Pending())
	require.NoError(t, s.HandleDatagram(t0.Add(2*ms), fromClient(8, true, 1<<4)))
	require.Equal(t, uint16(12), s.peerAck, "the stale field is ignored")
	require.Equal(t, 4, s.Pending(), "bit 4 over base 8 acknowledges serial 18")
	require.ErrorIs(t, s.HandleDatagram(t0.Add(3*ms), fromClient(24, false, 0)), engine.ErrRejected, "serial 24 was never sent")
}

// TestNoBackoffAndThrottle: resends come every retransmit time without
// back-off, and after 3 datagrams of resends without hearing from the
// peer only messages never sent go out, and the oldest unacknowledged
// one at its time (docs/protocols/avara.md §3.4).
func TestNoBackoffAndThrottle(t *testing.T) {
	s := sentServer(t, 0) // TOC and Control in flight
	for i := 1; i <= 3; i++ {
		at := t0.Add(time.Duration(i) * initialRetransmit)
		require.Equal(t, at, s.Deadline(), "no back-off")
		require.NotEmpty(t, poll(t, s, at))
		require.Equal(t, uint64(2*i), s.Stats().Retransmits, "both in one datagram")
	}
	require.Equal(t, t0.Add(4*initialRetransmit), s.Deadline(), "throttled: the oldest message alone")
	require.NoError(t, s.Send([]byte("new"), engine.SendOptions{Params: engine.Params{Command: 2}}))
	got := body(t, poll(t, s, t0.Add(7*time.Second)))
	require.Equal(t, "0000"+"0400"+"00"+"90"+"02"+"03"+"00"+"6e6577", got, "a new message goes")
	got = body(t, poll(t, s, t0.Add(4*initialRetransmit)))
	require.Equal(t, "0000"+"0000"+"04"+"95", got[:12], "the TOC alone, sent for the fifth time")
	require.Equal(t, uint64(7), s.Stats().Retransmits)
	require.NoError(t, s.HandleDatagram(t0.Add(9*time.Second), fromClient(NothingReceived, false, 0)))
	require.Equal(t, t0.Add(9*time.Second), s.Deadline(), "heard: the Control's resend is due at once")
}
