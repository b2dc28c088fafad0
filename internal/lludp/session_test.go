package lludp

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

var (
	rel   = engine.SendOptions{MessageNumber: TestMessage}
	unrel = engine.SendOptions{MessageNumber: TestMessage, Delivery: engine.Unreliable}
	ms    = time.Millisecond
)

// snapshot copies the state of s for comparison, leaving out the decoding
// scratch.
func snapshot(s *Session) Session {
	c := *s
	c.pkt, c.scratch = Packet{}, nil
	c.unacked = maps.Clone(s.unacked)
	c.free = slices.Clone(s.free)
	c.queue = s.queue.Clone()
	c.Inbox = s.Inbox.Clone()
	return c
}

// requireUnchanged checks that s is as in before except for the counters,
// which must equal stats.
func requireUnchanged(t *testing.T, before Session, s *Session, stats engine.Stats) {
	t.Helper()
	after := snapshot(s)
	after.Counters = before.Counters
	require.Equal(t, before, after)
	require.Equal(t, stats, s.Counters)
}

func TestConfigValidation(t *testing.T) {
	for name, cfg := range map[string]Config{
		"client+accept": {Client: true, Accept: true},
		"datagram":      {MaxDatagram: MinMaxDatagram - 1},
		"ackdelay":      {AckDelay: -1},
		"rto":           {RTOMin: 2 * time.Second, RTOMax: time.Second},
		"handshake":     {HandshakeTimeout: -1},
		"linger":        {Linger: -1},
		"maxqueued":     {MaxQueued: -1},
		"initialseq":    {InitialSeq: SeqWrap},
	} {
		_, err := New(t0, cfg)
		require.Error(t, err, name)
	}
	s := newSession(t, t0, Config{})
	require.Equal(t, engine.Capabilities{MaxMessage: 1190, MaxQueued: engine.DefaultMaxQueued, Channels: 1, Unreliable: true}, s.Capabilities())
	st := s.Stats()
	require.Equal(t, time.Second, st.SRTT, "initial averaged ping")
	require.Equal(t, 5*time.Second, st.RTO, "5 × 1 s")
	s = newSession(t, t0, Config{MaxDatagram: 576})
	require.Equal(t, 576-10, s.Capabilities().MaxMessage)
	require.Equal(t, t0.Add(DefaultIdleTimeout), s.Deadline(), "a server waiting for its circuit has its idle timer")
	_, ok := s.Circuit()
	require.False(t, ok)
}

func TestSendErrors(t *testing.T) {
	s := openServer(t, Config{MaxQueued: 3})
	for _, n := range []uint32{0, 0xFF, 0x100, 0xFF00, 0xFFFF, 0x12345678, 0xFFFF0000,
		StartPingCheck, CompletePingCheck, UseCircuitCode, PacketAck, OpenCircuit, CloseCircuit} {
		require.ErrorIs(t, s.Send(nil, engine.SendOptions{MessageNumber: n}), engine.ErrUnsupported, "%#x", n)
	}
	require.ErrorIs(t, s.Send(nil, engine.SendOptions{MessageNumber: 5, Delivery: engine.Passive}), engine.ErrUnsupported)
	require.ErrorIs(t, s.Send(nil, engine.SendOptions{MessageNumber: 5, Channel: 1}), engine.ErrUnsupported)
	for _, n := range []uint32{3, 0xFF01, TestMessage} {
		require.ErrorIs(t, s.Send(make([]byte, 1191), engine.SendOptions{MessageNumber: n}), engine.ErrMessageTooLarge, "%#x", n)
	}
	msg := make([]byte, 1190)
	require.NoError(t, s.Send(msg, rel))
	require.NoError(t, s.Send(make([]byte, 1190), engine.SendOptions{MessageNumber: 3}))
	require.NoError(t, s.Send(nil, engine.SendOptions{MessageNumber: 0xFFFFFFFF, Delivery: engine.Unreliable}), "empty bodies are messages")
	msg[0] = 'z' // Send copied it
	require.Equal(t, byte(0), (*s.queue.Front()).body[0])
	require.ErrorIs(t, s.Send(nil, rel), engine.ErrQueueFull)
	require.Equal(t, 3, s.Pending())

	s.Close(t0)
	require.Equal(t, engine.StateClosing, s.State())
	require.ErrorIs(t, s.Send(nil, rel), engine.ErrClosed)
}

func TestCircuitOpen(t *testing.T) {
	c := newSession(t, t0, Config{Client: true, Circuit: testCircuit})
	require.NoError(t, c.Send([]byte("hi"), rel))
	require.Equal(t, t0, c.Deadline(), "UseCircuitCode is due at once")
	circuit, ok := c.Circuit()
	require.True(t, ok)
	require.Equal(t, testCircuit, circuit)
	hello := poll(t, c, t0)
	require.Equal(t, helloHex, hello, "vector P10: reliable, seq 1")
	require.Empty(t, poll(t, c, t0), "data waits for the ack")
	require.Equal(t, t0.Add(5*time.Second), c.Deadline(), "resent after 5 × 1 s")
	require.Equal(t, engine.StateHandshake, c.State())

	s := newSession(t, t0, Config{Accept: true})
	require.NoError(t, s.HandleDatagram(t0, unhex(t, hello)))
	require.Equal(t, engine.StateEstablished, s.State())
	circuit, ok = s.Circuit()
	require.True(t, ok)
	require.Equal(t, testCircuit, circuit)
	require.Empty(t, poll(t, s, t0), "the ack waits AckDelay for a datagram to ride on")
	require.Equal(t, t0.Add(100*ms), s.Deadline())
	ack := poll(t, s, t0.Add(100*ms))
	require.Equal(t, "000000000100fffffffb0101000000", ack, "PacketAck, seq 1, ID 1")

	require.NoError(t, c.HandleDatagram(t0.Add(100*ms), unhex(t, ack)))
	require.Equal(t, engine.StateEstablished, c.State())
	// TestMessage "hi": zerocoding FF FF 00 01 68 69 would give 7 bytes,
	// so it goes plain.
	require.Equal(t, "40000000020"+"0ffff00016869", poll(t, c, t0.Add(100*ms)))
	require.Empty(t, poll(t, c, t0.Add(100*ms)))
}

func TestZerocodedWhenShorter(t *testing.T) {
	s := openServer(t)
	require.NoError(t, s.Send(make([]byte, 8), engine.SendOptions{MessageNumber: 4, Delivery: engine.Unreliable}))
	// 04 + 8 zeros → 04 00 08; the owed ack of the UseCircuitCode rides
	// on it.
	require.Equal(t, "900000000100"+"040008"+"00000001"+"01", poll(t, s, t0))
	var p Packet
	require.NoError(t, ParsePacket(unhex(t, "900000000100040008000000010"+"1"), &p, nil))
	require.Equal(t, make([]byte, 8), p.Body)
}

