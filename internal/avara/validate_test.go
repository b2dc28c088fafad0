package avara

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestServerValidates: a server that took a Login is not established
// until the client acknowledges its TOC. A Login sent again makes the
// TOC and Control due at once; without the acknowledgement the session
// ends DefaultServerHandshakeTimeout (4 s) after the Login.
func TestServerValidates(t *testing.T) {
	login := unhex(t, loadVectors(t).Vectors[0].Hex)
	s := openServer(t, Config{})
	first := poll(t, s, t0)
	require.NotEmpty(t, first, "TOC and Control")
	require.Empty(t, poll(t, s, t0.Add(time.Second)))
	require.NoError(t, s.HandleDatagram(t0.Add(time.Second), login), "the Login again")
	again := poll(t, s, t0.Add(time.Second))
	require.Len(t, again, len(first), "TOC and Control again at once")
	require.Equal(t, uint64(2), s.Stats().Retransmits)
	require.Equal(t, engine.StateHandshake, s.State())
	for now := t0.Add(time.Second); s.State() != engine.StateClosed; now = s.Deadline() {
		require.True(t, now.Before(t0.Add(4*time.Second+ms)), "ends by 4 s")
		poll(t, s, now)
	}
	require.ErrorIs(t, s.Err(), engine.ErrHandshakeTimeout)
	require.ErrorContains(t, s.Err(), "did not acknowledge")
}

// TestServerJoin: the client's acknowledgement of the TOC asks
// Config.Join once for its id and establishes the session; a new id goes
// to the client in a new TOC, and the client's messages are taken with
// either id in their sender byte. Join refusing ends the session with an
// error wrapping engine.ErrRejected.
func TestServerJoin(t *testing.T) {
	joins := 0
	var table TOC
	s := openServer(t, Config{Join: func() (int8, TOC, bool) { joins++; return 3, table, true }})
	require.NotEmpty(t, poll(t, s, t0))
	require.NoError(t, s.HandleDatagram(t0.Add(ms), clientControl(NothingReceived)), "the Control does not acknowledge the TOC")
	require.Equal(t, engine.StateHandshake, s.State())
	require.Zero(t, joins)
	require.NoError(t, s.HandleDatagram(t0.Add(2*ms), datagram(Datagram{Ack: 0})))
	require.Equal(t, engine.StateEstablished, s.State())
	require.Equal(t, 1, joins)
	require.Equal(t, int8(3), s.PeerID())
	var d Datagram
	require.NoError(t, ParseDatagram(unhex(t, poll(t, s, t0.Add(50*ms))), &d, DefaultVersion))
	require.Equal(t, CommandTOC, d.Messages[0].Command)
	require.Equal(t, int8(3), d.Messages[0].P1, "the TOC gives the new id")
	msg := func(serial uint16, sender int8) []byte {
		return datagram(Datagram{Ack: 0, Messages: []Message{{Serial: serial, Command: 1, Sender: sender, HasSender: true}}})
	}
	require.NoError(t, s.HandleDatagram(t0.Add(60*ms), msg(4, 1)), "the old id")
	require.NoError(t, s.HandleDatagram(t0.Add(61*ms), msg(6, 3)), "the new id")
	require.ErrorIs(t, s.HandleDatagram(t0.Add(62*ms), msg(8, 2)), engine.ErrRejected)
	require.Len(t, drain(s), 2)
	require.Equal(t, 1, joins)

	s = openServer(t, Config{Join: func() (int8, TOC, bool) { return 0, TOC{}, false }})
	require.NotEmpty(t, poll(t, s, t0))
	require.NoError(t, s.HandleDatagram(t0.Add(ms), datagram(Datagram{Ack: 0})))
	require.Equal(t, engine.StateClosed, s.State())
	require.ErrorIs(t, s.Err(), engine.ErrRejected)
}
