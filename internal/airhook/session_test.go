package airhook

import (
	"bytes"
	"encoding/hex"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

const (
	idA = 0x0a0a0a0a
	idB = 0x0b0b0b0b
	idC = 0x0c0c0c0c
	idG = 0x0d0d0d0d
)

// snapshot copies the state of s for comparison, leaving out the decoding
// scratch packet.
func snapshot(s *Session) Session {
	c := *s
	c.pkt = Packet{}
	c.free = slices.Clone(s.free)
	c.queue.items = slices.Clone(s.queue.items)
	c.Inbox = s.Inbox.Clone()
	return c
}

// requireUnchanged checks that s is as in before except for the counters
// listed in stats.
func requireUnchanged(t *testing.T, before Session, s *Session, stats engine.Stats) {
	t.Helper()
	after := snapshot(s)
	after.Counters = before.Counters
	require.Equal(t, before, after)
	require.Equal(t, stats, s.Counters)
}

// idlePair returns two sessions that completed the handshake and exchanged
// one message each way, with nothing left to do.
func idlePair(t *testing.T, cfgA, cfgB Config) *pair {
	t.Helper()
	p := newPair(t, cfgA, cfgB, 10*time.Millisecond, 0, 1)
	require.NoError(t, p.A.Send([]byte("ping"), engine.SendOptions{}))
	require.NoError(t, p.B.Send([]byte("pong"), engine.SendOptions{}))
	p.RunUntil(1000, func() bool {
		return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished &&
			p.A.Pending() == 0 && p.B.Pending() == 0 && len(p.AB.Queue) == 0 && len(p.BA.Queue) == 0
	})
	require.Equal(t, []string{"ping"}, drain(p.B))
	require.Equal(t, []string{"pong"}, drain(p.A))
	return p
}

// encode returns the wire form of pk.
func encode(pk Packet) []byte { return pk.AppendTo(nil) }

func TestHandshakeWithoutData(t *testing.T) {
	now := time.Unix(1, 0)
	a, b := newRefSession(t, now, idA), newRefSession(t, now, idB)
	buf := make([]byte, DefaultMaxDatagram)
	hs, est := engine.StateHandshake, engine.StateEstablished
	for i, step := range []struct {
		want   string
		ah, bh engine.State // after the packet
	}{
		{"080000010a0a0a0a", hs, hs},           // A: S
		{"180100020a0a0a0a0b0b0b0b", est, hs},  // B: O+S, session push; B echoed A's ID
		{"180200020b0b0b0b0a0a0a0a", est, est}, // A: O+S, session push; A echoed B's ID
		{"00020003", est, est},                 // B: confirms A's push at once (a choice)
	} {
		from, to := a, b
		if i%2 == 1 {
			from, to = b, a
		}
		n := from.Poll(now, buf)
		require.Equal(t, step.want, hex.EncodeToString(buf[:n]), i)
		require.NoError(t, to.HandleDatagram(now, buf[:n]))
		require.Equal(t, []engine.State{step.ah, step.bh}, []engine.State{a.State(), b.State()}, i)
	}
	for _, s := range []*Session{a, b} {
		require.Equal(t, engine.StateEstablished, s.State())
		require.Zero(t, s.Poll(now, buf))
		require.True(t, s.Deadline().IsZero())
	}
	require.Equal(t, uint32(idB), a.PeerSession())
	require.Equal(t, uint32(idA), b.PeerSession())

	// Both ends opening at once also settles.
	p := newPair(t, Config{Session: idA}, Config{Session: idB}, 10*time.Millisecond, 0, 1)
	p.RunUntil(100, func() bool { return p.Next().IsZero() })
	require.Equal(t, engine.StateEstablished, p.A.State())
	require.Equal(t, engine.StateEstablished, p.B.State())
}

func TestSessionPushRepeatedUntilConfirmed(t *testing.T) {
	// B's confirmation of A's session push is lost: A repeats its last
	// header (with the session fields) every RTO, and B answers it.
	now := time.Unix(1, 0)
	a, b := newRefSession(t, now, idA), newRefSession(t, now, idB)
	buf := make([]byte, DefaultMaxDatagram)
	relay := func(from, to *Session, want string) {
		t.Helper()
		n := from.Poll(now, buf)
		require.Equal(t, want, hex.EncodeToString(buf[:n]))
		if to != nil {
			require.NoError(t, to.HandleDatagram(now, buf[:n]))
		}
	}
	relay(a, b, "080000010a0a0a0a")
	relay(b, a, "180100020a0a0a0a0b0b0b0b")
	relay(a, b, "180200020b0b0b0b0a0a0a0a")
	relay(b, nil, "00020003") // lost
	require.Equal(t, engine.StateEstablished, a.State(), "B echoed A's session")
	require.Equal(t, now.Add(time.Second), a.Deadline())
	now = now.Add(time.Second)
	relay(a, b, "180200020b0b0b0b0a0a0a0a")
	relay(b, a, "00020003") // header repeat of B's lost packet
	require.Equal(t, engine.StateEstablished, a.State())
	require.True(t, a.Deadline().IsZero())
}

// TestDialToSilentReference replays a capture against the reference
// (airhook-2): the reference answers our opening with its session push,
// echoing our session ID, and then says nothing until it has data, since it
// confirms our push only with its next transmission. The session is open
// from the reference's first answer; its own push is still repeated, with
// back-off, and the handshake timeout no longer applies.
func TestDialToSilentReference(t *testing.T) {
	t0 := time.Unix(1, 0)
	s, err := New(t0, Config{Session: idA, HandshakeTimeout: 3 * time.Second})
	require.NoError(t, err)
	buf := make([]byte, DefaultMaxDatagram)
	n := s.Poll(t0, buf)
	require.Equal(t, "080000010a0a0a0a", hex.EncodeToString(buf[:n]))
	c, _ := hex.DecodeString("180100020a0a0a0a0c0c0c0c") // the reference: O=A S=C
	require.NoError(t, s.HandleDatagram(t0, c))
	require.Equal(t, engine.StateEstablished, s.State())
	require.Equal(t, uint32(idC), s.PeerSession())

	var at []time.Duration
	for now := t0; now.Sub(t0) < 5*time.Second; now = s.Deadline() {
		if n := s.Poll(now, buf); n > 0 {
			require.Equal(t, "180200020c0c0c0c0a0a0a0a", hex.EncodeToString(buf[:n]))
			at = append(at, now.Sub(t0))
		}
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{0, 250 * ms, 750 * ms, 1750 * ms, 3750 * ms}, at,
		"the push is repeated at 0.25, 0.5, 1 and 2 s intervals")
	require.Equal(t, engine.StateEstablished, s.State())
	require.NoError(t, s.Err())

	// The reference's next transmission confirms the push at last.
	c, _ = hex.DecodeString("00020003")
	require.NoError(t, s.HandleDatagram(t0.Add(4*time.Second), c))
	require.True(t, s.Deadline().IsZero())
}

func TestSessionIDs(t *testing.T) {
	now := time.Unix(1, 0)
	s, err := New(now, Config{Rand: bytes.NewReader([]byte{0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78})})
	require.NoError(t, err)
	require.Equal(t, uint32(0x12345678), s.ID(), "zero draws are skipped")
	require.Zero(t, s.PeerSession())

	s, err = New(now, Config{})
	require.NoError(t, err)
	require.NotZero(t, s.ID())

	_, err = New(now, Config{Rand: bytes.NewReader(make([]byte, 64))})
	require.Error(t, err)
	_, err = New(now, Config{Rand: bytes.NewReader([]byte{1})})
	require.Error(t, err)
}

func TestConfigValidation(t *testing.T) {
	now := time.Unix(1, 0)
	for name, cfg := range map[string]Config{
		"datagram":  {MaxDatagram: MinMaxDatagram - 1},
		"rto":       {RTOMin: 2 * time.Second, RTOMax: time.Second},
		"negative":  {IdleTimeout: -1},
		"maxqueued": {MaxQueued: -1},
	} {
		cfg.Session = 1
		_, err := New(now, cfg)
		require.Error(t, err, name)
	}
	s, err := New(now, Config{Session: 1, MaxDatagram: MinMaxDatagram})
	require.NoError(t, err)
	require.Equal(t, engine.Capabilities{MaxMessage: 256, MaxQueued: engine.DefaultMaxQueued, Channels: 1}, s.Capabilities())
	require.Equal(t, DefaultRTOInitial, s.Stats().RTO)
}

func TestSendErrors(t *testing.T) {
	now := time.Unix(1, 0)
	s, err := New(now, Config{Session: idA, MaxQueued: 3})
	require.NoError(t, err)
	rel := engine.SendOptions{}
	require.ErrorIs(t, s.Send(nil, rel), engine.ErrEmptyMessage)
	require.ErrorIs(t, s.Send(make([]byte, 257), rel), engine.ErrMessageTooLarge)
	require.ErrorIs(t, s.Send([]byte("x"), engine.SendOptions{Delivery: engine.Unreliable}), engine.ErrUnsupported)
	require.ErrorIs(t, s.Send([]byte("x"), engine.SendOptions{Delivery: engine.Passive}), engine.ErrUnsupported)
	require.ErrorIs(t, s.Send([]byte("x"), engine.SendOptions{Channel: 1}), engine.ErrUnsupported)
	require.ErrorIs(t, s.Send([]byte("x"), engine.SendOptions{MessageNumber: 7}), engine.ErrUnsupported)
	msg := make([]byte, 256)
	for range 3 {
		require.NoError(t, s.Send(msg, rel))
	}
	msg[0] = 'z' // Send copied it
	require.Equal(t, byte(0), s.queue.front().data[0])
	require.ErrorIs(t, s.Send([]byte("x"), rel), engine.ErrQueueFull)
	require.Equal(t, 3, s.Pending())

	s.Close(now)
	require.Equal(t, engine.StateClosed, s.State(), "closed before the handshake completed")
	require.NoError(t, s.Err())
	require.ErrorIs(t, s.Send([]byte("x"), rel), engine.ErrClosed)
	require.ErrorIs(t, s.HandleDatagram(now, []byte{0, 0, 0, 1}), engine.ErrClosed)
	require.Zero(t, s.Poll(now, make([]byte, DefaultMaxDatagram)))
	require.True(t, s.Deadline().IsZero())
}

func TestFirstPacketRules(t *testing.T) {
	now := time.Unix(1, 0)
	buf := make([]byte, DefaultMaxDatagram)
	s := newRefSession(t, now, idC)
	require.Equal(t, now, s.Deadline(), "the first packet is due at once")
	require.Zero(t, s.Poll(now, buf[:DefaultMaxDatagram-1]), "buffer shorter than MaxDatagram")
	n := s.Poll(now, buf)
	require.Equal(t, "080000010c0c0c0c", hex.EncodeToString(buf[:n]), "header repeat, seq 1")
	require.Equal(t, now.Add(time.Second), s.Deadline(), "repeated every RTO until the peer answers")

	s = newRefSession(t, now, idC)
	require.NoError(t, s.Send([]byte("x"), engine.SendOptions{}))
	n = s.Poll(now, buf)
	require.Equal(t, "080000020c0c0c0c0078", hex.EncodeToString(buf[:n]), "new packet, seq 2")
}

// handshakeWithG brings a reference-timed session C to the established
// state with a constructed peer G: G's first packet has sequence 0 (as the
// page says), its second carries O+S and one message.
func handshakeWithG(t *testing.T, now time.Time) (*Session, []byte) {
	t.Helper()
	buf := make([]byte, DefaultMaxDatagram)
	c := newRefSession(t, now, idC)
	require.NoError(t, c.HandleDatagram(now, encode(Packet{Seq: 0, Session: idG})))
	n := c.Poll(now, buf)
	require.Equal(t, "180000020d0d0d0d0c0c0c0c", hex.EncodeToString(buf[:n]))
	require.NoError(t, c.HandleDatagram(now, encode(Packet{
		Seq: 1, ObservedSeq: 2, ObservedSession: idC, Session: idG, Messages: [][]byte{[]byte("g0")},
	})))
	require.Equal(t, engine.StateEstablished, c.State())
	n = c.Poll(now, buf)
	require.Equal(t, "00010003", hex.EncodeToString(buf[:n]))
	require.Equal(t, []string{"g0"}, drain(c))
	return c, buf
}

func TestObservedOctetOutOfRangeRejected(t *testing.T) {
	now := time.Unix(1, 0)
	c, _ := handshakeWithG(t, now)
	// C sent up to seq 3 and G confirmed 2: only 2 and 3 are acceptable.
	for _, obs := range []uint8{1, 4, 0x80, 0xff} {
		before, stats := snapshot(c), c.Counters
		err := c.HandleDatagram(now, encode(Packet{Seq: 2, ObservedSeq: obs, Next: 1, Messages: [][]byte{[]byte("x")}}))
		require.ErrorIs(t, err, engine.ErrRejected, "obs %d", obs)
		stats.PacketsRejected++
		requireUnchanged(t, before, c, stats)
	}
	require.NoError(t, c.HandleDatagram(now, encode(Packet{Seq: 2, ObservedSeq: 3, Next: 1, Messages: [][]byte{[]byte("x")}})))
	require.Equal(t, []string{"x"}, drain(c))
}

func TestObservedSessionMismatchRejected(t *testing.T) {
	now := time.Unix(1, 0)
	c, _ := handshakeWithG(t, now)
	before, stats := snapshot(c), c.Counters
	err := c.HandleDatagram(now, encode(Packet{Seq: 2, ObservedSeq: 3, ObservedSession: 0x99, Session: idG}))
	require.ErrorIs(t, err, engine.ErrRejected)
	stats.PacketsRejected++
	requireUnchanged(t, before, c, stats)

	// The same with a new session ID: the reference would already have
	// reset its state for the new session (docs/protocols/airhook.md §4.5); here nothing
	// changes.
	err = c.HandleDatagram(now, encode(Packet{Seq: 9, ObservedSession: 0x99, Session: 0x77}))
	require.ErrorIs(t, err, engine.ErrRejected)
	stats.PacketsRejected++
	requireUnchanged(t, before, c, stats)
	require.Equal(t, uint32(idG), c.PeerSession())
}

func TestUnknownSessionAndMalformedRejected(t *testing.T) {
	now := time.Unix(1, 0)
	c := newRefSession(t, now, idC)
	before := snapshot(c)
	require.ErrorIs(t, c.HandleDatagram(now, []byte{0, 0, 0, 1}), engine.ErrRejected)
	require.ErrorIs(t, c.HandleDatagram(now, []byte{0x08, 0, 0, 1, 0x0d}), engine.ErrMalformed)
	require.ErrorIs(t, c.HandleDatagram(now, []byte{0x88, 0, 0, 1, 1, 2, 3, 4}), ErrOutOfBand)
	requireUnchanged(t, before, c, engine.Stats{PacketsRejected: 3})
}

func TestOldPacketIgnored(t *testing.T) {
	now := time.Unix(1, 0)
	c, _ := handshakeWithG(t, now)
	before, stats := snapshot(c), c.Counters
	// 255 behind is old; it is ignored even with a wrong observed session.
	old := encode(Packet{Seq: c.lastAccepted - 255, ObservedSession: 0x99, Session: idG, Messages: [][]byte{[]byte("x")}})
	require.NoError(t, c.HandleDatagram(now, old))
	stats.PacketsReceived++
	stats.BytesReceived += uint64(len(old))
	stats.Duplicates++
	requireUnchanged(t, before, c, stats)
	// 256 behind is a jump forward in the reference's window (docs/protocols/airhook.md §2).
	require.NoError(t, c.HandleDatagram(now, encode(Packet{Seq: c.lastAccepted - 256, ObservedSeq: 3, Next: 1, Messages: [][]byte{[]byte("y")}})))
	require.Equal(t, []string{"y"}, drain(c))
}

// restartPair returns A, established with B, with one message in flight to
// B that B never got, and the first packet of B restarted as B'.
func restartPair(t *testing.T, cfgA Config) (*pair, *Session, []byte) {
	t.Helper()
	p := idlePair(t, cfgA, Config{Session: idB})
	p.AB.Cut = true
	require.NoError(t, p.A.Send([]byte("inflight"), engine.SendOptions{}))
	p.Advance(p.Now.Add(time.Millisecond))
	require.Equal(t, 1, p.A.Pending())
	b2, err := New(p.Now, Config{Session: idB + 1})
	require.NoError(t, err)
	n := b2.Poll(p.Now, p.Buf)
	require.Equal(t, "080000010b0b0b0c", hex.EncodeToString(p.Buf[:n]))
	return p, b2, slices.Clone(p.Buf[:n])
}

// restartUnanswered hands A the restarted peer's first packet, checks
// that A challenges it with a probe instead of taking it, and lets the
// challenge run out unanswered, as it does when B is gone.
func restartUnanswered(t *testing.T, p *pair, first []byte) {
	t.Helper()
	a := p.A
	require.NoError(t, a.HandleDatagram(p.Now, first))
	require.Equal(t, uint32(idB), a.PeerSession(), "not taken before the challenge")
	require.Equal(t, uint64(1), a.Stats().Challenges)
	n := a.Poll(p.Now, p.Buf)
	var pk Packet
	require.NoError(t, Decode(p.Buf[:n], &pk))
	require.Empty(t, pk.Messages, "the challenge is a probe")
	until := p.Now.Add(max(2*a.rtt.RTO(), engine.ChallengeMin))
	require.Equal(t, until, a.chalUntil)
	require.False(t, a.Deadline().After(until))
	p.Now = until
	for a.Poll(p.Now, p.Buf) > 0 {
	}
	require.True(t, a.chalPassed)
}

func TestPeerRestartAdopted(t *testing.T) {
	p, b2, first := restartPair(t, Config{Session: idA})
	a := p.A
	restartUnanswered(t, p, first)
	require.NoError(t, a.HandleDatagram(p.Now, first))
	require.Equal(t, uint32(idB+1), a.PeerSession())
	require.Equal(t, uint64(1), a.Stats().PeerRestarts)
	require.Equal(t, engine.StateEstablished, a.State(), "no way back to handshake")

	n := a.Poll(p.Now, p.Buf)
	var pk Packet
	require.NoError(t, Decode(p.Buf[:n], &pk))
	require.Equal(t, uint32(idA), pk.Session)
	require.Equal(t, uint32(idB+1), pk.ObservedSession)
	require.Equal(t, uint8(1), pk.ObservedSeq, "B' sent seq 1")
	require.Zero(t, pk.Next, "numbering restarts at 0: E omitted")
	require.Equal(t, [][]byte{[]byte("inflight")}, pk.Messages)
	require.Equal(t, uint64(1), a.Stats().Retransmits)

	require.NoError(t, b2.HandleDatagram(p.Now, p.Buf[:n]))
	require.Equal(t, []string{"inflight"}, drain(b2))
	n = b2.Poll(p.Now, p.Buf)
	require.NoError(t, a.HandleDatagram(p.Now, p.Buf[:n]))
	require.Zero(t, a.Pending())
}

func TestPeerRestartRejectedWhenConfigured(t *testing.T) {
	p, _, first := restartPair(t, Config{Session: idA, RejectNewPeerSession: true})
	restartUnanswered(t, p, first)
	before, stats := snapshot(p.A), p.A.Counters
	require.ErrorIs(t, p.A.HandleDatagram(p.Now, first), engine.ErrPeerRestarted)
	requireUnchanged(t, before, p.A, stats)
	require.Equal(t, uint32(idB), p.A.PeerSession())
	require.Zero(t, p.A.Stats().PeerRestarts)
}

// fullWindow returns C established with G (see handshakeWithG) after G
// sent packets 2..0xff, each with one message, but never confirmed beyond
// C's octet 2; C confirms each packet with a new one up to seq 2+255 =
// 0x0101 and has no sequence number left (docs/protocols/airhook.md §3.7). G's last packet
// skips skip message numbers, which C's packet 0x0101 reports missed.
func fullWindow(t *testing.T, now time.Time, skip uint8) (*Session, []byte) {
	t.Helper()
	c, buf := handshakeWithG(t, now)
	for seq := 2; seq <= 0xff; seq++ {
		next, want := uint8(seq-1), Packet{Seq: uint16(seq + 2), ObservedSeq: uint8(seq)}
		if seq == 0xff {
			next += skip
			for i := range skip {
				want.Missed = append(want.Missed, uint8(seq-1)+i)
			}
		}
		require.NoError(t, c.HandleDatagram(now, encode(Packet{
			Seq: uint16(seq), ObservedSeq: 2, Next: next, Messages: [][]byte{{byte(seq)}},
		})))
		n := c.Poll(now, buf)
		require.Equal(t, encode(want), buf[:n], "seq %d", seq)
	}
	return c, buf
}

// TestSpoofedRestart: a packet with a new session ID from the peer's
// address, whose challenge the live peer answers, changes nothing: the
// session keeps its peer and its numbering, and messages still flow.
// Without the challenge, one such packet replaced the peer.
func TestSpoofedRestart(t *testing.T) {
	p := idlePair(t, Config{Session: idA, RejectNewPeerSession: true}, Config{Session: idB})
	spoof := encode(Packet{Session: 0xdeadbeef, Seq: 1})
	for i := range 2 {
		require.NoError(t, p.A.HandleDatagram(p.Now, spoof), "challenged, not refused")
		p.RunUntil(100, func() bool { return p.A.Stats().SpoofsRefused == uint64(i+1) })
	}
	require.Equal(t, uint32(idB), p.A.PeerSession())
	require.Zero(t, p.A.Stats().PeerRestarts)
	require.Equal(t, uint64(2), p.A.Stats().Challenges)
	require.NoError(t, p.B.Send([]byte("still"), engine.SendOptions{}))
	var got []string
	p.RunUntil(100, func() bool { got = append(got, drain(p.A)...); return len(got) > 0 })
	require.Equal(t, []string{"still"}, got)
	require.Empty(t, p.Errs)
}

func TestWindowFullHeaderRepeat(t *testing.T) {
	// With the window full, C only repeats its last header (docs/protocols/airhook.md §3.7).
	now := time.Unix(1, 0)
	c, buf := fullWindow(t, now, 0)
	require.NoError(t, c.Send([]byte("d"), engine.SendOptions{}))
	// From now on each G packet is answered only by a header repeat of
	// seq 0x0101, one RTO after C's last transmission. The first carries
	// two messages, so that G's numbering does not come back to where it
	// was when C's confirmed packet was sent (256 messages later it would
	// look as if nothing were left to confirm).
	for i, g := range []Packet{
		{Seq: 0x100, ObservedSeq: 2, Next: 0xff, Messages: [][]byte{{0}, {1}}},
		{Seq: 0x101, ObservedSeq: 2, Next: 1, Messages: [][]byte{{2}}},
		{Seq: 0x102, ObservedSeq: 2, Next: 2, Messages: [][]byte{{3}}},
	} {
		require.NoError(t, c.HandleDatagram(now, encode(g)))
		require.Zero(t, c.Poll(now, buf), "no sequence number left: wait for the timer")
		now = now.Add(time.Second)
		n := c.Poll(now, buf)
		require.Equal(t, "00ff0101", hex.EncodeToString(buf[:n]), "repeat %d", i)
		require.Zero(t, c.Poll(now, buf))
	}
	// G confirms: the window opens and the data goes out at once.
	require.NoError(t, c.HandleDatagram(now, encode(Packet{Seq: 0x103, ObservedSeq: 0x01, Next: 3})))
	n := c.Poll(now, buf)
	require.Equal(t, "000301020064", hex.EncodeToString(buf[:n]))
}

// TestHeaderRepeatTrimsLateMissed: C's newest packet 0x0101 reported
// message 0xfe missed. G's next packet skips 0 and 1: C lists them missed
// too, but with no sequence number left it can only repeat the header of
// 0x0101, which carries the missed list as it was when 0x0101 was sent
// (docs/protocols/airhook.md §3.6; wtanaka/airhook at f5a18bd, protocol.c, airhook_transmit:
// a header repeat leaves out the missed entries in [last->unseen,
// current.unseen)), not the later entries 0 and 1, which G would not
// accept at the end of the list (it acts on the list from its last entry
// and stops at the first one it did not send in the packets confirmed).
func TestHeaderRepeatTrimsLateMissed(t *testing.T) {
	now := time.Unix(1, 0)
	c, buf := fullWindow(t, now, 1)
	require.NoError(t, c.HandleDatagram(now, encode(Packet{Seq: 0x100, ObservedSeq: 2, Next: 2, Messages: [][]byte{{2}}})))
	require.Equal(t, []uint8{0xfe, 0, 1}, c.missed[:c.nMissed])
	require.Zero(t, c.Poll(now, buf), "no sequence number left: wait for the timer")
	now = now.Add(time.Second)
	n := c.Poll(now, buf)
	require.Equal(t, "04ff010100fe", hex.EncodeToString(buf[:n]), "header repeat of 0x0101: missed list [0xfe]")
}

func TestMissedListCapped(t *testing.T) {
	now := time.Unix(1, 0)
	c, buf := handshakeWithG(t, now)
	// E jumps to 255 (254 missed), drops to 0 (E absent: 1 more), then to
	// 3 (3 more): 258 entries, kept to 256.
	for i, next := range []uint8{0xff, 0, 3} {
		require.NoError(t, c.HandleDatagram(now, encode(Packet{Seq: uint16(2 + i), ObservedSeq: 3, Next: next})))
	}
	require.Equal(t, maxMissed, int(c.nMissed))
	n := c.Poll(now, buf)
	var pk Packet
	require.NoError(t, Decode(buf[:n], &pk))
	require.Len(t, pk.Missed, maxMissed)
	require.Equal(t, uint8(1), pk.Missed[0])
}

func TestKeepAliveProbeAndIdleTimeout(t *testing.T) {
	const keep, idle = 10 * time.Second, 25 * time.Second
	p := idlePair(t, Config{Session: idA, KeepAlive: keep, IdleTimeout: idle}, Config{Session: idB})
	a := p.A
	require.True(t, p.B.Deadline().IsZero(), "B idle")
	last := a.LastRecv
	require.Equal(t, last.Add(keep), a.Deadline())

	// The probe: next sequence number, no messages, observed octet as in
	// the previous packet (it confirms nothing new).
	want := encode(Packet{Seq: a.lastSent + 1, ObservedSeq: a.lastObservedSent, Next: a.nextOut})
	p.Now = last.Add(keep)
	n := a.Poll(p.Now, p.Buf)
	require.Equal(t, want, p.Buf[:n])
	require.NoError(t, p.B.HandleDatagram(p.Now, p.Buf[:n]))
	n = p.B.Poll(p.Now, p.Buf)
	require.NotZero(t, n, "B answers the probe at once")
	var pk Packet
	require.NoError(t, Decode(p.Buf[:n], &pk))
	require.Equal(t, uint8(a.lastSent), pk.ObservedSeq, "and confirms it")
	require.NoError(t, a.HandleDatagram(p.Now, p.Buf[:n]))
	require.Zero(t, a.Poll(p.Now, p.Buf), "A does not answer the answer")
	require.Zero(t, p.B.Poll(p.Now, p.Buf))

	// Keep going with working links: probes keep A alive well past idle.
	p.Advance(p.Now.Add(3 * idle))
	require.Equal(t, engine.StateEstablished, a.State())

	// Cut the links: A probes every keep and gives up after idle.
	p.AB.Cut, p.BA.Cut = true, true
	sent := a.Stats().PacketsSent
	lastRecv := a.LastRecv
	p.RunUntil(100, func() bool { return a.State() == engine.StateClosed })
	require.Equal(t, lastRecv.Add(idle), p.Now)
	require.ErrorIs(t, a.Err(), engine.ErrIdleTimeout)
	require.Equal(t, sent+2, a.Stats().PacketsSent, "probes at +10 s and +20 s")
	require.Equal(t, engine.StateEstablished, p.B.State(), "B has no idle timeout")
}

func TestHandshakeTimeoutWithBackoff(t *testing.T) {
	t0 := time.Unix(1, 0)
	s, err := New(t0, Config{Session: idA, HandshakeTimeout: 3 * time.Second})
	require.NoError(t, err)
	buf := make([]byte, DefaultMaxDatagram)
	var at []time.Duration
	for s.State() != engine.StateClosed {
		now := s.Deadline()
		if n := s.Poll(now, buf); n > 0 {
			require.Equal(t, "080000010a0a0a0a", hex.EncodeToString(buf[:n]))
			at = append(at, now.Sub(t0))
		}
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{0, 250 * ms, 750 * ms, 1750 * ms}, at, "RTO doubles")
	require.ErrorIs(t, s.Err(), engine.ErrHandshakeTimeout)
	require.Equal(t, 8*DefaultRTOInitial, s.Stats().RTO, "three timer repeats")
}

func TestRTTSample(t *testing.T) {
	p := idlePair(t, Config{Session: idA}, Config{Session: idB})
	st := p.A.Stats()
	require.Equal(t, 20*time.Millisecond, st.SRTT, "one message, answered at once over 10 ms links")
	require.Equal(t, 10*time.Millisecond, st.RTTVar)
	require.Equal(t, 60*time.Millisecond, st.RTO)
}

// TestRTTSampleKarn: the packet carrying a message is lost; one RTO later
// its header is repeated, and the peer's confirmation of that sequence
// number gives no RTT sample (Karn's rule, RFC 6298 §3: the confirmation
// may be of either transmission) but clears the back-off. The message is
// reported missed, resent under a new number and confirmed one round
// trip later: that packet went out once and gives the only sample, 20 ms,
// so SRTT stays 20 ms and RTTVAR becomes 3/4 · 10 ms (RFC 6298 §2.3).
// Sampled from the repeated packet, 80 ms after it was first sent, SRTT
// would be 27.5 ms.
func TestRTTSampleKarn(t *testing.T) {
	p := idlePair(t, Config{Session: idA}, Config{Session: idB})
	lost := false
	p.AB.Drop = func(b []byte) bool {
		var pk Packet
		if lost || Decode(b, &pk) != nil || len(pk.Messages) == 0 {
			return false
		}
		lost = true
		return true
	}
	p.AB.Log = nil
	start := p.Now
	require.NoError(t, p.A.Send([]byte("late"), engine.SendOptions{}))
	p.RunUntil(100, func() bool { return p.A.Pending() == 0 })
	require.Equal(t, []string{"late"}, drain(p.B))
	require.Equal(t, start.Add(100*time.Millisecond), p.Now, "lost at 0, header repeat at 60 ms, resent at 80 ms, confirmed at 100 ms")

	require.Equal(t, []string{
		"0205000601036c617465", // seq 6, E 1: message 1, lost
		"0205000602",           // seq 6, E 2: header repeat
		"0206000702036c617465", // seq 7, E 2: resent as message 2, after B's report (its seq 6)
	}, enginetest.Hexes(p.AB.Log))

	st := p.A.Stats()
	require.Equal(t, uint64(1), st.Retransmits)
	require.Equal(t, 20*time.Millisecond, st.SRTT)
	require.Equal(t, 7500*time.Microsecond, st.RTTVar)
	require.Equal(t, 50*time.Millisecond, st.RTO, "SRTT + 4 RTTVAR, back-off cleared")
}

func TestCloseGraceful(t *testing.T) {
	p := idlePair(t, Config{Session: idA}, Config{Session: idB})
	for i := range 300 {
		require.NoError(t, p.A.Send([]byte{byte(i)}, engine.SendOptions{}))
		require.NoError(t, p.B.Send([]byte{byte(i)}, engine.SendOptions{}))
	}
	closeAt := p.Now
	p.A.Close(closeAt)
	require.Equal(t, engine.StateClosing, p.A.State())
	require.ErrorIs(t, p.A.Send([]byte("late"), engine.SendOptions{}), engine.ErrClosed)
	var gotA, gotB int
	p.RunUntil(10_000, func() bool {
		gotA += len(drain(p.A))
		gotB += len(drain(p.B))
		return p.A.State() == engine.StateClosed
	})
	require.NoError(t, p.A.Err())
	require.Equal(t, 300, gotB+len(drain(p.B)), "queued messages still delivered")
	require.Equal(t, 300, gotA+len(drain(p.A)), "the peer still answered")
	require.Zero(t, p.A.Pending())
	require.Equal(t, p.A.LastRecv.Add(max(2*p.A.rtt.RTO(), MinTimeWait)), p.Now,
		"closed after a TIME-WAIT without datagrams")
	require.Less(t, p.Now.Sub(closeAt), engine.DefaultLinger)
}

func TestCloseLingerTimeout(t *testing.T) {
	p := idlePair(t, Config{Session: idA, Linger: 2 * time.Second}, Config{Session: idB})
	p.AB.Cut, p.BA.Cut = true, true
	require.NoError(t, p.A.Send([]byte("lost"), engine.SendOptions{}))
	closeAt := p.Now
	p.A.Close(closeAt)
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateClosed })
	require.Equal(t, closeAt.Add(2*time.Second), p.Now)
	require.ErrorIs(t, p.A.Err(), engine.ErrLingerTimeout)
	require.Equal(t, 1, p.A.Pending())

	// Linger running out with nothing pending is a graceful end (here
	// the quiet period of one RTO is longer than Linger).
	q := idlePair(t, Config{Session: idA, Linger: time.Second, RTOInitial: 2 * time.Second, RTOMin: 2 * time.Second}, Config{Session: idB})
	closeAt = q.Now
	q.A.Close(closeAt)
	q.RunUntil(1000, func() bool { return q.A.State() == engine.StateClosed })
	require.Equal(t, closeAt.Add(time.Second), q.Now)
	require.NoError(t, q.A.Err())
}

