package avara

import (
	"bytes"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// flowOptions sends message i of a flow with game command i % 37 and
// parameters from i.
func flowOptions(i int) engine.SendOptions {
	return engine.SendOptions{Params: engine.Params{Command: int8(i % 37), P1: int8(i), P2: int16(-i), P3: int32(i * 70001)}}
}

func TestLossyTransferExactlyOnce(t *testing.T) {
	const total = 2000
	cfg := Config{AckRTT: true, HandshakeTimeout: time.Minute}
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

// TestSkipAfter: with Config.SkipAfter a receiver gives up a missing
// serial once that many later messages are held, as the reference does
// (docs/protocols/avara.md §3.3): a message lost for good is skipped and
// the rest delivered in order; without it, nothing is skipped.
func TestSkipAfter(t *testing.T) {
	for _, skip := range []int{0, 4} {
		s := openServer(t, Config{SkipAfter: skip})
		for serial := uint16(4); serial <= 12; serial += 2 {
			require.NoError(t, s.HandleDatagram(t0, datagram(Datagram{Ack: NothingReceived,
				Messages: []Message{{Serial: serial, Command: 1, Data: []byte{byte(serial)}, Sender: 1, HasSender: true}}})))
		}
		if skip == 0 {
			require.Empty(t, drain(s))
			require.Equal(t, 5, s.nHeld)
			continue
		}
		require.Equal(t, []string{"\x04", "\x06", "\x08", "\x0a", "\x0c"}, drain(s), "serial 2 skipped at the 4th held, then 12 in order")
	}
}

func BenchmarkSessionTransfer(b *testing.B) {
	msg := bytes.Repeat([]byte{'x'}, MaxData)
	now := t0
	tx := newSession(b, now, Config{Client: true, AckRTT: true})
	rx := newSession(b, now, Config{Accept: true, ClientID: 1, AckRTT: true})
	buf := make([]byte, MaxDatagram)
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
	for i := 0; tx.State() != engine.StateEstablished; i++ {
		require.Less(b, i, 100)
		now = now.Add(10 * time.Millisecond)
		exchange(tx, rx)
		exchange(rx, tx)
	}
	enginetest.BenchmarkTransfer(b, tx, rx, msg, engine.SendOptions{Params: engine.Params{Command: StreamCommand}}, func() {
		now = now.Add(time.Millisecond)
		exchange(tx, rx)
		exchange(rx, tx)
	})
}

// TestControllerLearnsRTT: the congestion controller gets the round trip
// from the acknowledgements (one event per datagram, its losses checked
// before it ends): over 5 ms links with a 2 ms ack delay, its minimum RTT
// is 10 to 12 ms once messages flow, and its window grows past the
// initial one.
func TestControllerLearnsRTT(t *testing.T) {
	cfg := Config{AckRTT: true, AckDelay: 2 * ms}
	p := established(t, cfg)
	initial := p.A.Stats().Congestion.Cwnd
	for i := range 200 {
		require.NoError(t, p.A.Send(make([]byte, 900), engine.SendOptions{Params: engine.Params{Command: int8(i % 30)}}))
	}
	p.RunUntil(100_000, func() bool { drain(p.B); return p.A.Pending() == 0 })
	st := p.A.Stats().Congestion
	require.GreaterOrEqual(t, st.MinRTT, 10*ms)
	require.LessOrEqual(t, st.MinRTT, 12*ms)
	require.Greater(t, st.Cwnd, initial)
}

// TestKeepAlivePoke: with Config.KeepAlive, an idle client pokes (Ping,
// command 31, p3 0) once per KeepAlive without hearing from the server,
// and the server, whose own KeepAlive is longer, acknowledges each poke at
// once and never pokes: one exchange per interval. Without KeepAlive
// nothing is sent.
func TestKeepAlivePoke(t *testing.T) {
	const intervals = 20
	p := established(t, Config{})
	p.A.cfg.KeepAlive, p.B.cfg.KeepAlive = time.Second, 2*time.Second
	p.Advance(p.Now.Add(time.Second))
	drain(p.B)
	a, b := p.A.Stats().PacketsSent, p.B.Stats().PacketsSent
	var pokes int
	for range intervals {
		p.Advance(p.Now.Add(time.Second))
		for {
			m, ok := p.B.Recv()
			if !ok {
				break
			}
			require.Equal(t, engine.Params{Command: CommandPing}, m.Params)
			pokes++
		}
	}
	require.InDelta(t, intervals, p.A.Stats().PacketsSent-a, 1, "one poke per interval")
	require.InDelta(t, intervals, p.B.Stats().PacketsSent-b, 1, "one acknowledgement per poke, no poke")
	require.InDelta(t, intervals, pokes, 1)
	require.Equal(t, engine.StateEstablished, p.A.State())

	q := established(t, Config{})
	q.Advance(q.Now.Add(time.Second)) // the handshake's last acknowledgements
	a, b = q.A.Stats().PacketsSent, q.B.Stats().PacketsSent
	q.Advance(q.Now.Add(intervals * time.Second))
	require.Equal(t, a, q.A.Stats().PacketsSent, "no keepalive by default")
	require.Equal(t, b, q.B.Stats().PacketsSent)
}
