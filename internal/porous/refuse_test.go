package porous

import (
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestRefusedDataUnacknowledged: while b takes no new data, a DataAck
// still frees b's pending packet, a duplicate of a delivered frame is
// acknowledged again, and a new Data frame is neither acknowledged nor
// delivered; once b is open again, the peer's resend of it is. (Times stay
// within b's 10 ms RTO, so b sends nothing of its own.)
func TestRefusedDataUnacknowledged(t *testing.T) {
	_, b := connected(t, Config{}, Config{})
	first := dataHex(nonceB, 0, 0, 0, "first")
	feedHex(t, b, at(5), first)
	require.Equal(t, []string{dataAckHex(nonceB)}, pollHex(t, b, at(5)))
	require.Equal(t, []string{"first"}, recvStrings(b))

	b.SetRecvOpen(false)
	require.NoError(t, b.Send([]byte("from b"), engine.SendOptions{}))
	require.Equal(t, []string{dataHex(nonceA, 0, 0, 0, "from b")}, pollHex(t, b, at(10)))
	feedHex(t, b, at(11), first)
	require.Equal(t, []string{dataAckHex(nonceB)}, pollHex(t, b, at(11)), "a duplicate is acknowledged again")
	next := dataHex(nonceB+1, 0, 1, 1, "next")
	feedHex(t, b, at(12), next)
	require.Empty(t, pollHex(t, b, at(12)), "a new frame is not acknowledged")
	require.Empty(t, recvStrings(b))
	feedHex(t, b, at(13), dataAckHex(nonceA))
	require.Zero(t, b.Pending(), "the peer's DataAck freed b's packet")
	require.Equal(t, uint64(1), b.Stats().Refused)

	b.SetRecvOpen(true)
	feedHex(t, b, at(15), next)
	require.Equal(t, []string{dataAckHex(nonceB+1, nonceB)}, pollHex(t, b, at(15)), "with the previous DataAck's ID again")
	require.Equal(t, []string{"next"}, recvStrings(b))
}

// TestCloseRefusesData: a session closed to new data, as a message conn
// is by its Close, does not acknowledge a frame that arrives while its own
// last packet is unconfirmed, and sends Disconnect as soon as that packet
// is acknowledged; the peer then ends with its packet reported
// unconfirmed.
func TestCloseRefusesData(t *testing.T) {
	a, b := connected(t, Config{NoChallenge: true}, Config{})
	require.NoError(t, b.Send([]byte("last"), engine.SendOptions{}))
	b.SetRecvOpen(false)
	b.Close(at(10))
	fb := pollHex(t, b, at(10))
	require.Equal(t, []string{dataHex(nonceA, 0, 0, 0, "last")}, fb)

	require.NoError(t, a.Send([]byte("late"), engine.SendOptions{}))
	fa := pollHex(t, a, at(10))
	require.Equal(t, []string{dataHex(nonceB, 0, 0, 0, "late")}, fa)
	feedHex(t, b, at(12), fa...)
	require.Empty(t, pollHex(t, b, at(12)), "nothing acknowledged after Close")
	feedHex(t, a, at(12), fb...)
	require.Equal(t, []string{dataAckHex(nonceA)}, pollHex(t, a, at(12)))
	feedHex(t, b, at(14), dataAckHex(nonceA))
	require.Equal(t, []string{disconnectHex}, pollHex(t, b, at(14)), "Disconnect at once")
	feedHex(t, b, at(15), fa...) // a resend, ignored once disconnecting
	require.Empty(t, pollHex(t, b, at(15)))
	require.Empty(t, recvStrings(b))
	require.Equal(t, uint64(2), b.Stats().Refused, "each arrival counts")

	feedHex(t, a, at(16), disconnectHex)
	require.Equal(t, []string{disconnectAckHex}, pollHex(t, a, at(16)))
	pollHex(t, a, at(5000))
	require.Equal(t, engine.StateClosed, a.State())
	require.ErrorIs(t, a.Err(), engine.ErrPeerClosed, "a knows its packet was not taken")
}

// TestHeld: a packet that arrives before the one it depends on waits,
// counted by Held, until that one arrives.
func TestHeld(t *testing.T) {
	_, b := connected(t, Config{}, Config{})
	feedHex(t, b, at(5), dataHex(nonceB+1, 0, 1, 1, "second"))
	require.Equal(t, 1, b.Held())
	require.Empty(t, recvStrings(b))
	feedHex(t, b, at(6), dataHex(nonceB, 0, 0, 0, "first"))
	require.Zero(t, b.Held())
	require.Equal(t, []string{"first", "second"}, recvStrings(b))
}
