package avara

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// clientControl is client 1's Control (serial 2, cram 3) acknowledging
// up to ack.
func clientControl(ack uint16) []byte {
	return datagram(Datagram{Ack: ack, Messages: []Message{{Serial: 2, Command: CommandControl, P2: 3, Sender: 1, HasSender: true}}})
}

// readyAt returns when a quota of q bytes, earned at rate bytes per ms
// from from, is no longer negative.
func readyAt(from time.Time, q, rate int) time.Time {
	return from.Add(time.Duration((-q+rate-1)/rate) * ms)
}

// TestReferenceQuota: with ReferencePeer a datagram carrying messages
// leaves only while the quota is not negative; it earns (min(3, the
// peer's cram) + 1) × 3 bytes per ms (3 before the peer's Control, 12
// after), banks at most 360 and pays 12 + the datagram's length
// (avaraline/Avara aaa5e63, CUDPComm::AsyncWrite). Deadline is the first
// millisecond at which the debt is paid.
func TestReferenceQuota(t *testing.T) {
	s := openServer(t, Config{ReferencePeer: true})
	buf := make([]byte, MaxDatagram)
	n := s.Poll(t0, buf) // the TOC and Control, from a quota of 0
	require.NotZero(t, n)
	q := -quotaHeader - n
	require.Equal(t, q, s.quota)
	require.NoError(t, s.HandleDatagram(t0.Add(5*ms), clientControl(2)))
	q += 5 * 3 // earned before the Control, at cram 0
	require.Equal(t, q, s.quota)
	for range 3 {
		require.NoError(t, s.Send(make([]byte, 400), game))
	}
	at := readyAt(t0.Add(5*ms), q, 12)
	require.Equal(t, at, s.Deadline())
	require.Zero(t, s.Poll(at.Add(-time.Nanosecond), buf), "the debt is not paid yet")
	n = s.Poll(at, buf)
	require.Greater(t, n, 800, "two 400-byte messages in one datagram")
	q += int(at.Sub(t0.Add(5*ms))/ms)*12 - quotaHeader - n
	require.Equal(t, q, s.quota)
	require.Equal(t, readyAt(at, q, 12), s.Deadline(), "the third waits for the quota")

	require.NoError(t, s.HandleDatagram(at.Add(ms), fromClient(6, false, 0)))
	later := at.Add(10 * time.Second)
	n = s.Poll(later, buf)
	require.Equal(t, quotaCap-quotaHeader-n, s.quota, "at most 360 banked")
	require.Zero(t, s.queue.Len(), "all three sent")
}

// TestReferenceOutstanding: with ReferencePeer at most 16 messages are
// outstanding from the oldest unacknowledged one, so that a reference
// receiver never holds the 16 behind a gap at which it skips it; an
// acknowledgement of the oldest lets one more go.
func TestReferenceOutstanding(t *testing.T) {
	s := openServer(t, Config{ReferencePeer: true})
	buf := make([]byte, MaxDatagram)
	require.NotZero(t, s.Poll(t0, buf))
	require.NoError(t, s.HandleDatagram(t0, clientControl(2)))
	for i := range 20 {
		require.NoError(t, s.Send([]byte{byte(i)}, game))
	}
	now := t0.Add(time.Second)
	for s.Poll(now, buf) > 0 {
	}
	require.Equal(t, uint16(4+2*ReferenceSkipAfter), s.nextSerial, "serials 4..34 sent")
	require.True(t, s.Deadline().After(now), "nothing more due")
	require.NoError(t, s.HandleDatagram(now, fromClient(4, false, 0)))
	n := s.Poll(now, buf)
	require.NotZero(t, n)
	require.Equal(t, uint16(6+2*ReferenceSkipAfter), s.nextSerial, "serial 36 sent once 4 was acknowledged")

	// A map acknowledging everything but the oldest lets nothing more go.
	require.NoError(t, s.HandleDatagram(now, fromClient(4, true, 1<<15-2)))
	require.Zero(t, s.Poll(now.Add(ms), buf))
	require.Equal(t, uint16(6+2*ReferenceSkipAfter), s.nextSerial)
}

