package rudp

import (
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/lludp"
	"github.com/stretchr/testify/require"
)

// viewerBurst plays an LLUDP peer on the Second Life viewer's rules
// (docs/protocols/lludp.md §3.4): it opens a circuit to addr, sends count
// reliable messages at once, with no flow control, then resends each
// unacknowledged one after resendAfter, at most lludp.DefaultResendLimit
// (3) times, and gives up on it after that. It returns how many it gave
// up on. The messages go out in runs of 32 datagrams a millisecond apart
// so that the kernel's socket buffers, not the conn, are never what
// drops them; to the conn, which is not read meanwhile, it is one burst.
func viewerBurst(t *testing.T, addr net.Addr, count int, resendAfter time.Duration) (gaveUp int) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()

	type sent struct {
		seq   uint32
		body  []byte
		at    time.Time
		sends int
	}
	out := make(map[uint32]*sent, count)
	var buf []byte
	send := func(p *lludp.Packet) {
		buf = lludp.AppendPacket(buf[:0], p)
		_, err := pc.WriteTo(buf, addr)
		require.NoError(t, err)
	}
	circuit := make([]byte, 36)
	binary.LittleEndian.PutUint32(circuit, 0x5eed)
	send(&lludp.Packet{Flags: lludp.FlagReliable, Seq: 1, Message: lludp.UseCircuitCode, Body: circuit})

	opened := false // the UseCircuitCode (sequence number 1) was acknowledged
	acked := func(id uint32) {
		opened = opened || id == 1
		delete(out, id)
	}
	in := make([]byte, 2048)
	var pkt lludp.Packet
	scratch := make([]byte, lludp.MaxDecoded)
	drain := func(wait time.Duration) {
		_ = pc.SetReadDeadline(time.Now().Add(wait))
		for {
			n, _, err := pc.ReadFrom(in)
			if err != nil {
				return
			}
			if lludp.ParsePacket(in[:n], &pkt, scratch) != nil {
				continue
			}
			for _, id := range pkt.Acks {
				acked(id)
			}
			if pkt.Message == lludp.PacketAck && len(pkt.Body) > 0 {
				for i := range int(pkt.Body[0]) {
					if o := 1 + 4*i; o+4 <= len(pkt.Body) {
						acked(binary.LittleEndian.Uint32(pkt.Body[o:]))
					}
				}
			}
			_ = pc.SetReadDeadline(time.Now().Add(time.Millisecond))
		}
	}
	for deadline := time.Now().Add(time.Minute); !opened; { // the circuit opens
		require.True(t, time.Now().Before(deadline), "the UseCircuitCode was never acknowledged")
		drain(10 * time.Millisecond)
	}

	for i := range count {
		m := &sent{seq: uint32(i + 2), body: []byte(fmt.Sprintf("burst %05d", i)), at: time.Now(), sends: 1}
		out[m.seq] = m
		send(&lludp.Packet{Flags: lludp.FlagReliable, Seq: m.seq, Message: 0xFFFF0001, Body: m.body})
		if i%32 == 31 {
			drain(time.Millisecond)
		}
	}
	for deadline := time.Now().Add(time.Minute); len(out) > 0 && time.Now().Before(deadline); {
		drain(10 * time.Millisecond)
		now := time.Now()
		for seq, m := range out {
			if now.Sub(m.at) < resendAfter {
				continue
			}
			if m.sends > lludp.DefaultResendLimit {
				gaveUp++
				delete(out, seq)
				continue
			}
			m.sends++
			m.at = now
			send(&lludp.Packet{Flags: lludp.FlagReliable | lludp.FlagResent, Seq: m.seq, Message: 0xFFFF0001, Body: m.body})
		}
	}
	return gaveUp + len(out)
}

// TestLLUDPViewerBurst: a peer on the viewer's rules sends 10,000
// reliable messages in one burst to a message conn that does not read
// meanwhile. The conn's receive buffer holds them all (it is bounded by
// bytes, and 10,000 short messages take under 1 MiB), so nothing is
// refused and the peer, which gives up after 3 resends, gives up on
// none; then every message is read, exactly once and intact.
func TestLLUDPViewerBurst(t *testing.T) {
	const count = 10000
	ln := ServerMessages(udpSocket(t, nil, 0), &Config{Protocol: LLUDP})
	t.Cleanup(func() { ln.Close() })
	require.Zero(t, viewerBurst(t, ln.Addr(), count, time.Second), "messages the viewer gave up on")

	s, err := ln.AcceptMessages()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, s.SetReadDeadline(time.Now().Add(time.Minute)))
	seen := make(map[string]bool, count)
	for range count {
		m, err := s.ReadMessage()
		require.NoError(t, err)
		require.False(t, seen[string(m.Data)], "%q twice", m.Data)
		seen[string(m.Data)] = true
	}
	for i := range count {
		require.True(t, seen[fmt.Sprintf("burst %05d", i)], "message %d missing", i)
	}
	require.Zero(t, s.Stats().Refused)
}