func TestAcksAppendedOrPacketAck(t *testing.T) {
	s := openServer(t) // owes an ack for seq 1
	// An outgoing datagram carries the owed ack, big-endian, then the count.
	require.NoError(t, s.Send([]byte("x"), engine.SendOptions{MessageNumber: 5, Delivery: engine.Unreliable}))
	require.Equal(t, "100000000100"+"0578"+"00000001"+"01", poll(t, s, t0))
	require.True(t, s.Deadline().After(t0.Add(time.Second)), "nothing owed")

	// With nothing to send, owed acks go in a PacketAck after AckDelay,
	// IDs little-endian, duplicates acknowledged again.
	a2 := encode(Packet{Flags: FlagReliable, Seq: 2, Message: 5, Body: []byte("a")})
	require.NoError(t, s.HandleDatagram(t0.Add(10*ms), a2))
	require.NoError(t, s.HandleDatagram(t0.Add(20*ms), a2))
	require.Equal(t, []string{"a"}, drain(s))
	require.Equal(t, t0.Add(110*ms), s.Deadline())
	require.Empty(t, poll(t, s, t0.Add(109*ms)))
	require.Equal(t, "000000000200fffffffb02"+"02000000"+"02000000", poll(t, s, t0.Add(110*ms)))
	require.Empty(t, poll(t, s, t0.Add(110*ms)))

	// 300 owed: a full PacketAck of 251 goes at once, the other 49 after
	// AckDelay.
	now := t0.Add(time.Second)
	for i := range 300 {
		require.NoError(t, s.HandleDatagram(now, encode(Packet{Flags: FlagReliable, Seq: uint32(100 + i), Message: 5})))
	}
	var p Packet
	out := unhex(t, poll(t, s, now))
	require.NoError(t, ParsePacket(out, &p, nil))
	require.Equal(t, PacketAck, p.Message)
	require.Equal(t, byte(251), p.Body[0])
	require.Equal(t, []byte{100, 0, 0, 0}, p.Body[1:5], "oldest first")
	require.Len(t, out, 6+4+1+251*4)
	require.Empty(t, poll(t, s, now))
	require.Equal(t, now.Add(100*ms), s.Deadline())

	// A message of 1000 bytes (before acks) takes (1200 − 1000)/4 = 50
	// of them; only 49 are left.
	body := make([]byte, 1000-6-1)
	for i := range body {
		body[i] = 0xAA
	}
	require.NoError(t, s.Send(body, engine.SendOptions{MessageNumber: 5, Delivery: engine.Unreliable}))
	out = unhex(t, poll(t, s, now))
	require.NoError(t, ParsePacket(out, &p, nil))
	require.Len(t, p.Acks, 49)
	require.Equal(t, uint32(351), p.Acks[0])
	require.Len(t, out, 1000+49*4+1)

	// A full 1200-byte message has no room for acks: they wait for the
	// PacketAck.
	for i := range 60 {
		require.NoError(t, s.HandleDatagram(now, encode(Packet{Flags: FlagReliable, Seq: uint32(1000 + i), Message: 5})))
	}
	full := make([]byte, 1190)
	for i := range full {
		full[i] = 0xAA
	}
	require.NoError(t, s.Send(full, rel))
	out = unhex(t, poll(t, s, now))
	require.Len(t, out, 1200)
	require.NoError(t, ParsePacket(out, &p, nil))
	require.Equal(t, byte(FlagReliable), p.Flags)
	out = unhex(t, poll(t, s, now.Add(100*ms)))
	require.NoError(t, ParsePacket(out, &p, nil))
	require.Equal(t, PacketAck, p.Message)
	require.Equal(t, byte(60), p.Body[0])
}

func TestAppendedAcksLimit(t *testing.T) {
	s := openServer(t, Config{MaxDatagram: 100})
	for i := range 40 {
		require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable, Seq: uint32(2 + i), Message: 5})))
	}
	require.NoError(t, s.Send([]byte{1, 2, 3}, engine.SendOptions{MessageNumber: 5}))
	out := unhex(t, poll(t, s, t0))
	require.Len(t, out, 10+4*22+1, "(100 − 10 − 1)/4 = 22 within MaxDatagram")
	require.Empty(t, poll(t, s, t0))
	out = unhex(t, poll(t, s, t0.Add(100*ms)))
	var p Packet
	require.NoError(t, ParsePacket(out, &p, nil))
	require.Equal(t, PacketAck, p.Message, "the rest is flushed by a PacketAck")
	require.Len(t, out, 6+4+1+4*19, "19 left")
	require.Empty(t, p.Acks, "never appended to a PacketAck")
}

func TestResendSameSeqNoAcks(t *testing.T) {
	s := openServer(t) // owes an ack for seq 1
	require.NoError(t, s.Send([]byte("r"), rel))
	first := poll(t, s, t0)
	require.Equal(t, "500000000100ffff000172"+"00000001"+"01", first, "reliable, ack appended")
	require.NoError(t, s.HandleDatagram(t0.Add(time.Second), encode(Packet{Flags: FlagReliable, Seq: 2, Message: 5})))
	require.Equal(t, t0.Add(1100*ms), s.Deadline(), "PacketAck due before the resend")
	require.Equal(t, "000000000200fffffffb0102000000", poll(t, s, t0.Add(1100*ms)))
	require.NoError(t, s.HandleDatagram(t0.Add(2*time.Second), encode(Packet{Flags: FlagReliable, Seq: 3, Message: 5})))
	require.Equal(t, t0.Add(2100*ms), s.Deadline())
	// At 5 s: the resend (same seq, RESENT, no trailer though an ack is
	// owed), then the ping (it carries the owed ack).
	now := t0.Add(5 * time.Second)
	require.Equal(t, "600000000100ffff000172", poll(t, s, now))
	require.Equal(t, "100000000300010001000000"+"00000003"+"01", poll(t, s, now), "StartPingCheck ID 0, OldestUnacked 1")
	require.Equal(t, uint64(1), s.Stats().Retransmits)
	require.Equal(t, uint64(1), s.Stats().MessagesSent)
	require.Equal(t, now.Add(5*time.Second), s.Deadline())
	// The ack ends the resends.
	require.NoError(t, s.HandleDatagram(now, encode(Packet{Seq: 4, Message: PacketAck, Body: []byte{1, 1, 0, 0, 0}})))
	require.Zero(t, s.Pending())
}