// TestReferenceNoAckMap: with ReferencePeer no AckMap is sent: a
// reference sender applies map bits with a shift that wraps at 32, so a
// map drops its messages 64 serials beyond a held one as acknowledged,
// for good (docs/protocols/avara.md §4.1).
func TestReferenceNoAckMap(t *testing.T) {
	for _, ref := range []bool{false, true} {
		s := openServer(t, Config{ReferencePeer: ref})
		poll(t, s, t0)
		require.NoError(t, s.HandleDatagram(t0, datagram(Datagram{Ack: NothingReceived,
			Messages: []Message{{Serial: 4, Command: 1, Sender: 1, HasSender: true}}})))
		want := "0100" + "02000000" // ack field 0 with the map flag, bit 1: serial 4
		if ref {
			want = "0000"
		}
		require.Equal(t, want, body(t, poll(t, s, t0.Add(DefaultAckDelay))))
	}
}

// TestHeldAck: while messages are held behind a gap, a pure
// acknowledgement goes out again AckDelay plus the retransmit time after
// the last datagram although nothing arrives: a reference sender that
// resent 3 times without hearing from us resends nothing until a
// datagram from us arrives (CUDPConnection::FindBestPacket,
// CUDPConnection::ValidatePackets). Without a gap nothing is repeated.
func TestHeldAck(t *testing.T) {
	s := openServer(t, Config{})
	poll(t, s, t0)
	require.NoError(t, s.HandleDatagram(t0, datagram(Datagram{Ack: 2,
		Messages: []Message{{Serial: 4, Command: 1, Sender: 1, HasSender: true}}})))
	at := t0.Add(DefaultAckDelay)
	require.Equal(t, at, s.Deadline())
	require.Equal(t, "0100"+"02000000", body(t, poll(t, s, at)))
	for range 3 {
		at = at.Add(DefaultAckDelay + initialRetransmit)
		require.Equal(t, at, s.Deadline())
		require.Empty(t, poll(t, s, at.Add(-time.Nanosecond)))
		require.Equal(t, "0100"+"02000000", body(t, poll(t, s, at)))
	}
	require.NoError(t, s.HandleDatagram(at, datagram(Datagram{Ack: 2,
		Messages: []Message{{Serial: 2, Command: 1, Sender: 1, HasSender: true}}})))
	require.Equal(t, "0400", body(t, poll(t, s, at.Add(DefaultAckDelay))))
	require.True(t, s.Deadline().IsZero(), "nothing held, nothing due")
}

// TestAckRepeats: with ReferencePeer, after a message arrives the
// acknowledgement goes out 3 times, AckDelay plus the retransmit time
// apart, even with nothing held: a reference sender whose resends or our
// acknowledgement of them were lost resends nothing until it hears from
// us. Another message starts the count again. Without ReferencePeer the
// acknowledgement goes once.
func TestAckRepeats(t *testing.T) {
	for _, ref := range []bool{false, true} {
		s := openServer(t, Config{ReferencePeer: ref})
		buf := make([]byte, MaxDatagram)
		require.NotZero(t, s.Poll(t0, buf))
		require.NoError(t, s.HandleDatagram(t0, clientControl(2)))
		at := t0.Add(DefaultAckDelay)
		require.Equal(t, at, s.Deadline())
		require.Equal(t, "0200", body(t, poll(t, s, at)))
		if !ref {
			require.True(t, s.Deadline().IsZero())
			continue
		}
		for range ackRepeats - 1 {
			at = at.Add(DefaultAckDelay + initialRetransmit)
			require.Equal(t, at, s.Deadline())
			require.Equal(t, "0200", body(t, poll(t, s, at)))
		}
		require.True(t, s.Deadline().IsZero(), "no more than 3")
		require.NoError(t, s.HandleDatagram(at, clientControl(2))) // a duplicate
		require.Equal(t, at.Add(DefaultAckDelay), s.Deadline())
		for range ackRepeats {
			require.Equal(t, "0200", body(t, poll(t, s, s.Deadline())))
		}
		require.True(t, s.Deadline().IsZero())
	}
}

