package lludp

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestRefusedNotAcked: while the session takes no new data, the acks
// appended to a datagram still free our message, a duplicate of a
// delivered message is acknowledged again, and a new reliable message is
// neither delivered nor acknowledged nor entered in the duplicate window,
// so that its resend is taken once the session is open again.
func TestRefusedNotAcked(t *testing.T) {
	s := openServer(t)
	require.NoError(t, s.Send([]byte("r"), rel))
	require.Equal(t, "500000000100ffff000172"+"0000000101", poll(t, s, t0), "r, the hello's ack appended")
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable, Seq: 2, Message: 5, Body: []byte("a")})))
	require.Equal(t, []string{"a"}, drain(s))
	require.Equal(t, "000000000200fffffffb01"+"02000000", poll(t, s, t0.Add(100*ms)))

	s.SetRecvOpen(false)
	require.NoError(t, s.HandleDatagram(t0.Add(200*ms), encode(Packet{Flags: FlagReliable, Seq: 3, Message: 5, Body: []byte("b"), Acks: []uint32{1}})))
	require.Zero(t, s.Pending(), "the appended ack is applied")
	require.NoError(t, s.HandleDatagram(t0.Add(200*ms), encode(Packet{Flags: FlagReliable | FlagResent, Seq: 2, Message: 5, Body: []byte("a")})))
	require.Empty(t, drain(s))
	require.Equal(t, "000000000300fffffffb01"+"02000000", poll(t, s, t0.Add(300*ms)), "the duplicate acknowledged, the new message not")
	st := s.Stats()
	require.Equal(t, uint64(1), st.Refused)
	require.Equal(t, uint64(1), st.Duplicates)

	s.SetRecvOpen(true)
	require.NoError(t, s.HandleDatagram(t0.Add(time.Second), encode(Packet{Flags: FlagReliable | FlagResent, Seq: 3, Message: 5, Body: []byte("b")})))
	require.Equal(t, []string{"b"}, drain(s), "the resend is new")
	require.Equal(t, "000000000400fffffffb01"+"03000000", poll(t, s, t0.Add(1100*ms)))
}

// TestCloseRefusesData: a session closed to new data, as a message conn
// is by its Close, does not acknowledge a message that arrives while its
// own last message is unacknowledged, and sends CloseCircuit as soon as
// that one is acknowledged.
func TestCloseRefusesData(t *testing.T) {
	s := openServer(t)
	require.NoError(t, s.Send([]byte("r"), rel))
	require.Equal(t, "500000000100ffff000172"+"0000000101", poll(t, s, t0))
	s.SetRecvOpen(false)
	s.Close(t0)
	require.NoError(t, s.HandleDatagram(t0.Add(10*ms), encode(Packet{Flags: FlagReliable, Seq: 2, Message: 5, Body: []byte("late")})))
	require.Empty(t, poll(t, s, t0.Add(20*ms)), "nothing acknowledged after Close")
	require.NoError(t, s.HandleDatagram(t0.Add(30*ms), encode(Packet{Seq: 3, Message: PacketAck, Body: []byte{1, 1, 0, 0, 0}})))
	require.Equal(t, "000000000200fffffffd", poll(t, s, t0.Add(30*ms)), "CloseCircuit at once")
	require.Empty(t, drain(s))
	require.Equal(t, uint64(1), s.Stats().Refused)
	require.Equal(t, engine.StateClosing, s.State())
}