func TestGiveUpAfterResendLimit(t *testing.T) {
	s := openServer(t, Config{KeepAlive: -1, ResendLimit: 2})
	require.NoError(t, s.Send([]byte("r"), rel))
	var at []time.Duration
	var flags []byte
	for s.State() != engine.StateClosed {
		now := s.Deadline()
		if out := unhex(t, poll(t, s, now)); len(out) > 0 {
			at = append(at, now.Sub(t0))
			flags = append(flags, out[0])
		}
	}
	require.Equal(t, []time.Duration{0, 5 * time.Second, 10 * time.Second}, at)
	require.Equal(t, []byte{0x50, 0x60, 0x60}, flags)
	require.ErrorIs(t, s.Err(), engine.ErrRetransmitLimit)
	require.NotErrorIs(t, s.Err(), engine.ErrHandshakeTimeout)
	require.Equal(t, 15*time.Second, s.now.Sub(t0), "one more timeout after the last resend")

	// The client's UseCircuitCode: the viewer's 3 retries, 5 s apart.
	c := newSession(t, t0, Config{Client: true, Circuit: testCircuit})
	at = at[:0]
	var wires []string
	for c.State() != engine.StateClosed {
		now := c.Deadline()
		if out := poll(t, c, now); out != "" {
			at = append(at, now.Sub(t0))
			wires = append(wires, out)
		}
	}
	require.Equal(t, []time.Duration{0, 5 * time.Second, 10 * time.Second, 15 * time.Second}, at)
	require.Equal(t, helloHex, wires[0])
	require.Equal(t, "60"+helloHex[2:], wires[3])
	require.ErrorIs(t, c.Err(), engine.ErrRetransmitLimit)
	require.ErrorIs(t, c.Err(), engine.ErrHandshakeTimeout)
	require.Equal(t, 20*time.Second, c.now.Sub(t0))
}

func TestDuplicateAckedNotDelivered(t *testing.T) {
	s := openServer(t)
	d := encode(Packet{Flags: FlagReliable, Seq: 2, Message: 5, Body: []byte("a")})
	resent := encode(Packet{Flags: FlagReliable | FlagResent, Seq: 2, Message: 5, Body: []byte("a")})
	require.NoError(t, s.HandleDatagram(t0, d))
	require.NoError(t, s.HandleDatagram(t0, d), "network duplicate, no RESENT flag")
	require.NoError(t, s.HandleDatagram(t0, resent))
	require.Equal(t, []string{"a"}, drain(s))
	u := encode(Packet{Seq: 3, Message: 5, Body: []byte("u")})
	require.NoError(t, s.HandleDatagram(t0, u))
	require.NoError(t, s.HandleDatagram(t0, u))
	require.Equal(t, []string{"u"}, drain(s), "unreliable messages are not delivered twice either")
	st := s.Stats()
	require.Equal(t, uint64(3), st.Duplicates)
	require.Equal(t, uint64(6), st.PacketsReceived)
	require.Equal(t, "000000000100fffffffb04"+"01000000"+"02000000"+"02000000"+"02000000",
		poll(t, s, t0.Add(100*ms)), "every reliable copy acknowledged, the unreliable ones not")
}

func TestAppendedAcksAppliedOnDuplicates(t *testing.T) {
	s := openServer(t)
	require.NoError(t, s.Send([]byte("r"), rel))
	require.NotEmpty(t, poll(t, s, t0))
	d := encode(Packet{Flags: FlagReliable, Seq: 2, Message: 5})
	require.NoError(t, s.HandleDatagram(t0, d))
	require.Equal(t, 1, s.Pending())
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable | FlagResent, Seq: 2, Message: 5, Acks: []uint32{1}})))
	require.Zero(t, s.Pending())
}

func TestPingPong(t *testing.T) {
	p := newPair(t, Config{ResendLimit: -1}, Config{}, 20*ms, 0, 1)
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateEstablished })
	opened := p.Now // A's circuit opened on B's PacketAck
	require.Equal(t, t0.Add(140*ms), opened, "hello at 0, B's PacketAck at 20+100 ms, 20 ms on the way")
	p.Advance(opened.Add(5*time.Second - time.Microsecond))
	p.AB.Log, p.BA.Log = nil, nil
	p.Advance(opened.Add(5*time.Second + 40*ms))
	// A: StartPingCheck seq 3 (seq 2 answered B's ping at 5.04 s),
	// PingID 0, OldestUnacked 3: its own number, nothing is unacked. B
	// answers at once with its seq 3.
	require.Equal(t, []string{"000000000300" + "01" + "00" + "03000000"}, enginetest.Hexes(p.AB.Log))
	require.Equal(t, []string{"0000000003000200"}, enginetest.Hexes(p.BA.Log))
	st := p.A.Stats()
	require.Equal(t, 100*ms, st.SRTT, "the first sample, 40 ms, replaces the initial 1 s, within 100 ms..2 s")
	require.Equal(t, time.Second, st.RTO, "5 × 100 ms, raised to RTOMin")

	// OldestUnacked names the oldest unacknowledged reliable datagram.
	p.AB.Cut = true
	require.NoError(t, p.A.Send([]byte("x"), rel))
	require.NoError(t, p.A.Send([]byte("y"), rel))
	p.Advance(p.Now.Add(time.Millisecond))
	p.AB.Log = nil
	p.Advance(opened.Add(10 * time.Second))
	var pings []string
	for _, b := range p.AB.Log {
		var pk Packet
		require.NoError(t, ParsePacket(b, &pk, nil))
		if pk.Message == StartPingCheck {
			pings = append(pings, hex.EncodeToString(b))
		}
	}
	require.Equal(t, []string{"000000000700" + "01" + "01" + "04000000"}, pings, "seq 7, PingID 1, OldestUnacked 4")

	// Lost pings count: the answer to ping 1 arrives after ping 2 went
	// out, and the sample is one interval plus the time since ping 2.
	p.Advance(opened.Add(15 * time.Second))
	require.Equal(t, uint8(2), p.A.pingID)
	require.Equal(t, 2, p.A.pingsOut)
	before := p.A.avgPing
	require.NoError(t, p.A.HandleDatagram(p.Now.Add(100*ms), encode(Packet{Seq: 100, Message: CompletePingCheck, Body: []byte{1}})))
	sample := 5*time.Second + 100*ms
	require.Equal(t, min((4*max(sample, before)+sample)/5, 2*time.Second), p.A.avgPing)
	require.Equal(t, 1, p.A.pingsOut)
	// A repeated or unknown answer is ignored.
	require.NoError(t, p.A.HandleDatagram(p.Now.Add(200*ms), encode(Packet{Seq: 101, Message: CompletePingCheck, Body: []byte{1}})))
	require.NoError(t, p.A.HandleDatagram(p.Now.Add(200*ms), encode(Packet{Seq: 102, Message: CompletePingCheck, Body: []byte{9}})))
	require.Equal(t, 2*time.Second, p.A.avgPing)
	require.Equal(t, 10*time.Second, p.A.Stats().RTO, "5 × 2 s")
}

