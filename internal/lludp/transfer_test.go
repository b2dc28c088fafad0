package lludp

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

var flowNumbers = []uint32{4, 12, 0xFF06, 0xFFF0, TestMessage, 0xFFFF0183, StreamMessage, 0xFFFFFFFA}

// flowOptions sends message i of a flow with one of flowNumbers.
func flowOptions(i int) engine.SendOptions {
	return engine.SendOptions{MessageNumber: flowNumbers[i%len(flowNumbers)]}
}

func TestLossyTransferExactlyOnce(t *testing.T) {
	const total = 2000
	cfg := Config{ResendLimit: -1}
	p := newPair(t, cfg, cfg, 15*ms, 0.3, 2026)
	ab, ba := enginetest.NewFlow("ab", total, 1), enginetest.NewFlow("ba", total, 2)
	p.RunFlows(1_000_000, ab, ba, flowOptions)
	for _, s := range []*Session{p.A, p.B} {
		st := s.Stats()
		require.Equal(t, engine.StateEstablished, s.State())
		require.Equal(t, uint64(total), st.MessagesSent)
		require.Equal(t, uint64(total), st.MessagesRecv)
		require.NotZero(t, st.Retransmits)
		require.NotZero(t, st.Duplicates)
	}
	t.Logf("virtual time %v, a: %+v", p.Now.Sub(t0), p.A.Stats())
}

func TestUnreliableAtMostOnce(t *testing.T) {
	p := newPair(t, Config{}, Config{}, 10*ms, 0.3, 7)
	p.RunUntil(1000, func() bool { return p.A.State() == engine.StateEstablished })
	resends := p.A.Stats().Retransmits
	got := map[string]int{}
	for i := range 500 {
		require.NoError(t, p.A.Send(fmt.Appendf(nil, "u%d", i), unrel))
		p.Advance(p.Now.Add(ms))
		for {
			m, ok := p.B.Recv()
			if !ok {
				break
			}
			require.False(t, m.Reliable)
			got[string(m.Data)]++
		}
	}
	for k, n := range got {
		require.Equal(t, 1, n, k)
	}
	require.Less(t, len(got), 450, "about 30 % lost, never resent")
	require.Zero(t, p.A.Pending())
	require.Equal(t, resends, p.A.Stats().Retransmits)
}

// establish returns a client and a server with an open circuit, and the
// exchange function that moves datagrams between them at *now.
func establish(tb testing.TB, now *time.Time) (c, s *Session, exchange func(from, to *Session)) {
	c = newSession(tb, *now, Config{Client: true, Circuit: testCircuit})
	s = newSession(tb, *now, Config{Accept: true})
	buf := make([]byte, DefaultMaxDatagram)
	exchange = func(from, to *Session) {
		for {
			n := from.Poll(*now, buf)
			if n == 0 {
				return
			}
			if err := to.HandleDatagram(*now, buf[:n]); err != nil {
				tb.Fatal(err)
			}
		}
	}
	for c.State() != engine.StateEstablished {
		*now = now.Add(100 * time.Millisecond)
		exchange(c, s)
		exchange(s, c)
	}
	return c, s, exchange
}

func BenchmarkSessionTransfer(b *testing.B) {
	msg := bytes.Repeat([]byte{'x'}, 1000)
	now := t0
	tx, rx, exchange := establish(b, &now)
	enginetest.BenchmarkTransfer(b, tx, rx, msg, rel, func() {
		now = now.Add(time.Millisecond)
		exchange(tx, rx)
		exchange(rx, tx)
	})
}

func BenchmarkParsePacket(b *testing.B) {
	v := loadVectors(b)
	wire := unhex(b, v.Packets[4].Hex) // P5 ObjectUpdate, zerocoded
	var p Packet
	p.Acks = make([]uint32, 0, 255)
	scratch := make([]byte, 0, MaxDecoded)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if err := ParsePacket(wire, &p, scratch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendPacket(b *testing.B) {
	v := loadVectors(b)
	var p Packet
	require.NoError(b, ParsePacket(unhex(b, v.Packets[4].Hex), &p, nil))
	p.Body = append([]byte(nil), p.Body...)
	p.Acks = []uint32{1, 2, 3}
	buf := make([]byte, 0, DefaultMaxDatagram)
	b.SetBytes(int64(len(p.Body)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendPacket(buf[:0], &p)
	}
}

// objectUpdate returns the zero-decoded region of vector P5, a captured
// ObjectUpdate.
func objectUpdate(b *testing.B) []byte {
	var p Packet
	require.NoError(b, ParsePacket(unhex(b, loadVectors(b).Packets[4].Hex), &p, nil))
	return append([]byte{byte(p.Message)}, p.Body...)
}

func BenchmarkZeroEncode(b *testing.B) {
	src := objectUpdate(b)
	buf := make([]byte, 0, 2*len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		buf = ZeroEncode(buf[:0], src)
	}
}

func BenchmarkZeroDecode(b *testing.B) {
	src := ZeroEncode(nil, objectUpdate(b))
	buf := make([]byte, 0, MaxDecoded)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = ZeroDecode(buf[:0], src); err != nil {
			b.Fatal(err)
		}
	}
}
