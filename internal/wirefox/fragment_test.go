package wirefox

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestFirstSegmentBytes: a 3001-byte blob goes out as W8 does: container
// 0, first segment packet 1 with SEG, 1200 bytes.
func TestFirstSegmentBytes(t *testing.T) {
	c, _ := handshake(t)
	require.NoError(t, c.Send(capturePayload(0, 3000), engine.SendOptions{Channel: 1}))
	v := loadVectors(t)
	require.Equal(t, v.Vectors[8].Hex, poll(t, c, t0))
}

// TestFragmentedLossy sends messages of 1 byte to 4 MiB over ORDERED
// channel 1 at 10 % loss: each arrives whole, once and in order, and
// every datagram stays within the MTU.
func TestFragmentedLossy(t *testing.T) {
	sizes := []int{1, 1199, 1200, 1201, 2401, 65535, 65536, 70_000, 1 << 20, 4 << 20}
	cfg := Config{SendLimit: -1}
	p := newPair(t, cfg, cfg, 10*ms, 0.1, 11)
	connect(t, p)
	var want [][]byte
	for i, n := range sizes {
		m := bytes.Repeat([]byte{byte(i + 1)}, n)
		m[0] = CmdUser + byte(i)
		want = append(want, m)
		require.NoError(t, p.A.Send(m, engine.SendOptions{Channel: 1}))
	}
	var got [][]byte
	p.RunUntil(5_000_000, func() bool {
		for {
			m, ok := p.B.Recv()
			if !ok {
				break
			}
			require.Equal(t, uint8(1), m.Channel)
			got = append(got, m.Data)
		}
		return len(got) == len(want) && p.A.Pending() == 0
	})
	require.Equal(t, len(want), len(got))
	for i := range want {
		require.True(t, bytes.Equal(want[i], got[i]), "message %d", i)
	}
	for _, d := range p.AB.Log {
		require.LessOrEqual(t, len(d), MTU)
	}
	require.Zero(t, p.B.buffered)
	st := p.A.Stats()
	t.Logf("virtual %v: %d datagrams, %d resent packets", p.Now.Sub(t0), st.PacketsSent, st.Retransmits)
}

// TestBigFlag: the segments of a message whose payload is 65,535 bytes or
// more carry BIG, 32-bit length and offset.
func TestBigFlag(t *testing.T) {
	c, _ := handshake(t)
	m := make([]byte, 65536)
	m[0] = CmdUser
	require.NoError(t, c.Send(m, engine.SendOptions{}))
	b, _ := hex.DecodeString(poll(t, c, t0))
	var d Datagram
	require.NoError(t, ParseDatagram(b, &d))
	var pk Packet
	_, err := ParsePacket(d.Data, &pk)
	require.NoError(t, err)
	require.Equal(t, byte(PacketSEG|PacketBIG), pk.Flags)
	require.Equal(t, uint32(1), pk.ID)
}

// TestIDWrap starts both ends' datagram and packet IDs just before 2^32:
// a lossy transfer crosses the wrap of both.
func TestIDWrap(t *testing.T) {
	cfg := Config{SendLimit: -1}
	p := newPair(t, cfg, cfg, 10*ms, 0.1, 5)
	connect(t, p)
	for _, s := range []*Session{p.A, p.B} {
		s.nextDgram, s.nextPkt = 1<<32-30, 1<<32-300
		// Its peer's IDs, the same, follow every ID seen so far.
		s.dgHist, s.pktHist = history{started: true, newest: 1<<32 - 31}, history{started: true, newest: 1<<32 - 301}
	}
	var sent, recv int
	p.RunUntil(1_000_000, func() bool {
		for ; sent < 3000 && p.A.Pending() < 200; sent++ {
			m := []byte{CmdUser, byte(sent >> 8), byte(sent)}
			require.NoError(t, p.A.Send(m, engine.SendOptions{Channel: 1}))
		}
		for {
			m, ok := p.B.Recv()
			if !ok {
				break
			}
			require.Equal(t, []byte{CmdUser, byte(recv >> 8), byte(recv)}, m.Data)
			recv++
		}
		return recv == 3000 && p.A.Pending() == 0
	})
	require.Less(t, p.A.nextDgram, uint32(1<<20), "datagram IDs wrapped")
	require.Less(t, p.A.nextPkt, uint32(1<<20), "packet IDs wrapped")
}