// TestAveragedPing pins the viewer's averaged ping (secondlife/viewer at
// d6d453b, indra/llmessage/llcircuit.cpp, LLCircuitData::setPingDelay:
// avg = max(ping, avg), then avg = (1 − α)·avg + α·ping with
// LL_AVERAGED_PING_ALPHA = 0.2, clamped to [LL_AVERAGED_PING_MIN,
// LL_AVERAGED_PING_MAX] = [100, 2000] ms, llcircuit.h), the first sample
// replacing the initial value (package doc). A sample below the average
// moves it by a fifth of the difference; one above raises it to the
// sample. The resend timeout is 5 × the average within [1 s, 10 s].
func TestAveragedPing(t *testing.T) {
	s := openServer(t)
	for i, c := range []struct {
		rtt, avg time.Duration
	}{
		{500 * ms, 500 * ms},   // the first sample
		{200 * ms, 440 * ms},   // 0.8·500 + 0.2·200
		{100 * ms, 372 * ms},   // 0.8·440 + 0.2·100
		{800 * ms, 800 * ms},   // max(800, 372) = 800
		{50 * ms, 650 * ms},    // 0.8·800 + 0.2·50
		{3000 * ms, 2000 * ms}, // 3 s, clamped to 2 s
	} {
		at := t0.Add(time.Duration(i+1) * DefaultKeepAlive)
		var ping string
		for out := poll(t, s, at); out != ""; out = poll(t, s, at) {
			if out[12:14] == "01" { // StartPingCheck
				ping = out
			}
		}
		require.NotEmpty(t, ping, "ping %d due", i)
		require.Equal(t, fmt.Sprintf("%02x", i), ping[14:16], "PingID %d", i)
		require.NoError(t, s.HandleDatagram(at.Add(c.rtt), encode(Packet{Seq: uint32(2 + i), Message: CompletePingCheck, Body: []byte{byte(i)}})))
		st := s.Stats()
		require.Equal(t, c.avg, st.SRTT, "sample %d: %v", i, c.rtt)
		require.Equal(t, max(time.Second, 5*c.avg), st.RTO)
	}
}

func TestPingFloorFromOldestUnacked(t *testing.T) {
	s := openServer(t)
	// Seqs 2..65547 arrive: 2..11 leave the bitmap.
	for seq := uint32(2); seq < 2+windowBits+10; seq++ {
		require.NoError(t, s.HandleDatagram(t0, encode(Packet{Seq: seq, Message: 5})))
		drain(s)
	}
	old := encode(Packet{Flags: FlagReliable | FlagResent, Seq: 3, Message: 5, Body: []byte("old")})
	require.NoError(t, s.HandleDatagram(t0, old))
	require.Equal(t, []string{"old"}, drain(s), "beyond the window and no floor: taken as new (the documented bound)")
	// The peer's OldestUnacked says everything before 10 was received.
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Seq: 2 + windowBits + 10, Message: StartPingCheck, Body: []byte{0, 10, 0, 0, 0}})))
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable | FlagResent, Seq: 4, Message: 5, Body: []byte("dup")})))
	require.Empty(t, drain(s), "before the floor: duplicate")
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable | FlagResent, Seq: 11, Message: 5, Body: []byte("new")})))
	require.Equal(t, []string{"new"}, drain(s), "after the floor, beyond the window: new")
	require.Equal(t, "100000000100"+"0200"+"00000001"+"00000003"+"00000004"+"0000000b"+"04", poll(t, s, t0),
		"the ping is answered at once, with the owed acks (duplicates too)")
}

func TestIdleTimeout(t *testing.T) {
	s := openServer(t)
	var pings int
	for s.State() != engine.StateClosed {
		if out := poll(t, s, s.Deadline()); len(out) > 12 && out[12:14] == "01" {
			pings++
		}
	}
	require.ErrorIs(t, s.Err(), engine.ErrIdleTimeout)
	require.Equal(t, t0.Add(DefaultIdleTimeout), s.now)
	require.Equal(t, 19, pings, "every 5 s until 100 s (the 20th is due with the timeout)")

	// A datagram from the peer restarts the timer.
	s = openServer(t, Config{IdleTimeout: 10 * time.Second, KeepAlive: -1})
	require.Equal(t, t0.Add(100*ms), s.Deadline())
	poll(t, s, t0.Add(100*ms))
	require.Equal(t, t0.Add(10*time.Second), s.Deadline())
	require.NoError(t, s.HandleDatagram(t0.Add(8*time.Second), encode(Packet{Seq: 2, Message: CompletePingCheck, Body: []byte{0}})))
	require.Equal(t, t0.Add(18*time.Second), s.Deadline())
	require.Empty(t, poll(t, s, t0.Add(18*time.Second)))
	require.ErrorIs(t, s.Err(), engine.ErrIdleTimeout)
}

func TestHandshakeTimeout(t *testing.T) {
	s := newSession(t, t0, Config{Accept: true, HandshakeTimeout: 3 * time.Second})
	require.Equal(t, t0.Add(3*time.Second), s.Deadline())
	require.Empty(t, poll(t, s, t0.Add(3*time.Second)))
	require.ErrorIs(t, s.Err(), engine.ErrHandshakeTimeout)
	require.ErrorIs(t, s.HandleDatagram(t0, unhex(t, helloHex)), engine.ErrClosed)
}

func TestCloseGraceful(t *testing.T) {
	p := newPair(t, Config{}, Config{}, 10*ms, 0, 1)
	for i := range 3 {
		require.NoError(t, p.A.Send([]byte{byte('a' + i)}, rel))
	}
	require.NoError(t, p.B.Send([]byte("from b"), rel))
	p.A.Close(p.Now)
	require.Equal(t, engine.StateClosing, p.A.State())
	require.ErrorIs(t, p.A.Send(nil, rel), engine.ErrClosed)
	var gotB []string
	p.RunUntil(1000, func() bool {
		gotB = append(gotB, drain(p.B)...)
		return p.A.State() == engine.StateClosed && p.B.State() == engine.StateClosed
	})
	require.Equal(t, []string{"a", "b", "c"}, gotB)
	require.NoError(t, p.A.Err())
	require.NoError(t, p.B.Err(), "B had nothing pending")
	require.Equal(t, []string{"from b"}, drain(p.A))
	var closes []time.Duration
	last := p.AB.Log[len(p.AB.Log)-2:]
	for _, b := range last {
		var pk Packet
		require.NoError(t, ParsePacket(b, &pk, nil))
		require.Equal(t, CloseCircuit, pk.Message)
		require.Empty(t, pk.Body)
		require.Zero(t, pk.Flags&FlagReliable)
		closes = append(closes, 0)
	}
	require.Len(t, closes, 2, "sent twice")
	require.Equal(t, "0000000005"+"00fffffffd", hex.EncodeToString(last[0]))
	require.Equal(t, "0000000006"+"00fffffffd", hex.EncodeToString(last[1]))
}

