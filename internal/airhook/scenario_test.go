package airhook

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// referenceConfig mirrors the reference: a fixed 1 s retransmit interval, and
// a new peer session ID taken at once.
func referenceConfig(session uint32) Config {
	return Config{Session: session, RTOInitial: time.Second, RTOMin: time.Second, RTOMax: time.Second, NoChallenge: true}
}

func newRefSession(t testing.TB, now time.Time, session uint32) *Session {
	t.Helper()
	s, err := New(now, referenceConfig(session))
	require.NoError(t, err)
	return s
}

// drain returns the data of every message Recv hands out.
func drain(s *Session) []string {
	out := []string{}
	for {
		m, ok := s.Recv()
		if !ok {
			return out
		}
		out = append(out, string(m.Data))
	}
}

// TestVectorScenarios replays the four scenarios of packets[]: each packet
// is polled from its sender at the vector's time and must be exactly the
// vector's bytes; packets not dropped are handed to the receiver, which
// must deliver exactly what the reference delivered.
//
// Scenarios 1 and 2 share endpoints A and B; scenarios 3 and 4 use new
// endpoints from t=2000, and in scenario 4 B is replaced by a restarted B'
// with a new session ID. Endpoints are created at the time they first
// appear. A message is sent just before the first packet that carries it;
// a message seen again (P8, P19) is a retransmission the engine makes by
// itself.
func TestVectorScenarios(t *testing.T) {
	v := loadVectors(t)
	sessions := map[string]uint32{"A": 0x0a0a0a0a, "B": 0x0b0b0b0b, "B'": 0x0b0b0b0c}
	type endpoint struct {
		s    *Session
		sent map[string]bool
	}
	var (
		eps   map[string]*endpoint
		group string
		buf   = make([]byte, DefaultMaxDatagram)
	)
	endpointAt := func(name string, now time.Time) *endpoint {
		ep := eps[name]
		if ep == nil {
			ep = &endpoint{s: newRefSession(t, now, sessions[name]), sent: map[string]bool{}}
			eps[name] = ep
		}
		return ep
	}
	for _, vp := range v.Packets {
		g := "1+2"
		if strings.HasPrefix(vp.Scenario, "Scenario 3") || strings.HasPrefix(vp.Scenario, "Scenario 4") {
			g = "3+4"
		}
		if g != group {
			group, eps = g, map[string]*endpoint{}
		}
		now := vecTime(vp.Time)
		from, to, ok := strings.Cut(vp.Direction, "->")
		require.True(t, ok, vp.ID)
		src, dst := endpointAt(from, now), endpointAt(to, now)

		for _, m := range vp.Messages {
			if !src.sent[m.Text] {
				src.sent[m.Text] = true
				require.NoError(t, src.s.Send([]byte(m.Text), engine.SendOptions{}), vp.ID)
			}
		}
		require.False(t, src.s.Deadline().After(now), "%s: %s has a packet due", vp.ID, from)
		n := src.s.Poll(now, buf)
		require.Equal(t, vp.Hex, hex.EncodeToString(buf[:n]), "%s (%s)", vp.ID, vp.Note)
		if vp.Dropped {
			continue
		}
		require.NotNil(t, vp.ReceiveReturn, vp.ID)
		require.Equal(t, 1, *vp.ReceiveReturn, vp.ID)
		require.NoError(t, dst.s.HandleDatagram(now, buf[:n]), vp.ID)
		require.Equal(t, vp.Delivered, drain(dst.s), vp.ID)

		switch vp.ID {
		case "P9": // m2..m4 resent under new numbers, all confirmed
			a := eps["A"].s
			require.Equal(t, uint64(3), a.Stats().Retransmits)
			require.Equal(t, 0, a.Pending())
			require.Equal(t, engine.StateEstablished, a.State())
			require.Equal(t, engine.StateEstablished, eps["B"].s.State())
		case "P19": // A adopted B' and resent "inflight" as number 0
			a := eps["A"].s
			require.Equal(t, uint32(0x0b0b0b0c), a.PeerSession())
			require.Equal(t, uint64(1), a.Stats().PeerRestarts)
			require.Equal(t, uint64(1), a.Stats().Retransmits)
		}
	}
}

