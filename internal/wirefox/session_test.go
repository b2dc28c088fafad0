package wirefox

import (
	"encoding/hex"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// The vectors' bytes (testdata/wirefox.json) that the sessions below
// reproduce.
const (
	w1 = "8000000000001e00000000000000001300000257495245464f58003efe7d4f2231ac250100"
	w2 = "8000000000001e00000000000000001300000257495245464f5800777db20b2616d3220200"
	w3 = "8000000001001d00000000000000001200000257495245464f58003efe7d4f2231ac2504"
	w4 = "c000000000004800000000000101000000000009000010000000001c232a3100000000010101000000010009000010000000011d242b3200000000020101000000020009000010000000021e252c33"
	// w7a is the client's DISCONNECT_REQUEST, w7b the server's
	// DISCONNECT_ACK (the capture "ordered", #6 and #7).
	w7a = "c000000001000c000000000301000001000003"
	w7b = "8000000001000c000000000000000001000004"
)

// capturePayload is the application payload of the captures: a 4-byte
// index, then byte j = index + 28 + 7j.
func capturePayload(i, n int) []byte {
	b := []byte{16, 0, 0, 0, byte(i)}
	for j := range n - 4 {
		b = append(b, byte(i+28+7*j))
	}
	return b
}

// handshake runs the three-way handshake of W1..W3 between a new client
// and server, checking every byte.
func handshake(t *testing.T) (c, s *Session) {
	c = fromZero(newSession(t, t0, Config{Client: true, PeerID: clientID, Channels: testChannels}))
	s = newSession(t, t0, Config{Accept: true, PeerID: serverID, Channels: testChannels})
	s.nextDgram = 1<<32 - 1 // the probe, then the captures' 0 (proveFake)
	require.Equal(t, w1, poll(t, c, t0))
	require.Equal(t, "", poll(t, c, t0))
	require.NoError(t, s.HandleDatagram(t0, unhex(t, w1)))
	require.Equal(t, w2, poll(t, s, t0))
	require.NoError(t, c.HandleDatagram(t0, unhex(t, w2)))
	require.Equal(t, engine.StateEstablished, c.State())
	require.Equal(t, w3, poll(t, c, t0))
	require.Equal(t, engine.StateHandshake, s.State())
	require.NoError(t, s.HandleDatagram(t0, unhex(t, w3)))
	proveFake(t, s, t0)
	return c, s
}

func TestHandshakeDataClose(t *testing.T) {
	c, s := handshake(t)
	for i := range 3 {
		require.NoError(t, c.Send(capturePayload(i, 8), engine.SendOptions{Channel: 1}))
	}
	require.Equal(t, w4, poll(t, c, t0))
	require.Equal(t, "", poll(t, c, t0))
	require.NoError(t, s.HandleDatagram(t0, unhex(t, w4)))
	require.Len(t, drain(s), 3)
	require.Equal(t, "", poll(t, s, t0.Add(9*ms)), "the ACK waits 10 ms")
	require.Equal(t, "60000000000000000000", poll(t, s, t0.Add(10*ms)))
	require.NoError(t, c.HandleDatagram(t0.Add(20*ms), unhex(t, "60000000000000000000")))
	require.Zero(t, c.Pending())
	require.Equal(t, 20*ms, c.Stats().SRTT)

	c.Close(t0.Add(20 * ms))
	require.Equal(t, w7a, poll(t, c, t0.Add(20*ms)))
	require.NoError(t, s.HandleDatagram(t0.Add(20*ms), unhex(t, w7a)))
	require.Equal(t, w7b, poll(t, s, t0.Add(20*ms)))
	require.Equal(t, engine.StateClosed, s.State())
	require.NoError(t, s.Err())
	require.NoError(t, c.HandleDatagram(t0.Add(30*ms), unhex(t, w7b)))
	require.Equal(t, engine.StateClosed, c.State())
	require.NoError(t, c.Err())
}

func TestHandshakeAttempts(t *testing.T) {
	c := newSession(t, t0, Config{Client: true, PeerID: clientID})
	for i := range HandshakeAttempts {
		at := t0.Add(HandshakeInterval * time.Duration(i))
		require.Equal(t, at, c.Deadline())
		h := Handshake{PeerID: clientID, Op: OpInitialClient, Data: []byte{0}}
		require.Equal(t, hex.EncodeToString(AppendOOB(nil, uint32(i), AppendHandshake(nil, &h))), poll(t, c, at))
	}
	end := t0.Add(HandshakeInterval * HandshakeAttempts)
	require.Equal(t, end, c.Deadline())
	require.Equal(t, "", poll(t, c, end))
	require.ErrorIs(t, c.Err(), engine.ErrHandshakeTimeout)
}

func TestConnectErrors(t *testing.T) {
	for result, want := range map[byte]error{
		ResultNoFreeSlots:          ErrNoFreeSlots,
		ResultAlreadyConnected:     ErrAlreadyConnected,
		ResultIncompatibleVersion:  engine.ErrIncompatible,
		ResultIncompatibleSecurity: engine.ErrIncompatible,
		ResultBanned:               ErrConnectRefused,
	} {
		c := newSession(t, t0, Config{Client: true, PeerID: clientID})
		poll(t, c, t0)
		h := Handshake{PeerID: serverID, Op: OpError, Data: []byte{result}}
		require.NoError(t, c.HandleDatagram(t0, AppendOOB(nil, 0, AppendHandshake(nil, &h))))
		require.Equal(t, engine.StateClosed, c.State())
		require.ErrorIs(t, c.Err(), want)
	}
}

func TestServerRefusesVersionAndSecurity(t *testing.T) {
	for _, c := range []struct {
		version, crypto, result byte
	}{{1, 0, ResultIncompatibleVersion}, {0, 0x80, ResultIncompatibleSecurity}} {
		s := newSession(t, t0, Config{Accept: true, PeerID: serverID})
		h := Handshake{Version: c.version, PeerID: clientID, Op: OpInitialClient, Data: []byte{c.crypto}}
		require.NoError(t, s.HandleDatagram(t0, AppendOOB(nil, 0, AppendHandshake(nil, &h))))
		want := Handshake{PeerID: serverID, Op: OpError, Data: []byte{c.result}}
		require.Equal(t, hex.EncodeToString(AppendOOB(nil, 0, AppendHandshake(nil, &want))), poll(t, s, t0))
		require.Equal(t, engine.StateClosed, s.State())
		require.ErrorIs(t, s.Err(), engine.ErrIncompatible)
	}
}

// TestLostUnencryptedAck: the server repeats INITIAL_SERVER; the client,
// established, sends UNENCRYPTED_ACK again (docs/protocols/wirefox.md §5).
func TestLostUnencryptedAck(t *testing.T) {
	c := newSession(t, t0, Config{Client: true, PeerID: clientID})
	s := newSession(t, t0, Config{Accept: true, PeerID: serverID})
	require.NoError(t, s.HandleDatagram(t0, unhex(t, poll(t, c, t0))))
	require.NoError(t, c.HandleDatagram(t0, unhex(t, poll(t, s, t0))))
	poll(t, c, t0) // UNENCRYPTED_ACK, lost
	at := t0.Add(HandshakeInterval)
	require.Equal(t, at, s.Deadline())
	again := "8000000001" + w2[10:] // the out-of-band datagram ID moved on
	require.Equal(t, again, poll(t, s, at))
	require.NoError(t, c.HandleDatagram(at, unhex(t, again)))
	ack := "8000000002001d00000000000000001200000257495245464f58003efe7d4f2231ac2504"
	require.Equal(t, ack, poll(t, c, at))
	require.NoError(t, s.HandleDatagram(at, unhex(t, ack)))
	prove(t, c, s, at)
}

// TestLNKStandsForUnencryptedAck: a connected datagram from the client
// completes the server's handshake (docs/protocols/wirefox.md §5).
func TestLNKStandsForUnencryptedAck(t *testing.T) {
	c := newSession(t, t0, Config{Client: true, PeerID: clientID, Channels: testChannels})
	s := newSession(t, t0, Config{Accept: true, PeerID: serverID, Channels: testChannels})
	require.NoError(t, s.HandleDatagram(t0, unhex(t, poll(t, c, t0))))
	require.NoError(t, c.HandleDatagram(t0, unhex(t, poll(t, s, t0))))
	poll(t, c, t0) // UNENCRYPTED_ACK, lost
	for i := range 3 {
		require.NoError(t, c.Send(capturePayload(i, 8), engine.SendOptions{Channel: 1}))
	}
	require.NoError(t, s.HandleDatagram(t0, unhex(t, poll(t, c, t0))))
	require.Equal(t, phaseProof, s.phase)
	require.Empty(t, drain(s), "dropped until the client's address is proven")
	prove(t, c, s, t0)
	now := c.Deadline() // the client's timeout sends its data again
	require.NoError(t, s.HandleDatagram(now, unhex(t, poll(t, c, now))))
	require.Len(t, drain(s), 3)
}

func TestRejects(t *testing.T) {
	s := newSession(t, t0, Config{Accept: true, PeerID: serverID})
	require.ErrorIs(t, s.HandleDatagram(t0, unhex(t, w4)), engine.ErrRejected)
	require.ErrorIs(t, s.HandleDatagram(t0, unhex(t, w3)), engine.ErrRejected)
	require.ErrorIs(t, s.HandleDatagram(t0, []byte{0x80}), engine.ErrMalformed)
	require.ErrorIs(t, s.HandleDatagram(t0, make([]byte, RecvBuffer+1)), engine.ErrMalformed)
	require.Equal(t, uint64(4), s.Stats().PacketsRejected)
	require.Equal(t, engine.StateHandshake, s.State())
	// A packet on a channel the table lacks is refused whole.
	c, s := handshake(t)
	_ = c
	s2 := newSession(t, t0, Config{Client: true, PeerID: clientID})
	_ = s2
	require.ErrorIs(t, s.HandleDatagram(t0, unhex(t, "c000000000000f00000000000103000000000001000010")), engine.ErrRejected)
	require.Empty(t, drain(s))
	c2 := newSession(t, t0, Config{Client: true})
	require.ErrorIs(t, c2.Send([]byte{CmdDisconnectRequest}, engine.SendOptions{}), engine.ErrUnsupported)
	require.ErrorIs(t, c2.Send([]byte{CmdUser}, engine.SendOptions{Channel: 1}), engine.ErrUnsupported)
	require.ErrorIs(t, c2.Send([]byte{CmdUser}, engine.SendOptions{Delivery: engine.Passive}), engine.ErrUnsupported)
	require.ErrorIs(t, c2.Send(nil, engine.SendOptions{}), engine.ErrEmptyMessage)
}

// TestHandshakeTimeoutConfig: with Config.HandshakeTimeout the handshake
// is repeated every 2 s past the reference's 4 attempts, and ends when
// it passes with engine.ErrHandshakeTimeout itself.
func TestHandshakeTimeoutConfig(t *testing.T) {
	const timeout = 11 * time.Second
	c := newSession(t, t0, Config{Client: true, PeerID: clientID, HandshakeTimeout: timeout})
	for i := range 6 {
		at := t0.Add(HandshakeInterval * time.Duration(i))
		require.Equal(t, at, c.Deadline())
		require.NotEmpty(t, poll(t, c, at), "attempt %d", i+1)
	}
	require.Equal(t, t0.Add(timeout), c.Deadline())
	require.Equal(t, "", poll(t, c, t0.Add(timeout)))
	require.Equal(t, engine.ErrHandshakeTimeout, c.Err())
}

// TestKeepAliveSentOnce: the keepalive is a data datagram without
// packets, its data section two zero bytes, sent once per KeepAlive
// without hearing from the peer, never resent, which the peer
// acknowledges.
func TestKeepAliveSentOnce(t *testing.T) {
	cfg := Config{KeepAlive: time.Second, IdleTimeout: -1}
	p := newPair(t, cfg, cfg, 15*ms, 0, 1)
	connect(t, p)
	p.Advance(p.Now.Add(100 * ms))
	p.BA.Cut = true // the server's keepalives and acks are lost
	from := len(p.AB.Log)
	p.Advance(p.Now.Add(3*time.Second + 500*ms))
	var pongs int
	for _, b := range p.AB.Log[from:] {
		var d Datagram
		require.NoError(t, ParseDatagram(b, &d))
		if d.Flags&FlagDAT == 0 {
			continue // acks of the server's keepalives
		}
		require.Equal(t, fmt.Sprintf("c0%08x00020000", d.ID), hex.EncodeToString(b))
		pongs++
	}
	require.Equal(t, 3, pongs)
	require.Zero(t, p.A.Stats().Retransmits)
	p.BA.Cut = false
	acks := p.B.Stats().PacketsSent
	p.Advance(p.Now.Add(time.Second))
	require.Greater(t, p.B.Stats().PacketsSent, acks, "the server acknowledges")
}

// TestRepeatAcks: with Config.RepeatAcks an ack-only datagram carries the
// previous one's ACKs after its own, once each, so that one lost ack-only
// datagram costs no resends; without it (the reference) every ACK goes
// once.
func TestRepeatAcks(t *testing.T) {
	for _, repeat := range []bool{false, true} {
		c, s := handshake(t)
		s.cfg.RepeatAcks = repeat
		now := t0
		var ids []uint32
		var acks [][]uint32
		for i := range 3 {
			require.NoError(t, c.Send(capturePayload(i, 8), engine.SendOptions{Channel: 1}))
			out := poll(t, c, now)
			var d Datagram
			require.NoError(t, ParseDatagram(unhex(t, out), &d))
			require.NoError(t, s.HandleDatagram(now, unhex(t, out)))
			now = now.Add(10 * ms)
			var a Datagram
			require.NoError(t, ParseDatagram(unhex(t, poll(t, s, now)), &a))
			require.Zero(t, a.Flags&FlagDAT, "ack-only")
			ids = append(ids, d.ID)
			acks = append(acks, a.Acks)
		}
		want := [][]uint32{{ids[0]}, {ids[1]}, {ids[2]}}
		if repeat {
			want = [][]uint32{{ids[0]}, {ids[1], ids[0]}, {ids[2], ids[1]}}
		}
		require.Equal(t, want, acks, "repeat %v", repeat)
	}
}

// TestSessionSize: every idle stream keeps one Session, which with the
// 8-byte header the Go runtime puts before an object larger than 512
// bytes that holds pointers (mallocHeaderSize, runtime/malloc.go) fits
// the allocator's 1,792-byte size class (the next is 2,048). Its 32 RTT
// samples (the reference's window) stay full time.Durations: samples cut
// to 32 bits stalled a stream at 50 % loss (TestVNetLossyTransfer).
func TestSessionSize(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Session{})+8, uintptr(1792))
}