// TestPeerClosesWithPending: the peer's CloseCircuit is first challenged
// with a StartPingCheck; unanswered for two round trips (plus 10 ms), it
// ends the session, with ErrPeerClosed since a message was pending.
func TestPeerClosesWithPending(t *testing.T) {
	s := openServer(t)
	require.NoError(t, s.Send([]byte("r"), rel))
	poll(t, s, t0)
	require.NoError(t, s.HandleDatagram(t0, unhex(t, "000000000000fffffffd")), "vector P11, seq 0")
	require.Equal(t, engine.StateEstablished, s.State())
	var pk Packet
	require.NoError(t, ParsePacket(unhex(t, poll(t, s, t0)), &pk, nil))
	require.Equal(t, StartPingCheck, pk.Message, "the challenge")
	until := t0.Add(max(2*s.roundTrip()+challengeSlack, engine.ChallengeMin))
	requireProbes(t, s, t0, until)
	require.Empty(t, poll(t, s, until))
	require.Equal(t, engine.StateClosed, s.State())
	require.ErrorIs(t, s.Err(), engine.ErrPeerClosed)
	require.Empty(t, poll(t, s, t0))
	require.True(t, s.Deadline().IsZero())
	require.ErrorIs(t, s.HandleDatagram(t0, unhex(t, helloHex)), engine.ErrClosed)
	s.Close(t0)
	require.Equal(t, engine.StateClosed, s.State())
}

// requireProbes checks that s, which sent its first StartPingCheck of a
// challenge at start, sends engine.ChallengeProbes − 1 more evenly until
// the challenge runs out at until, and nothing else; it returns their ping
// IDs.
func requireProbes(t *testing.T, s *Session, start, until time.Time) (ids []uint8) {
	t.Helper()
	for i := 1; i < engine.ChallengeProbes; i++ {
		next := start.Add(time.Duration(i) * until.Sub(start) / engine.ChallengeProbes)
		require.Equal(t, next, s.Deadline(), "probe %d", i+1)
		var pk Packet
		require.NoError(t, ParsePacket(unhex(t, poll(t, s, next)), &pk, nil))
		require.Equal(t, StartPingCheck, pk.Message, "probe %d", i+1)
		require.Empty(t, poll(t, s, next))
		ids = append(ids, pk.Body[0])
	}
	require.Equal(t, until, s.Deadline())
	return ids
}

// TestChallengeReprobes: the challenge of a CloseCircuit repeats its
// StartPingCheck; the live circuit's answer to a later one, the first
// having been lost, refuses the close all the same.
func TestChallengeReprobes(t *testing.T) {
	s := openServer(t)
	require.NoError(t, s.HandleDatagram(t0, unhex(t, "000000000000fffffffd")), "vector P11")
	var pk Packet
	require.NoError(t, ParsePacket(unhex(t, poll(t, s, t0)), &pk, nil))
	require.Equal(t, StartPingCheck, pk.Message)
	first := pk.Body[0]
	next := s.Deadline()
	require.NoError(t, ParsePacket(unhex(t, poll(t, s, next)), &pk, nil))
	require.Equal(t, StartPingCheck, pk.Message)
	require.Equal(t, first+1, pk.Body[0])
	require.NoError(t, s.HandleDatagram(next, encode(Packet{Seq: 2, Message: CompletePingCheck, Body: []byte{first + 1}})))
	require.Equal(t, uint64(1), s.Stats().SpoofsRefused)
	require.False(t, s.chal.Running())
	require.Equal(t, next.Add(DefaultKeepAlive), s.Deadline(), "back to the keepalive")
	require.Equal(t, engine.StateEstablished, s.State())
}

// TestSpoofedCloseCircuit: a CloseCircuit whose challenge the live
// circuit answers changes nothing.
func TestSpoofedCloseCircuit(t *testing.T) {
	p := newPair(t, Config{}, Config{}, 10*ms, 0, 1)
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished })
	spoof := AppendPacket(nil, &Packet{Seq: 999, Message: CloseCircuit})
	require.NoError(t, p.B.HandleDatagram(p.Now, spoof))
	p.RunUntil(1000, func() bool { return p.B.Stats().SpoofsRefused == 1 })
	p.Now = p.Now.Add(time.Second)
	p.RunUntil(1000, func() bool { return true })
	require.Equal(t, engine.StateEstablished, p.B.State())
	require.Equal(t, uint64(1), p.B.Stats().Challenges)
	require.NoError(t, p.A.Send([]byte("still"), rel))
	var got []string
	p.RunUntil(1000, func() bool { got = append(got, drain(p.B)...); return len(got) > 0 })
	require.Equal(t, []string{"still"}, got)
}

func TestCloseLingerTimeout(t *testing.T) {
	s := openServer(t, Config{Linger: 2 * time.Second})
	require.NoError(t, s.Send([]byte("lost"), rel))
	require.NotEmpty(t, poll(t, s, t0))
	s.Close(t0)
	require.Equal(t, t0.Add(2*time.Second), s.Deadline())
	require.Equal(t, "0000000002"+"00fffffffd", poll(t, s, t0.Add(2*time.Second)), "one last CloseCircuit")
	require.Equal(t, engine.StateClosed, s.State())
	require.ErrorIs(t, s.Err(), engine.ErrLingerTimeout)
	require.Equal(t, 1, s.Pending())
}

func TestCloseBeforeCircuit(t *testing.T) {
	s := newSession(t, t0, Config{Accept: true})
	s.Close(t0)
	require.Equal(t, engine.StateClosed, s.State())
	require.NoError(t, s.Err())

	c := newSession(t, t0, Config{Client: true})
	c.Close(t0)
	require.Equal(t, engine.StateClosed, c.State(), "nothing sent yet")

	// A client whose UseCircuitCode went out tells the server.
	c = newSession(t, t0, Config{Client: true, Circuit: testCircuit})
	require.Equal(t, helloHex, poll(t, c, t0))
	c.Close(t0)
	require.Equal(t, engine.StateClosing, c.State())
	require.Equal(t, "0000000002"+"00fffffffd", poll(t, c, t0))
	require.Equal(t, t0.Add(time.Second), c.Deadline(), "second copy one averaged ping later")
	require.Equal(t, "0000000003"+"00fffffffd", poll(t, c, t0.Add(time.Second)))
	require.Equal(t, engine.StateClosed, c.State())
	require.NoError(t, c.Err())
}

// otherHello is a UseCircuitCode with another circuit code, seq 1.
func otherHello(t *testing.T) []byte {
	c := testCircuit
	c.Code = 999
	return encode(Packet{Flags: FlagReliable, Seq: 1, Message: UseCircuitCode, Body: appendCircuit(nil, c)})
}