// TestVectorReceiverCases feeds one endpoint the constructed packets of
// receiver_cases and checks what it accepts, delivers and sends next.
//
// One step differs on purpose: "8205013003" has flag bit 7 set. The
// reference does not check the bit and accepts the packet; this engine
// treats it as an out-of-band datagram (docs/protocols/airhook.md §5) and rejects it. The
// packet is a pure confirmation that changes nothing the later steps
// depend on, so every response still matches.
func TestVectorReceiverCases(t *testing.T) {
	v := loadVectors(t)
	now := vecTime(3000)
	c := newRefSession(t, now, 0x0c0c0c0c)
	buf := make([]byte, DefaultMaxDatagram)
	for i, st := range v.ReceiverCases.Steps {
		now = now.Add(time.Duration(st.AdvanceClockS * float64(time.Second)))
		if st.Input != "" {
			in := unhex(t, st.Input)
			err := c.HandleDatagram(now, in)
			require.NotNil(t, st.ReceiveReturn, i)
			require.Equal(t, 1, *st.ReceiveReturn, i)
			if in[0]&flagOutOfBand != 0 {
				require.ErrorIs(t, err, ErrOutOfBand, "step %d: %s", i, st.Note)
			} else {
				require.NoError(t, err, "step %d: %s", i, st.Note)
			}
			got := []string{}
			for _, d := range drain(c) {
				got = append(got, hex.EncodeToString([]byte(d)))
			}
			require.Equal(t, st.Delivered, got, "step %d: %s", i, st.Note)
		}
		n := c.Poll(now, buf)
		require.Equal(t, st.Response, hex.EncodeToString(buf[:n]), "step %d: %s", i, st.Note)
	}
	st := c.Stats()
	require.Equal(t, uint64(2), st.Duplicates, "the exact duplicate and the older packet")
	require.Equal(t, uint64(1), st.PacketsRejected, "the bit-7 datagram")
	require.Equal(t, engine.StateEstablished, c.State())
}

// TestVectorUDPTrace replays the real-time trace: A starts 2.5 s before B,
// its first packet (three messages) and two header repeats are lost, the
// third header repeat reaches B, B reports messages 0..2 missed, A resends
// them as 3..5, B echoes them, A confirms.
func TestVectorUDPTrace(t *testing.T) {
	v := loadVectors(t)
	tr := v.UDPTrace.Packets
	require.Len(t, tr, 8)
	t0 := vecTime(5000)
	a := newRefSession(t, t0, 0x0a0a0a0a)
	var b *Session
	buf := make([]byte, DefaultMaxDatagram)
	poll := func(s *Session, now time.Time, i int) []byte {
		t.Helper()
		require.False(t, s.Deadline().After(now), "trace %d due", i)
		n := s.Poll(now, buf)
		require.Equal(t, tr[i].Hex, hex.EncodeToString(buf[:n]), "trace %d: %s", i, tr[i].Summary)
		return buf[:n]
	}

	var first Packet
	require.NoError(t, Decode(unhex(t, tr[0].Hex), &first))
	var sent []string
	for _, m := range first.Messages {
		sent = append(sent, string(m))
		require.NoError(t, a.Send(m, engine.SendOptions{}))
	}
	for i := range 3 { // lost: B is not running yet
		poll(a, t0.Add(time.Duration(i)*time.Second), i)
	}
	b = newRefSession(t, t0.Add(2500*time.Millisecond), 0x0b0b0b0b)
	now := t0.Add(3 * time.Second)
	require.NoError(t, b.HandleDatagram(now, poll(a, now, 3)))
	require.NoError(t, a.HandleDatagram(now, poll(b, now, 4)))
	require.NoError(t, b.HandleDatagram(now, poll(a, now, 5)))
	got := drain(b)
	require.Equal(t, sent, got)
	for _, m := range got {
		require.NoError(t, b.Send([]byte(m), engine.SendOptions{}))
	}
	require.NoError(t, a.HandleDatagram(now, poll(b, now, 6)))
	require.Equal(t, sent, drain(a))
	poll(a, now, 7)
	require.Equal(t, 0, a.Pending())
	require.Equal(t, uint64(3), a.Stats().Retransmits)
}