// TestCloseDuringHandshake: a session that knows its peer but has not
// completed the handshake still delivers what it queued before closing;
// one that knows no peer closes at once.
func TestCloseDuringHandshake(t *testing.T) {
	p := newPair(t, Config{Session: idA}, Config{Session: idB}, 10*time.Millisecond, 0, 1)
	p.RunUntil(100, func() bool { return p.A.PeerSession() == idB })
	require.Equal(t, engine.StateHandshake, p.A.State())
	require.NoError(t, p.A.Send([]byte("last words"), engine.SendOptions{}))
	p.A.Close(p.Now)
	require.Equal(t, engine.StateClosing, p.A.State())
	p.RunUntil(1000, func() bool { return p.A.State() == engine.StateClosed })
	require.NoError(t, p.A.Err())
	require.Equal(t, []string{"last words"}, drain(p.B))

	lone, err := New(p.Now, Config{Session: idA})
	require.NoError(t, err)
	require.NoError(t, lone.Send([]byte("nobody"), engine.SendOptions{}))
	lone.Close(p.Now)
	require.Equal(t, engine.StateClosed, lone.State())
}

// TestChallengeReprobes: a challenge repeats its probe; when the first is
// lost, the live peer's confirmation of a later one refuses the new
// session all the same.
func TestChallengeReprobes(t *testing.T) {
	p, _, first := restartPair(t, Config{Session: idA})
	a := p.A
	require.NoError(t, a.HandleDatagram(p.Now, first))
	require.Positive(t, a.Poll(p.Now, p.Buf), "the first probe, lost")
	d := max(2*a.rtt.RTO(), engine.ChallengeMin)
	next := p.Now.Add(d / engine.ChallengeProbes)
	for a.Deadline().Before(next) { // the resend of "inflight": lost too
		dl := a.Deadline()
		for a.Poll(dl, p.Buf) > 0 {
		}
	}
	require.Equal(t, next, a.Deadline())
	n := a.Poll(next, p.Buf)
	require.Positive(t, n, "the second probe")
	require.NoError(t, p.B.HandleDatagram(next, p.Buf[:n]))
	n = p.B.Poll(next, p.Buf)
	require.Positive(t, n, "the live peer confirms it")
	require.NoError(t, a.HandleDatagram(next, p.Buf[:n]))
	require.Equal(t, uint64(1), a.Stats().SpoofsRefused)
	require.False(t, a.chalOn || a.chalPassed)
	require.Equal(t, uint32(idB), a.PeerSession())
}

// TestSessionSize: every idle stream keeps one Session, which fits the
// allocator's 1,280-byte size class (the next is 1,408).
func TestSessionSize(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Session{}), uintptr(1280))
}