// restartUnanswered hands s otherHello at t0, checks that it is
// challenged with a StartPingCheck rather than taken, and lets the
// challenge run out unanswered; it returns when it ran out.
func restartUnanswered(t *testing.T, s *Session) time.Time {
	t.Helper()
	require.NoError(t, s.HandleDatagram(t0, otherHello(t)))
	c, _ := s.Circuit()
	require.Equal(t, testCircuit, c, "not taken before the challenge")
	require.Equal(t, uint64(1), s.Stats().Challenges)
	pinged := false
	for h := poll(t, s, t0); h != ""; h = poll(t, s, t0) {
		var pk Packet
		require.NoError(t, ParsePacket(unhex(t, h), &pk, nil))
		pinged = pinged || pk.Message == StartPingCheck
	}
	require.True(t, pinged, "the challenge")
	until := s.chal.Until
	require.Equal(t, t0.Add(max(2*s.roundTrip()+challengeSlack, engine.ChallengeMin)), until)
	for poll(t, s, until) != "" {
	}
	require.Equal(t, engine.StateEstablished, s.State())
	return until
}

func TestPeerRestartRejected(t *testing.T) {
	s := openServer(t, Config{RejectNewPeerSession: true})
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable, Seq: 2, Message: 5, Body: []byte("old")})))
	now := restartUnanswered(t, s)
	before, stats := snapshot(s), s.Counters
	require.ErrorIs(t, s.HandleDatagram(now, otherHello(t)), engine.ErrPeerRestarted)
	requireUnchanged(t, before, s, stats)
	// The same circuit again is a duplicate, acknowledged.
	require.NoError(t, s.HandleDatagram(now, unhex(t, helloHex)))
	require.Equal(t, uint64(1), s.Stats().Duplicates)
	c, _ := s.Circuit()
	require.Equal(t, testCircuit, c)
}

func TestPeerRestartAdopted(t *testing.T) {
	s := openServer(t)
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable, Seq: 2, Message: 5, Body: []byte("old")})))
	require.NoError(t, s.Send([]byte("pending"), rel))
	now := restartUnanswered(t, s) // acks 1 and 2 went to the old peer
	require.NoError(t, s.HandleDatagram(now, otherHello(t)))
	require.Equal(t, uint64(1), s.Stats().PeerRestarts)
	c, ok := s.Circuit()
	require.True(t, ok)
	require.Equal(t, uint32(999), c.Code)
	require.NoError(t, s.HandleDatagram(now, encode(Packet{Flags: FlagReliable, Seq: 2, Message: 5, Body: []byte("new")})))
	require.Equal(t, []string{"old", "new"}, drain(s), "the new peer's seq 2 is not a duplicate")
}

// TestSpoofedRestart: a reliable UseCircuitCode with another circuit from
// the client's address, whose challenge the live client answers, changes
// nothing: the circuit stays, and so do its sequence numbers.
func TestSpoofedRestart(t *testing.T) {
	p := newPair(t, Config{}, Config{RejectNewPeerSession: true}, 10*ms, 0, 1)
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished })
	require.NoError(t, p.B.HandleDatagram(p.Now, otherHello(t)), "challenged, not refused")
	p.RunUntil(1000, func() bool { return p.B.Stats().SpoofsRefused == 1 })
	require.NoError(t, p.B.HandleDatagram(p.Now, otherHello(t)), "challenged again")
	p.RunUntil(1000, func() bool { return p.B.Stats().SpoofsRefused == 2 })
	require.Zero(t, p.B.Stats().PeerRestarts)
	require.NoError(t, p.A.Send([]byte("still"), rel))
	var got []string
	p.RunUntil(1000, func() bool { got = append(got, drain(p.B)...); return len(got) > 0 })
	require.Equal(t, []string{"still"}, got)
	require.Empty(t, p.Errs)
}

// TestRestartedClientSilent: a client whose circuit is not open yet does
// not answer StartPingCheck, so that a restarted client does not pass for
// the live circuit it replaces when the server challenges its
// UseCircuitCode.
func TestRestartedClientSilent(t *testing.T) {
	c := newSession(t, t0, Config{Client: true, Circuit: testCircuit})
	require.Equal(t, helloHex, poll(t, c, t0))
	require.NoError(t, c.HandleDatagram(t0, encode(Packet{Seq: 1, Message: StartPingCheck, Body: []byte{0, 0, 0, 0, 0}})))
	require.Empty(t, poll(t, c, t0))
}

func TestAcceptRejectsOtherFirstDatagrams(t *testing.T) {
	s := newSession(t, t0, Config{Accept: true})
	before := snapshot(s)
	short := unhex(t, helloHex)
	short = short[:len(short)-1]
	unreliable := unhex(t, helloHex)
	unreliable[0] = 0
	v := loadVectors(t)
	var inputs [][]byte
	for _, p := range v.Packets {
		if p.Decode.NumberHex != "0xFFFF0003" {
			inputs = append(inputs, unhex(t, p.Hex))
		}
	}
	inputs = append(inputs, short, unreliable)
	for i, in := range inputs {
		require.ErrorIs(t, s.HandleDatagram(t0, in), engine.ErrRejected, "input %d", i)
	}
	requireUnchanged(t, before, s, engine.Stats{PacketsRejected: uint64(len(inputs))})
	require.Equal(t, engine.StateHandshake, s.State())
	require.Empty(t, poll(t, s, t0))
	require.NoError(t, s.HandleDatagram(t0, unhex(t, helloHex)))
	require.Equal(t, engine.StateEstablished, s.State())
	require.NoError(t, s.HandleDatagram(t0, unhex(t, v.Packets[3].Hex)), "AgentAnimation, now on the circuit")
}

func TestGarbageChangesNothing(t *testing.T) {
	s := openServer(t)
	require.NoError(t, s.Send([]byte("r"), rel))
	poll(t, s, t0)
	before, stats := snapshot(s), s.Counters
	inputs := [][]byte{
		nil,
		{0},
		unhex(t, "000000000100"),          // no message number
		unhex(t, "0000000001"+"00ff"),     // truncated Medium
		unhex(t, "0000000001"+"00ffff00"), // truncated Low
		unhex(t, "0000000001"+"0305"),     // extra header past the end
		unhex(t, "1000000001"+"000505"),   // 5 acks claimed, none there
		unhex(t, "8000000001"+"00ff"),     // zerocoded number truncated
		unhex(t, "8000000001"+"0005"+"00000000000000000000000000000000000000000000000000000000000000000000"), // expands beyond 8192
		make([]byte, MaxDecoded+1),
	}
	for i, in := range inputs {
		require.ErrorIs(t, s.HandleDatagram(t0, in), engine.ErrMalformed, "input %d", i)
		stats.PacketsRejected++
	}
	requireUnchanged(t, before, s, stats)
}

