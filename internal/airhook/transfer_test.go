package airhook

import (
	"bytes"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

func TestLossyTransferExactlyOnce(t *testing.T) {
	const total = 2000
	p := newPair(t, Config{Session: 0x11111111}, Config{Session: 0x22222222}, 15*time.Millisecond, 0.3, 2026)
	ab, ba := enginetest.NewFlow("ab", total, 1), enginetest.NewFlow("ba", total, 2)
	p.RunFlows(200_000, ab, ba, nil)
	for _, s := range []*Session{p.A, p.B} {
		st := s.Stats()
		require.Equal(t, engine.StateEstablished, s.State())
		require.Equal(t, uint64(total), st.MessagesSent)
		require.Equal(t, uint64(total), st.MessagesRecv)
		require.NotZero(t, st.Retransmits)
		require.NotZero(t, st.SRTT)
	}
	t.Logf("virtual time %v, a: %+v", p.Now.Sub(time.Unix(1_000_000, 0)), p.A.Stats())
}

func BenchmarkSessionTransfer(b *testing.B) {
	msg := bytes.Repeat([]byte{'x'}, 256)
	now := time.Unix(0, 0)
	tx, err := New(now, Config{Session: 1})
	require.NoError(b, err)
	rx, err := New(now, Config{Session: 2})
	require.NoError(b, err)
	buf := make([]byte, DefaultMaxDatagram)
	exchange := func(from, to *Session) {
		for {
			n := from.Poll(now, buf)
			if n == 0 {
				return
			}
			if err := to.HandleDatagram(now, buf[:n]); err != nil {
				b.Fatal(err)
			}
		}
	}
	enginetest.BenchmarkTransfer(b, tx, rx, msg, engine.SendOptions{}, func() {
		now = now.Add(time.Millisecond)
		exchange(tx, rx)
		exchange(rx, tx)
	})
}

// TestTrimWhileIdle: once a lossy transfer is over, Trim shrinks the log
// to the records of the packets unconfirmed (the newest, which confirmed
// nothing new, may stay so) and frees the table of messages in flight; the next transfer, over the same lossy link, is delivered
// exactly once.
func TestTrimWhileIdle(t *testing.T) {
	const total = 500
	p := newPair(t, Config{Session: 0x11111111}, Config{Session: 0x22222222}, 15*time.Millisecond, 0.3, 7)
	p.RunFlows(100_000, enginetest.NewFlow("ab", total, 1), enginetest.NewFlow("ba", total, 2), nil)
	p.Advance(p.Now.Add(5 * time.Second)) // every acknowledgement in
	for _, s := range []*Session{p.A, p.B} {
		require.Greater(t, len(s.log), firstLog, "the transfer grew the log")
		s.Trim()
		require.LessOrEqual(t, len(s.log), 2)
		require.Nil(t, s.waiting)
	}
	p.RunFlows(100_000, enginetest.NewFlow("ab", total, 3), enginetest.NewFlow("ba", total, 4), nil)
	for _, s := range []*Session{p.A, p.B} {
		require.Equal(t, engine.StateEstablished, s.State())
		require.Equal(t, uint64(2*total), s.Stats().MessagesRecv)
	}
}

// TestIdleLogStaysSmall: over 300 keepalive intervals of a pair idle
// after a transfer (one side probing, the other answering, as streams
// do), the probes never confirm the answers, yet Trim keeps each log at
// one record, all the unconfirmed answers being alike; a lossy transfer
// afterwards is delivered exactly once.
func TestIdleLogStaysSmall(t *testing.T) {
	a := Config{Session: 0x11111111, KeepAlive: time.Second, IdleTimeout: 3 * time.Second}
	b := Config{Session: 0x22222222, KeepAlive: 2 * time.Second, IdleTimeout: 3 * time.Second}
	p := newPair(t, a, b, 10*time.Millisecond, 0, 1)
	p.RunFlows(100_000, enginetest.NewFlow("ab", 50, 3), enginetest.NewFlow("ba", 50, 4), nil)
	for i := range 300 {
		p.Advance(p.Now.Add(time.Second))
		for _, s := range []*Session{p.A, p.B} {
			require.Equal(t, engine.StateEstablished, s.State())
			s.Trim()
			require.Len(t, s.log, 1, "interval %d", i)
		}
	}
	p.AB.Loss, p.BA.Loss = 0.3, 0.3
	p.RunFlows(100_000, enginetest.NewFlow("ab", 300, 1), enginetest.NewFlow("ba", 300, 2), nil)
}

// TestIdleLogAfterPeerMessage: the answering side's last packet before
// the pair idles confirms the prober's last message, and nothing
// confirms it (the prober has nothing new to say, and its probes confirm
// nothing), so the confirmed packet knew fewer of the peer's messages
// than those after it; Trim still keeps one record, the confirmed one's
// nextIn kept apart, and lossy transfers afterwards, with the log grown
// from that record, are delivered exactly once.
func TestIdleLogAfterPeerMessage(t *testing.T) {
	a := Config{Session: 0x11111111, KeepAlive: time.Second, IdleTimeout: 3 * time.Second}
	b := Config{Session: 0x22222222, KeepAlive: 2 * time.Second, IdleTimeout: 3 * time.Second}
	p := newPair(t, a, b, 10*time.Millisecond, 0, 1)
	p.RunFlows(100_000, enginetest.NewFlow("ab", 50, 3), enginetest.NewFlow("ba", 50, 4), nil)
	p.RunFlows(100_000, enginetest.NewFlow("last", 1, 5), enginetest.NewFlow("none", 0, 6), nil)
	p.Advance(p.Now.Add(100 * time.Millisecond))
	require.NotEqual(t, p.B.confirmedIn(), p.B.rec(uint8(p.B.lastSent)).nextIn, "B's last packet is unconfirmed and knows one more message")
	for i := range 300 {
		p.Advance(p.Now.Add(time.Second))
		for _, s := range []*Session{p.A, p.B} {
			require.Equal(t, engine.StateEstablished, s.State())
			in, last := s.confirmedIn(), *s.rec(uint8(s.lastSent))
			s.Trim()
			require.Len(t, s.log, 1, "interval %d", i)
			require.Equal(t, in, s.confirmedIn(), "interval %d", i)
			require.Equal(t, last, s.log[0], "interval %d", i)
		}
	}
	p.AB.Loss, p.BA.Loss = 0.3, 0.3
	p.RunFlows(100_000, enginetest.NewFlow("ab", 300, 1), enginetest.NewFlow("ba", 300, 2), nil)
	for i := range 20 {
		p.Advance(p.Now.Add(time.Second))
		p.A.Trim()
		p.B.Trim()
		p.RunFlows(100_000, enginetest.NewFlow("ab", 20, uint64(10+i)), enginetest.NewFlow("ba", i%2, uint64(40+i)), nil)
	}
}
