package avara

import (
	"net/netip"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// tocFrom is a server's datagram acknowledging the Login and carrying a
// TOC with serial, p1 id, p3 seed and table.
func tocFrom(serial uint16, id int8, seed int32, table *TOC) []byte {
	return datagram(Datagram{Ack: 0, Messages: []Message{
		{Serial: serial, Command: CommandTOC, P1: id, P3: seed, Sender: 0, HasSender: true, Data: appendTOC(nil, table)},
	}})
}

// TestTOCWrongSeed: a client takes only the TOC whose p3 is its seed
// (docs/protocols/avara.md §3.1 step 4; avaraline/Avara aaa5e63,
// src/net/CUDPComm.cpp, CUDPComm::PacketHandler, case
// kpPacketProtocolTOC). One with another seed is received, so
// acknowledged, and otherwise ignored: the client keeps no id and no
// table, stays in its handshake, sends neither its Control nor its queued
// message, and its handshake still times out 3 s after the Login. A TOC
// with its seed that comes next is taken.
func TestTOCWrongSeed(t *testing.T) {
	var table TOC
	table[0] = netip.MustParseAddrPort("192.0.2.1:5000")
	open := func() *Session {
		c := newSession(t, t0, Config{Client: true, Seed: v1Seed})
		require.NoError(t, c.Send([]byte("early"), engine.SendOptions{Params: engine.Params{Command: 7}}))
		require.Equal(t, loadVectors(t).Vectors[0].Hex, poll(t, c, t0), "the Login")
		require.NoError(t, c.HandleDatagram(t0.Add(ms), tocFrom(0, 1, v1Seed+1, &table)))
		require.Equal(t, engine.StateHandshake, c.State(), "still in its handshake")
		require.Equal(t, int8(-1), c.ID(), "no id")
		got, ok := c.Table()
		require.False(t, ok, "no table")
		require.Equal(t, TOC{}, got, "no table")
		require.Zero(t, c.Stats().MessagesRecv)
		return c
	}

	c := open()
	require.Equal(t, t0.Add(ms+DefaultAckDelay), c.Deadline())
	require.Equal(t, "0000", body(t, poll(t, c, t0.Add(ms+DefaultAckDelay))), "a pure acknowledgement of serial 0")
	require.Equal(t, t0.Add(DefaultHandshakeTimeout), c.Deadline(), "the Login is acknowledged: nothing due but the timeout")
	require.Empty(t, poll(t, c, t0.Add(DefaultHandshakeTimeout-1)))
	require.Equal(t, engine.StateHandshake, c.State())
	require.Empty(t, poll(t, c, t0.Add(DefaultHandshakeTimeout)))
	require.Equal(t, engine.StateClosed, c.State())
	require.ErrorIs(t, c.Err(), engine.ErrHandshakeTimeout)

	c = open()
	require.NoError(t, c.HandleDatagram(t0.Add(2*ms), tocFrom(2, 2, v1Seed, &table)))
	require.Equal(t, engine.StateEstablished, c.State())
	require.Equal(t, int8(2), c.ID(), "the id of the TOC with the seed")
	got, ok := c.Table()
	require.True(t, ok)
	require.Equal(t, table, got)
	require.Equal(t, "0200"+"0200"+"00"+"82"+"fc"+"0300"+"02"+"0400"+"00"+"90"+"07"+"05"+"02"+"6561726c79",
		body(t, poll(t, c, t0.Add(2*ms))), "ack field 2; Control serial 2; the queued message serial 4, sender 2")
}
