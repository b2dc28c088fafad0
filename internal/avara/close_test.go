package avara

import (
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

var game = engine.SendOptions{Params: engine.Params{Command: 3}}

// TestLogout: Close sends a Logout (p1 our id) after what is pending; the
// peer delivers what came before it, acknowledges it at once and ends;
// the closing side ends once its Logout is acknowledged, both without
// error.
func TestLogout(t *testing.T) {
	p := established(t, Config{})
	require.NoError(t, p.A.Send([]byte("last"), game))
	p.A.Close(p.Now)
	require.ErrorIs(t, p.A.Send([]byte("x"), game), engine.ErrClosed)
	p.RunUntil(1000, func() bool {
		return p.A.State() == engine.StateClosed && p.B.State() == engine.StateClosed
	})
	require.NoError(t, p.A.Err())
	require.NoError(t, p.B.Err())
	require.Equal(t, []string{"last"}, drain(p.B))
	require.Less(t, p.Now.Sub(t0), DefaultAckDelay+100*ms, "the Logout acknowledged at once")
}

// TestSendRefusesTransportCommands: negative commands belong to the
// transport and other options do not exist.
func TestSendRefusesTransportCommands(t *testing.T) {
	s := openServer(t, Config{})
	for _, c := range []int8{CommandLogin, CommandLogout, CommandTOC, CommandControl, CommandKill, -1, -128} {
		require.ErrorIs(t, s.Send(nil, engine.SendOptions{Params: engine.Params{Command: c}}), engine.ErrUnsupported, c)
	}
	require.ErrorIs(t, s.Send(nil, engine.SendOptions{Delivery: engine.Unreliable}), engine.ErrUnsupported)
	require.ErrorIs(t, s.Send(nil, engine.SendOptions{MessageNumber: 1}), engine.ErrUnsupported)
	require.ErrorIs(t, s.Send(make([]byte, MaxData+1), game), engine.ErrMessageTooLarge)
	require.NoError(t, s.Send(make([]byte, MaxData), game))
	require.NoError(t, s.Send(nil, engine.SendOptions{Params: engine.Params{Command: 127}}))
}

// TestRefusedNotAcked: while the session takes no new game messages, one
// that arrives is neither delivered nor acknowledged; its resend is taken
// once the session is open again.
func TestRefusedNotAcked(t *testing.T) {
	s := openServer(t, Config{})
	poll(t, s, t0)
	s.SetRecvOpen(false)
	msg := datagram(Datagram{Ack: NothingReceived, Messages: []Message{{Serial: 2, Command: 1, Data: []byte("a"), Sender: 1, HasSender: true}}})
	require.NoError(t, s.HandleDatagram(t0, msg))
	require.Empty(t, drain(s))
	require.Equal(t, "0000", body(t, poll(t, s, t0.Add(DefaultAckDelay))), "serial 2 not acknowledged")
	require.Equal(t, uint64(1), s.Stats().Refused)
	s.SetRecvOpen(true)
	require.NoError(t, s.HandleDatagram(t0.Add(ms), msg))
	require.Equal(t, []string{"a"}, drain(s))
	require.Equal(t, "0200", body(t, poll(t, s, t0.Add(ms+DefaultAckDelay))))
}

// TestRefusedHeldTakenOnce: a held message refused when its turn came
// (SetRecvOpen(false)) and sent again once the session is open is
// delivered once, from the ring, which keeps no stale copy of it.
func TestRefusedHeldTakenOnce(t *testing.T) {
	s := openServer(t, Config{})
	msg := datagram(Datagram{Ack: NothingReceived, Messages: []Message{{Serial: 4, Command: 1, Data: []byte("x"), Sender: 1, HasSender: true}}})
	require.NoError(t, s.HandleDatagram(t0, msg))
	s.SetRecvOpen(false)
	require.NoError(t, s.HandleDatagram(t0, clientControl(NothingReceived)))
	require.Equal(t, uint16(4), s.expected, "the Control taken, serial 4 refused")
	s.SetRecvOpen(true)
	require.NoError(t, s.HandleDatagram(t0.Add(ms), msg))
	require.Equal(t, []string{"x"}, drain(s))
	require.Zero(t, s.nHeld)
	require.Equal(t, uint16(6), s.expected)
}