func TestSequenceWrap(t *testing.T) {
	c := newSession(t, t0, Config{Client: true, Circuit: testCircuit, InitialSeq: SeqWrap - 1})
	require.Equal(t, "4000ffffff00ffff0003", poll(t, c, t0)[:20])
	require.NoError(t, c.HandleDatagram(t0, encode(Packet{Seq: 1, Message: PacketAck, Body: []byte{1, 0xff, 0xff, 0xff, 0}})))
	require.Equal(t, engine.StateEstablished, c.State())
	require.NoError(t, c.Send(nil, engine.SendOptions{MessageNumber: 7}))
	require.Equal(t, "40000000000007", poll(t, c, t0), "0xFFFFFF wraps to 0")

	// Receiving: 32-bit numbers, and duplicates across the 24-bit wrap.
	s := openServer(t)
	for _, seq := range []uint32{0xFFFFFE, 0xFFFFFF, 0, 1<<30 | 5} {
		require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable, Seq: seq, Message: 5, Body: []byte{1}})))
	}
	require.Len(t, drain(s), 4)
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable, Seq: 0xFFFFFF, Message: 5})))
	require.Empty(t, drain(s), "seen before the wrap")
}

// TestRecvQueueBound: with MaxRecvQueue messages waiting for Recv, a new
// application message is refused unacknowledged, while its appended acks
// are applied and transport messages are handled; the resend is taken
// once there is room.
func TestRecvQueueBound(t *testing.T) {
	s := openServer(t)
	require.NoError(t, s.Send([]byte("r"), rel))
	require.NotEmpty(t, poll(t, s, t0), "our message, with the hello's ack appended")
	for i := range MaxRecvQueue {
		require.NoError(t, s.HandleDatagram(t0, encode(Packet{Seq: uint32(2 + i), Message: 5})))
	}
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable, Seq: 1 << 20, Message: 5, Acks: []uint32{1}})))
	require.Zero(t, s.Pending(), "the appended ack is applied")
	require.Equal(t, uint64(1), s.Stats().Refused)
	require.Equal(t, MaxRecvQueue, s.Inbox.Len())
	require.Empty(t, poll(t, s, t0.Add(100*ms)), "the refused message is not acknowledged")
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Seq: 1 << 20, Message: StartPingCheck, Body: []byte{3}})), "transport messages still pass")
	_, ok := s.Recv()
	require.True(t, ok)
	require.NoError(t, s.HandleDatagram(t0, encode(Packet{Flags: FlagReliable | FlagResent, Seq: 1 << 20, Message: 5})))
	require.Equal(t, MaxRecvQueue, s.Inbox.Len(), "the resend is taken")
	require.Equal(t, uint64(0), s.Stats().Duplicates)
}

// TestAckRTT: with Config.AckRTT the resend timeout follows RFC 6298 from
// the acks of datagrams sent once: 20 ms each way plus a 2 ms ack delay
// give an SRTT of 42 ms and an RTO of 42 + 4·21 = 126 ms; a lost datagram
// is resent after that RTO, and resent again after double it.
func TestAckRTT(t *testing.T) {
	cfg := Config{AckRTT: true, RTOMin: 10 * ms, AckDelay: 2 * ms, ResendLimit: -1}
	p := newPair(t, cfg, Config{AckDelay: 2 * ms}, 20*ms, 0, 1)
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateEstablished })
	st := p.A.Stats()
	require.Equal(t, 42*ms, st.SRTT, "the UseCircuitCode round trip: 20 + 2 + 20 ms")
	require.Equal(t, 21*ms, st.RTTVar)
	require.Equal(t, 126*ms, st.RTO)

	p.AB.Cut = true
	require.NoError(t, p.A.Send([]byte("x"), rel))
	sent := p.Now
	p.Advance(sent.Add(time.Millisecond))
	p.AB.Log = nil
	p.Advance(sent.Add(126*ms + 252*ms + time.Millisecond))
	require.Len(t, p.AB.Log, 2, "resent after 126 ms, then 252 ms later")
	require.Equal(t, 504*ms, p.A.Stats().RTO, "doubled by each resend")

	p.AB.Cut = false
	p.Advance(p.Now.Add(time.Second))
	require.Zero(t, p.A.Pending())
	require.NoError(t, p.A.Send([]byte("y"), rel))
	p.Advance(p.Now.Add(time.Second))
	require.Equal(t, 105*ms, p.A.Stats().RTO, "the ack of a fresh datagram takes the doubling back: 42 + 4·15.75 ms")
}

// TestAckRTTLongerPath: when the round trip grows past the resend timeout
// (but stays below twice it), every datagram times out once and its ack
// then arrives before a second timeout. Karn's rule forbids samples from
// those datagrams, so only the back-off of the first timeout can lengthen
// the timeout and let a fresh datagram be acknowledged in time to give a
// sample; without it every datagram is sent twice for ever.
func TestAckRTTLongerPath(t *testing.T) {
	cfg := Config{AckRTT: true, RTOMin: 10 * ms, AckDelay: 2 * ms, ResendLimit: -1, KeepAlive: -1}
	p := newPair(t, cfg, Config{AckDelay: 2 * ms, KeepAlive: -1}, 20*ms, 0, 1)
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateEstablished })
	require.Equal(t, 126*ms, p.A.Stats().RTO)
	p.AB.Delay, p.BA.Delay = 80*ms, 80*ms // 162 ms round trip
	for range 100 {
		require.NoError(t, p.A.Send([]byte("x"), rel))
		p.Advance(p.Now.Add(20 * ms))
	}
	p.Advance(p.Now.Add(time.Second))
	require.Zero(t, p.A.Pending())
	st := p.A.Stats()
	require.Less(t, st.Retransmits, uint64(10), "the timeout adapts to the longer path")
	require.Greater(t, st.RTO, 162*ms)
}

// TestSendUnknownDelivery: a Delivery value the engine does not know is
// refused, not sent unreliably.
func TestSendUnknownDelivery(t *testing.T) {
	s := openServer(t)
	for _, d := range []engine.Delivery{engine.Passive, engine.Passive + 1, 0xFF} {
		require.ErrorIs(t, s.Send([]byte("x"), engine.SendOptions{MessageNumber: 5, Delivery: d}), engine.ErrUnsupported, "%v", d)
	}
	require.Zero(t, s.Pending())
}

// TestUnreliableHelloNoRestart: an unreliable UseCircuitCode cannot open a
// circuit (the Accept rule), so it cannot announce a restarted peer
// either: it neither ends nor resets the circuit.
func TestUnreliableHelloNoRestart(t *testing.T) {
	c := testCircuit
	c.Code = 999
	hello := encode(Packet{Seq: 7, Message: UseCircuitCode, Body: appendCircuit(nil, c)})
	for _, reject := range []bool{true, false} {
		s := openServer(t, Config{RejectNewPeerSession: reject})
		require.NoError(t, s.HandleDatagram(t0, hello))
		require.Zero(t, s.Stats().PeerRestarts)
		got, _ := s.Circuit()
		require.Equal(t, testCircuit, got)
		require.NoError(t, s.HandleDatagram(t0, unhex(t, helloHex)))
		require.Equal(t, uint64(1), s.Stats().Duplicates, "the window was not reset")
	}
}

