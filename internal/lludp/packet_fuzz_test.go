package lludp

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// allVectorHex returns every datagram of the vector file.
func allVectorHex(v *vecFile) []string {
	var out []string
	for _, p := range v.Packets {
		out = append(out, p.Hex)
	}
	return out
}

// FuzzLLUDPPacket checks that ParsePacket never panics, and that what it
// accepts re-encodes to a form that parses to the same fields and encodes
// to the same bytes again.
func FuzzLLUDPPacket(f *testing.F) {
	for _, h := range allVectorHex(loadVectors(f)) {
		f.Add(unhex(f, h))
	}
	scratch := make([]byte, 0, MaxDecoded)
	scratch2 := make([]byte, 0, MaxDecoded)
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Packet
		if err := ParsePacket(b, &p, scratch); err != nil {
			require.ErrorIs(t, err, engine.ErrMalformed)
			return
		}
		require.NotZero(t, NumberLen(p.Message))
		wire := AppendPacket(nil, &p)
		if len(wire) > MaxDecoded {
			return // a canonical re-encoding can be longer than exotic zerocoding
		}
		var q Packet
		require.NoError(t, ParsePacket(wire, &q, scratch2))
		require.Equal(t, p.Seq, q.Seq)
		require.Equal(t, p.Message, q.Message)
		require.True(t, bytes.Equal(p.Extra, q.Extra))
		require.True(t, bytes.Equal(p.Body, q.Body))
		require.Equal(t, len(p.Acks), len(q.Acks))
		for i := range p.Acks {
			require.Equal(t, p.Acks[i], q.Acks[i])
		}
		require.Equal(t, p.Flags&(FlagReliable|FlagResent), q.Flags&(FlagReliable|FlagResent))
		require.Equal(t, wire, AppendPacket(nil, &q))
	})
}

// FuzzZeroCode checks that ZeroDecode never panics, that ZeroEncode never
// writes 00 00 and that decoding undoes encoding.
func FuzzZeroCode(f *testing.F) {
	for _, c := range loadVectors(f).Zerocode {
		f.Add(unhex(f, c.Encoded))
		f.Add(unhex(f, c.Decoded))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if dec, err := ZeroDecode(nil, b); err == nil {
			require.LessOrEqual(t, len(dec), MaxDecoded)
			enc := ZeroEncode(nil, dec)
			requireNoDoubleZero(t, enc)
			back, err := ZeroDecode(nil, enc)
			require.NoError(t, err)
			require.True(t, bytes.Equal(dec, back))
		} else {
			require.ErrorIs(t, err, engine.ErrMalformed)
		}
		if len(b) > MaxDecoded {
			return
		}
		enc := ZeroEncode(nil, b)
		requireNoDoubleZero(t, enc)
		dec, err := ZeroDecode(nil, enc)
		require.NoError(t, err)
		require.True(t, bytes.Equal(b, dec))
	})
}

// checkInvariants verifies the bookkeeping of s. It checks with plain
// comparisons, not require: the session fuzzer runs it after every
// record, for both sessions.
func checkInvariants(t *testing.T, s *Session) {
	t.Helper()
	n := s.queue.Len()
	listed, flight := 0, 0
	for st, l := range []*msgList{&s.resend, &s.suspect, &s.lost} {
		for m := l.head; m != nil; m = m.next {
			listed++
			switch {
			case s.unacked[m.seq] != m:
				t.Fatalf("datagram %d listed but not unacked", m.seq)
			case m.list != msgState(st):
				t.Fatalf("datagram %d on list %d says %d", m.seq, st, m.list)
			case (m.list == inFlight) != m.pkt.InFlight():
				t.Fatalf("datagram %d: in flight until acknowledged or found lost", m.seq)
			}
			if m.pkt.InFlight() {
				flight += m.pkt.Size
			}
			if !m.hello {
				n++
			}
		}
	}
	switch {
	case len(s.unacked) != listed:
		t.Fatalf("%d unacked, %d listed: every unacked datagram is on a list", len(s.unacked), listed)
	case flight != s.cc.InFlight():
		t.Fatalf("%d bytes in flight, the controller counts %d", flight, s.cc.InFlight())
	case s.pending != n:
		t.Fatalf("pending %d, %d queued or unacked", s.pending, n)
	case s.pending > s.cfg.MaxQueued || s.acks.len() > maxPendingAcks || s.nPongs > maxPongs ||
		s.Inbox.Len() > MaxRecvQueue || s.State() > engine.StateClosed:
		t.Fatalf("out of bounds: pending %d, acks %d, pongs %d, received %d, state %v",
			s.pending, s.acks.len(), s.nPongs, s.Inbox.Len(), s.State())
	}
}

// pollChecked polls s until nothing is due, checking every datagram.
func pollChecked(t *testing.T, s *Session, now time.Time, buf []byte) {
	t.Helper()
	enginetest.PollChecked(t, s, now, buf, func(b []byte) {
		require.LessOrEqual(t, len(b), s.cfg.MaxDatagram)
		var p Packet
		require.NoError(t, ParsePacket(b, &p, nil))
	})
}

// FuzzSession feeds arbitrary datagrams to a server with an open circuit
// and messages in flight.
func FuzzSession(f *testing.F) {
	var vectors [][]byte
	for _, h := range allVectorHex(loadVectors(f)) {
		vectors = append(vectors, unhex(f, h))
	}
	for _, seed := range enginetest.Seeds(vectors) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := openServer(t, Config{MaxQueued: 8})
		buf := make([]byte, DefaultMaxDatagram)
		now := t0
		for i := range 5 {
			require.NoError(t, s.Send([]byte{byte(i), 0, 0}, engine.SendOptions{MessageNumber: 9, Delivery: engine.Delivery(i % 2)}))
		}
		pollChecked(t, s, now, buf)
		for _, d := range enginetest.SplitDatagrams(b) {
			now = now.Add(700 * time.Millisecond)
			_ = s.HandleDatagram(now, d)
			checkInvariants(t, s)
			drain(s)
			pollChecked(t, s, now, buf)
			checkInvariants(t, s)
		}
	})
}

// TestRandomDatagrams throws mutated copies of real traffic and random
// bytes at both ends of a lossy exchange.
func TestRandomDatagrams(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	p := newPair(t, Config{MaxQueued: 64, ResendLimit: -1}, Config{RejectNewPeerSession: true, ResendLimit: -1}, 5*ms, 0.2, 9)
	g := &enginetest.Garbage{Rng: rng, MaxLen: 40}
	p.Garble(g, 5_000, func() {
		if rng.IntN(3) == 0 {
			_ = p.A.Send([]byte{byte(rng.Uint32())}, rel)
			_ = p.B.Send([]byte{byte(rng.Uint32())}, unrel)
		}
	}, func() {
		drain(p.A)
		drain(p.B)
		checkInvariants(t, p.A)
		checkInvariants(t, p.B)
	})
	t.Logf("a: %v %v %+v", p.A.State(), p.A.Err(), p.A.Stats())
	t.Logf("b: %v %v %+v", p.B.State(), p.B.Err(), p.B.Stats())
}
