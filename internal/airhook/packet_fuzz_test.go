package airhook

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// FuzzAirhookPacket checks that Decode never panics and that what it
// accepts re-encodes to a canonical form (optional fields present exactly
// when nonzero, reserved bits clear) that decodes to the same Packet and
// encodes to the same bytes again.
func FuzzAirhookPacket(f *testing.F) {
	for _, h := range allVectorHex(loadVectors(f)) {
		f.Add(unhex(f, h))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Packet
		if err := Decode(b, &p); err != nil {
			require.ErrorIs(t, err, engine.ErrMalformed)
			return
		}
		wire := p.AppendTo(nil)
		require.Equal(t, p.Len(), len(wire))
		require.LessOrEqual(t, len(wire), len(b), "the canonical form is never longer")
		var q Packet
		require.NoError(t, Decode(wire, &q))
		require.Equal(t, p, q)
		require.Equal(t, wire, q.AppendTo(nil))
	})
}

// checkInvariants verifies the bookkeeping of s.
func checkInvariants(t *testing.T, s *Session) {
	t.Helper()
	n := s.queue.len()
	for _, m := range s.waiting {
		if m != nil {
			n++
		}
	}
	require.Equal(t, s.pending, n, "every pending message is queued or waiting")
	require.LessOrEqual(t, s.pending, s.cfg.MaxQueued)
	require.LessOrEqual(t, int(s.nMissed), maxMissed)
	require.LessOrEqual(t, s.State(), engine.StateClosed)
	flight := 0
	for i := range s.log {
		if r := &s.log[i]; r.pkt.InFlight() {
			seq := s.confirmed + uint8((i-int(s.confirmed))&(len(s.log)-1)) // the log is a ring
			require.True(t, inRange(seq, s.confirmed+1, uint8(s.lastSent)+1), "only unconfirmed packets are in flight")
			flight += r.pkt.Size
		}
	}
	require.Equal(t, flight, s.cc.InFlight())
}

// pollChecked polls s until nothing is due, checking every datagram.
func pollChecked(t *testing.T, s *Session, now time.Time, buf []byte) {
	t.Helper()
	enginetest.PollChecked(t, s, now, buf, func(b []byte) {
		require.LessOrEqual(t, len(b), s.cfg.MaxDatagram)
		var p Packet
		require.NoError(t, Decode(b, &p))
	})
}

// FuzzSession feeds arbitrary datagrams to a session that has completed
// its handshake with a constructed peer and has messages in flight.
func FuzzSession(f *testing.F) {
	var vectors [][]byte
	for _, h := range allVectorHex(loadVectors(f)) {
		vectors = append(vectors, unhex(f, h))
	}
	for _, seed := range enginetest.Seeds(vectors) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		now := time.Unix(1, 0)
		c, buf := handshakeWithG(t, now)
		for i := range 5 {
			require.NoError(t, c.Send([]byte{byte(i)}, engine.SendOptions{}))
		}
		pollChecked(t, c, now, buf)
		for _, d := range enginetest.SplitDatagrams(b) {
			now = now.Add(100 * time.Millisecond)
			_ = c.HandleDatagram(now, d)
			checkInvariants(t, c)
			drain(c)
			pollChecked(t, c, now, buf)
			checkInvariants(t, c)
		}
	})
}

// TestRandomDatagrams throws mutated copies of real traffic and random
// bytes at both ends of a lossy exchange.
func TestRandomDatagrams(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	p := newPair(t, Config{Session: idA, MaxQueued: 64}, Config{Session: idB, RejectNewPeerSession: true}, 5*time.Millisecond, 0.2, 9)
	g := &enginetest.Garbage{Rng: rng, MaxLen: 40}
	p.Garble(g, 5_000, func() {
		if rng.IntN(3) == 0 {
			_ = p.A.Send([]byte{byte(rng.Uint32())}, engine.SendOptions{})
			_ = p.B.Send([]byte{byte(rng.Uint32())}, engine.SendOptions{})
		}
	}, func() {
		drain(p.A)
		drain(p.B)
		checkInvariants(t, p.A)
		checkInvariants(t, p.B)
	})
	t.Logf("a: %+v", p.A.Stats())
	t.Logf("b: %+v", p.B.Stats())
}