// TestAckRTTCloseSpacing: with Config.AckRTT the two CloseCircuit copies
// are one SRTT apart, not one averaged ping (1 s before any ping).
func TestAckRTTCloseSpacing(t *testing.T) {
	cfg := Config{AckRTT: true, RTOMin: 10 * ms, AckDelay: 2 * ms}
	p := newPair(t, cfg, Config{AckDelay: 2 * ms}, 20*ms, 0, 1)
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateEstablished })
	start := p.Now
	p.A.Close(start)
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateClosed })
	require.NoError(t, p.A.Err())
	require.Equal(t, 42*ms, p.Now.Sub(start), "second copy one SRTT (42 ms) after the first")
}

// TestLateHelloOfReplacedCircuit: after a restart has been adopted, a late
// copy of the old client's UseCircuitCode is refused instead of switching
// the session back to the peer that is gone.
func TestLateHelloOfReplacedCircuit(t *testing.T) {
	s := openServer(t, Config{NoChallenge: true})
	require.NoError(t, s.HandleDatagram(t0, otherHello(t)))
	require.Equal(t, uint64(1), s.Stats().PeerRestarts)
	before, stats := snapshot(s), s.Counters
	late := unhex(t, helloHex)
	late[0] |= FlagResent
	require.ErrorIs(t, s.HandleDatagram(t0, late), engine.ErrRejected)
	stats.PacketsRejected++
	requireUnchanged(t, before, s, stats)
	c, _ := s.Circuit()
	require.Equal(t, uint32(999), c.Code)
}

// TestForgedSeqDoesNotShadow: a datagram forged with the sequence number
// the client uses next, and taken by the server, makes the client's
// genuine datagram a duplicate: dropped, after which nothing resends it.
// With Config.DeliverDuplicates (rudp streams) the genuine one is
// delivered all the same.
func TestForgedSeqDoesNotShadow(t *testing.T) {
	for _, deliver := range []bool{false, true} {
		p := newPair(t, Config{}, Config{DeliverDuplicates: deliver}, 10*ms, 0, 1)
		p.RunUntil(100, func() bool { return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished })
		forged := encode(Packet{Flags: FlagReliable, Seq: p.A.nextSeq, Message: 5, Body: []byte("forged")})
		require.NoError(t, p.B.HandleDatagram(p.Now, forged))
		require.NoError(t, p.A.Send([]byte("genuine"), rel))
		p.RunUntil(1000, func() bool { return p.A.Pending() == 0 })
		want := []string{"forged"}
		if deliver {
			want = append(want, "genuine")
		}
		require.Equal(t, want, drain(p.B), "DeliverDuplicates %v", deliver)
	}
}

// TestRepeatAcks: with Config.RepeatAcks each PacketAck carries the acks
// of the previous one after its own, so one lost PacketAck costs no
// resends, and owed acks go at once from 125 on, so that both always fit.
// Without it every ack goes once (the viewer).
func TestRepeatAcks(t *testing.T) {
	reliable := func(s *Session, now time.Time, seqs ...uint32) {
		t.Helper()
		for _, seq := range seqs {
			require.NoError(t, s.HandleDatagram(now, encode(Packet{Flags: FlagReliable, Seq: seq, Message: 5})))
		}
	}
	// ids returns the IDs of the PacketAck s sends at now.
	ids := func(s *Session, now time.Time) []uint32 {
		t.Helper()
		var p Packet
		require.NoError(t, ParsePacket(unhex(t, poll(t, s, now)), &p, nil))
		require.Equal(t, PacketAck, p.Message)
		require.Len(t, p.Body, 1+4*int(p.Body[0]))
		var out []uint32
		for i := range int(p.Body[0]) {
			out = append(out, binary.LittleEndian.Uint32(p.Body[1+4*i:]))
		}
		return out
	}
	for _, repeat := range []bool{false, true} {
		s := openServer(t, Config{RepeatAcks: repeat})
		now := t0.Add(time.Second)
		reliable(s, now, 2, 3)
		require.Equal(t, []uint32{1, 2, 3}, ids(s, now.Add(100*ms)))
		reliable(s, now.Add(200*ms), 4)
		second := ids(s, now.Add(300*ms))
		reliable(s, now.Add(400*ms), 5)
		third := ids(s, now.Add(500*ms))
		if !repeat {
			require.Equal(t, []uint32{4}, second)
			require.Equal(t, []uint32{5}, third)
			continue
		}
		require.Equal(t, []uint32{4, 1, 2, 3}, second)
		require.Equal(t, []uint32{5, 4}, third, "each ack repeated once")

		now = now.Add(time.Second)
		for i := range 124 {
			reliable(s, now, uint32(100+i))
		}
		require.Empty(t, poll(t, s, now), "124 owed wait for AckDelay")
		reliable(s, now, 224)
		got := ids(s, now)
		require.Len(t, got, 125+1, "125 owed go at once, with the previous PacketAck's one")
		require.Equal(t, uint32(5), got[125])
		reliable(s, now, 225)
		got = ids(s, now.Add(100*ms))
		require.Len(t, got, 1+125, "the next carries all 125 again")
		require.Equal(t, []uint32{225, 100}, got[:2])
	}
}

// TestPingWhenQuiet: with Config.PingWhenQuiet, a session whose peer's
// StartPingChecks arrive more often than its own KeepAlive never pings;
// the peer pings once per its KeepAlive and each is answered, so an idle
// circuit carries one StartPingCheck and one CompletePingCheck per
// interval.
func TestPingWhenQuiet(t *testing.T) {
	const intervals = 20
	a := Config{KeepAlive: time.Second, PingWhenQuiet: true}
	b := Config{KeepAlive: 2 * time.Second, PingWhenQuiet: true}
	p := newPair(t, a, b, 10*time.Millisecond, 0, 1)
	p.Advance(t0.Add(time.Second))
	require.Equal(t, engine.StateEstablished, p.A.State())
	require.Equal(t, engine.StateEstablished, p.B.State())
	sentA, sentB := p.A.Stats().PacketsSent, p.B.Stats().PacketsSent
	p.Advance(p.Now.Add(intervals * time.Second))
	require.Equal(t, engine.StateEstablished, p.A.State())
	require.InDelta(t, intervals, p.A.Stats().PacketsSent-sentA, 1, "A: one StartPingCheck per interval")
	require.InDelta(t, intervals, p.B.Stats().PacketsSent-sentB, 1, "B: one CompletePingCheck per ping, no ping")
}
