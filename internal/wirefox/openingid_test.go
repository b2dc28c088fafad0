package wirefox

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpeningID: a client's INITIAL_CLIENT and its repeat HandshakeInterval
// later, in a datagram of another ID, both carry Config.PeerID; the
// server's INITIAL_SERVER, an INITIAL_CLIENT of PeerID 0 and a cut one
// carry none.
func TestOpeningID(t *testing.T) {
	c := newSession(t, t0, Config{Client: true, PeerID: clientID})
	first := poll(t, c, t0)
	require.Equal(t, "", poll(t, c, t0.Add(HandshakeInterval-ms)))
	again := poll(t, c, t0.Add(HandshakeInterval))
	require.NotEqual(t, first, again, "a new datagram ID")
	for _, h := range []string{first, again} {
		id, ok := Protocol.OpeningID(unhex(t, h))
		require.True(t, ok, h)
		require.Equal(t, uint64(clientID), id, h)
	}

	s := newSession(t, t0, Config{Accept: true, PeerID: serverID})
	require.NoError(t, s.HandleDatagram(t0, unhex(t, first)))
	answer := unhex(t, poll(t, s, t0))
	var d Datagram
	require.NoError(t, ParseDatagram(answer, &d))
	blob, err := ParseOOB(&d)
	require.NoError(t, err)
	var h Handshake
	require.NoError(t, ParseHandshake(blob, &h))
	require.Equal(t, Handshake{PeerID: serverID, Op: OpInitialServer, Data: []byte{0}}, h)
	zero := AppendOOB(nil, 0, AppendHandshake(nil, &Handshake{Op: OpInitialClient, Data: []byte{0}}))
	for _, p := range [][]byte{answer, zero, unhex(t, first)[:25], nil} {
		id, ok := Protocol.OpeningID(p)
		require.False(t, ok, "%x", p)
		require.Zero(t, id, "%x", p)
	}
	p := unhex(t, first)
	require.Zero(t, testing.AllocsPerRun(100, func() { Protocol.OpeningID(p) }))
}