// TestLogoutUnacknowledged: with ReferencePeer the Logout waits until
// everything before it is acknowledged, then goes out, once more a
// retransmit time later, and the session ends without error a retransmit
// time after that, as the reference never acknowledges a Logout
// (CUDPComm::PacketHandler, CUDPComm::DisconnectSlot): well before
// Linger. Without ReferencePeer the Logout goes with the rest and the
// session waits for its acknowledgement, as a peer running this package
// sends it at once.
func TestLogoutUnacknowledged(t *testing.T) {
	for _, ref := range []bool{false, true} {
		s := openServer(t, Config{ReferencePeer: ref})
		require.NoError(t, s.Send([]byte("a"), game))
		s.Close(t0)
		buf := make([]byte, MaxDatagram)
		commands := func(now time.Time) []int8 {
			n := s.Poll(now, buf)
			if n == 0 {
				return nil
			}
			var d Datagram
			require.NoError(t, ParseDatagram(buf[:n], &d, DefaultVersion))
			var c []int8
			for _, m := range d.Messages {
				c = append(c, m.Command)
			}
			return c
		}
		at := t0.Add(100 * ms) // the quota paid for the first datagram
		if !ref {
			require.Equal(t, []int8{CommandTOC, CommandControl, game.Params.Command, CommandLogout}, commands(t0))
			require.NoError(t, s.HandleDatagram(at, clientControl(4)))
			require.Equal(t, []int8{CommandLogout}, commands(at.Add(5*initialRetransmit)), "resent")
			require.Equal(t, engine.StateClosing, s.State(), "waiting for the Logout's acknowledgement")
			continue
		}
		require.Equal(t, []int8{CommandTOC, CommandControl, game.Params.Command}, commands(t0), "no Logout before the rest is acknowledged")
		require.Nil(t, commands(t0))
		require.NoError(t, s.HandleDatagram(at, clientControl(4)))
		require.Equal(t, []int8{CommandLogout}, commands(at))
		require.Equal(t, at.Add(initialRetransmit), s.Deadline())
		require.Equal(t, []int8{CommandLogout}, commands(at.Add(initialRetransmit)))
		end := at.Add(2 * initialRetransmit)
		require.Equal(t, end, s.Deadline())
		require.Nil(t, commands(end.Add(-time.Nanosecond)))
		require.Equal(t, engine.StateClosing, s.State())
		require.Nil(t, commands(end))
		require.Equal(t, engine.StateClosed, s.State())
		require.NoError(t, s.Err())
	}
}

// TestSkipCounted: every serial Config.SkipAfter gives up is counted in
// Stats.Skipped and logged at Debug with its serial; if it arrives later
// it is a duplicate, never delivered nor counted in MessagesRecv.
func TestSkipCounted(t *testing.T) {
	var log bytes.Buffer
	s := openServer(t, Config{SkipAfter: 4, Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	msg := func(serial uint16) []byte {
		return datagram(Datagram{Ack: NothingReceived, Messages: []Message{{Serial: serial, Command: 1, Data: []byte{byte(serial)}, Sender: 1, HasSender: true}}})
	}
	for _, serial := range []uint16{4, 6, 8, 10, 14, 16, 18, 20} {
		require.NoError(t, s.HandleDatagram(t0, msg(serial)))
	}
	require.NoError(t, s.HandleDatagram(t0, msg(2)))
	require.NoError(t, s.HandleDatagram(t0, msg(12)))
	require.Equal(t, []string{"\x04", "\x06", "\x08", "\x0a", "\x0e", "\x10", "\x12", "\x14"}, drain(s))
	st := s.Stats()
	require.Equal(t, uint64(2), st.Skipped)
	require.Equal(t, uint64(8), st.MessagesRecv)
	require.Equal(t, uint64(2), st.Duplicates)
	require.Contains(t, log.String(), `level=DEBUG msg="avara: skipped a missing message for good" serial=2 `)
	require.Contains(t, log.String(), `level=DEBUG msg="avara: skipped a missing message for good" serial=12 `)
}
