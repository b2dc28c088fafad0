package avara

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpeningID: a client's Login and its resend initialRetransmit later,
// which differ in send count and checksum, both carry Config.Seed, whether
// p3 takes 4 bytes (above 65535, or negative), 2 or none (0); the
// server's TOC, a Login at another serial or behind an AckMap, a cut
// Login and a punch datagram carry none.
func TestOpeningID(t *testing.T) {
	for _, seed := range []int32{v1Seed, -7, 0x1234, 0} {
		c := newSession(t, t0, Config{Client: true, Seed: seed, Password: []byte("pw")})
		first := unhex(t, poll(t, c, t0))
		require.Empty(t, poll(t, c, t0.Add(initialRetransmit-ms)))
		again := unhex(t, poll(t, c, t0.Add(initialRetransmit)))
		require.NotEqual(t, first, again, "send count 1")
		for _, p := range [][]byte{first, again} {
			require.True(t, IsOpening(p, DefaultVersion))
			id, ok := Protocol.OpeningID(p)
			require.True(t, ok, "%x", p)
			require.Equal(t, uint64(uint32(seed)), id, "%x", p)
		}
	}

	v1 := unhex(t, loadVectors(t).Vectors[0].Hex)
	s := openServer(t, Config{})
	toc := unhex(t, poll(t, s, t0))
	require.False(t, IsOpening(toc, DefaultVersion))
	for _, p := range [][]byte{
		toc,
		datagram(Datagram{Ack: NothingReceived, Messages: []Message{{Serial: 2, Command: CommandLogin, P3: v1Seed}}}),
		datagram(Datagram{Ack: NothingReceived, HasAckMap: true, Messages: []Message{{Command: CommandLogin, P3: v1Seed}}}),
		v1[:len(v1)-1],
		v1[:PunchLen],
		nil,
	} {
		id, ok := Protocol.OpeningID(p)
		require.False(t, ok, "%x", p)
		require.Zero(t, id, "%x", p)
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { Protocol.OpeningID(v1) }))
}
