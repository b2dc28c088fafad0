package toy

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

var epoch = time.Unix(1_000_000, 0)

// setup returns the Setup of a client (or a server if accept) whose
// random source yields the bytes of id, repeated.
func setup(accept bool, id byte) *engine.Setup {
	return &engine.Setup{Now: epoch, Accept: accept, MTU: 1400, Rand: bytes.NewReader(bytes.Repeat([]byte{id}, 8)),
		KeepAlive: time.Second, IdleTimeout: 3 * time.Second, HandshakeTimeout: 2 * time.Second, Linger: time.Second}
}

func newEngine(t testing.TB, s *engine.Setup) *Engine {
	t.Helper()
	e, err := New(s)
	require.NoError(t, err)
	return e
}

// newPair returns a client A and a server B joined by links of 5 ms and
// the given loss, seeded with seed.
func newPair(t testing.TB, loss float64, seed uint64) *enginetest.Pair[*Engine] {
	p := enginetest.NewPair(t, epoch, newEngine(t, setup(false, 0xAA)), newEngine(t, setup(true, 0xBB)),
		5*time.Millisecond, loss, seed, 1400)
	p.Epoch = epoch
	return p
}

// TestHandshake: the exact datagrams of the handshake, the server
// opening only on the echo, and a ping answered by an ack.
func TestHandshake(t *testing.T) {
	c, s := newEngine(t, setup(false, 0xAA)), newEngine(t, setup(true, 0xBB))
	hello := enginetest.PollHex(c, epoch, 1400)
	require.Equal(t, "01aaaaaaaaaaaaaaaa", hello)
	require.Equal(t, "", enginetest.PollHex(c, epoch, 1400))
	require.Equal(t, epoch.Add(RTOInitial), c.Deadline(), "the hello is repeated after the RTO")
	require.True(t, IsOpening(unhex(t, hello)))

	require.NoError(t, s.HandleDatagram(epoch, unhex(t, hello)))
	cookie := enginetest.PollHex(s, epoch, 1400)
	require.Equal(t, "02aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbb", cookie)
	require.Equal(t, engine.StateHandshake, s.State())

	require.ErrorIs(t, c.HandleDatagram(epoch, unhex(t, "02ababababababababbbbbbbbbbbbbbbbb")), engine.ErrRejected, "another nonce")
	require.NoError(t, c.HandleDatagram(epoch, unhex(t, cookie)))
	require.Equal(t, engine.StateEstablished, c.State())
	echo := enginetest.PollHex(c, epoch, 1400)
	require.Equal(t, "05bbbbbbbbbbbbbbbb", echo)

	require.ErrorIs(t, s.HandleDatagram(epoch, unhex(t, "05bbbbbbbbbbbbbbba")), engine.ErrRejected, "a wrong cookie")
	require.Equal(t, engine.StateHandshake, s.State())
	require.NoError(t, s.HandleDatagram(epoch, unhex(t, echo)))
	require.Equal(t, engine.StateEstablished, s.State())
	require.Equal(t, "04bbbbbbbbbbbbbbbb000000000000000000000000", enginetest.PollHex(s, epoch, 1400))
	require.Equal(t, uint64(2), s.Stats().PacketsRejected+c.Stats().PacketsRejected)
}

// TestBlindHello: a server answers each hello with one cookie and keeps
// no timer; without the echo it never opens and ends at its handshake
// timeout.
func TestBlindHello(t *testing.T) {
	s := newEngine(t, setup(true, 0xBB))
	hello := unhex(t, "01aaaaaaaaaaaaaaaa")
	require.NoError(t, s.HandleDatagram(epoch, hello))
	require.Equal(t, cookieLen, s.Poll(epoch, make([]byte, 1400)))
	require.Equal(t, epoch.Add(2*time.Second), s.Deadline())
	require.ErrorIs(t, s.HandleDatagram(epoch, unhex(t, "01aaaaaaaaaaaaaaab")), engine.ErrRejected, "another client")
	require.Zero(t, s.Poll(epoch.Add(time.Second), make([]byte, 1400)))
	require.Zero(t, s.Poll(epoch.Add(2*time.Second), make([]byte, 1400)))
	require.Equal(t, engine.StateClosed, s.State())
	require.ErrorIs(t, s.Err(), engine.ErrHandshakeTimeout)
	require.Equal(t, uint64(1), s.Stats().PacketsSent)
}

// TestLossRecovery: 2000 messages each way over links losing 20 % of
// the datagrams arrive exactly once, in order, and the ends close
// gracefully.
func TestLossRecovery(t *testing.T) {
	p := newPair(t, 0.2, 7)
	ab, ba := enginetest.NewFlow("ab", 2000, 1), enginetest.NewFlow("ba", 2000, 2)
	var order []string
	p.RunUntil(1_000_000, func() bool {
		ab.Feed(t, p.A, nil)
		ba.Feed(t, p.B, nil)
		for _, m := range enginetest.Drain(p.B) {
			order = append(order, m)
			ab.Got[m]++
			ab.Received++
		}
		ba.Collect(t, p.A)
		return ab.Done() && ba.Done() && p.A.Pending() == 0 && p.B.Pending() == 0
	})
	require.Equal(t, ab.Want, ab.Got)
	require.Equal(t, ba.Want, ba.Got)
	for i, m := range order {
		require.Equal(t, i, int(enginetest.ParseUint(t, m[3:8], 10, 32)), "message %d out of order", i)
	}
	st := p.A.Stats()
	require.Positive(t, st.Retransmits)
	require.Zero(t, p.A.Stats().PacketsRejected+p.B.Stats().PacketsRejected)

	p.A.Close(p.Now)
	p.RunUntil(10_000, func() bool { return p.A.State() == engine.StateClosed && p.B.State() == engine.StateClosed })
	require.NoError(t, p.A.Err())
	require.NoError(t, p.B.Err())
}

// TestPeerClosedWithPending: a peer that closes while messages of ours
// are unconfirmed ends us with ErrPeerClosed; one that closes on a quiet
// association ends us gracefully, and the close-ack ends it.
func TestPeerClosedWithPending(t *testing.T) {
	p := newPair(t, 0, 1)
	p.RunUntil(100, func() bool { return p.B.State() == engine.StateEstablished })
	p.AB.Cut = true // A's data never arrives
	require.NoError(t, p.A.Send([]byte("lost"), engine.SendOptions{}))
	p.B.Close(p.Now)
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateClosed })
	require.ErrorIs(t, p.A.Err(), engine.ErrPeerClosed)

	p = newPair(t, 0, 1)
	p.RunUntil(100, func() bool { return p.B.State() == engine.StateEstablished })
	p.B.Close(p.Now)
	require.ErrorIs(t, p.B.Send([]byte("x"), engine.SendOptions{}), engine.ErrClosed)
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateClosed && p.B.State() == engine.StateClosed })
	require.NoError(t, p.A.Err())
	require.NoError(t, p.B.Err())
	require.True(t, p.Now.Before(epoch.Add(100*time.Millisecond)), "closed by the close-ack, not the linger")
}

// TestIdleAndKeepAlive: pings keep a quiet association alive; a silent
// peer ends it at the idle timeout.
func TestIdleAndKeepAlive(t *testing.T) {
	p := newPair(t, 0, 1)
	p.Advance(epoch.Add(time.Minute))
	require.Equal(t, engine.StateEstablished, p.A.State())
	require.Equal(t, engine.StateEstablished, p.B.State())
	p.AB.Cut, p.BA.Cut = true, true
	cut := p.Now
	p.RunUntil(100, func() bool { return p.A.State() == engine.StateClosed })
	require.ErrorIs(t, p.A.Err(), engine.ErrIdleTimeout)
	require.True(t, p.Now.Sub(cut) <= 3*time.Second, "%v after the cut", p.Now.Sub(cut))
}

// TestRecvClosed: while the receiver takes no new data it acknowledges
// none; once open again the data arrives.
func TestRecvClosed(t *testing.T) {
	p := newPair(t, 0, 1)
	p.RunUntil(100, func() bool { return p.B.State() == engine.StateEstablished })
	p.B.SetRecvOpen(false)
	require.NoError(t, p.A.Send([]byte("held"), engine.SendOptions{}))
	p.Advance(p.Now.Add(100 * time.Millisecond))
	require.Nil(t, enginetest.Drain(p.B))
	require.Equal(t, 1, p.A.Pending())
	require.Positive(t, p.B.Stats().Refused)
	p.B.SetRecvOpen(true)
	p.RunUntil(1000, func() bool { return p.A.Pending() == 0 })
	require.Equal(t, []string{"held"}, enginetest.Drain(p.B))
}

// TestSendErrors: what Send refuses.
func TestSendErrors(t *testing.T) {
	e := newEngine(t, setup(false, 1))
	require.Equal(t, 1400-dataHeader, e.Capabilities().MaxMessage)
	require.ErrorIs(t, e.Send(nil, engine.SendOptions{}), engine.ErrEmptyMessage)
	require.ErrorIs(t, e.Send(make([]byte, 1400-dataHeader+1), engine.SendOptions{}), engine.ErrMessageTooLarge)
	require.ErrorIs(t, e.Send([]byte("x"), engine.SendOptions{Channel: 1}), engine.ErrUnsupported)
	require.ErrorIs(t, e.Send([]byte("x"), engine.SendOptions{Delivery: engine.Unreliable}), engine.ErrUnsupported)
	for range MaxQueued {
		require.NoError(t, e.Send([]byte("x"), engine.SendOptions{}))
	}
	require.ErrorIs(t, e.Send([]byte("x"), engine.SendOptions{}), engine.ErrQueueFull)
	e.Close(epoch)
	require.ErrorIs(t, e.Err(), engine.ErrLingerTimeout, "closed before the handshake with messages queued")
}

// TestGarbage: random datagrams, and copies of the handshake's and
// pings' datagrams with bits flipped, never panic, never break the
// bookkeeping, and the flows still complete exactly once. (A listener
// builds a server only for a real hello, which the server takes first;
// here the handshake completes before the garbage. Flipped copies of
// data and acks are left out: toy has no checksum beyond UDP's, so a
// copy whose cookie is intact is taken as the peer's.)
func TestGarbage(t *testing.T) {
	p := newPair(t, 0.1, 3)
	p.RunUntil(1000, func() bool { return p.B.State() == engine.StateEstablished })
	g := &enginetest.Garbage{Rng: rand.New(rand.NewPCG(5, 6)), MaxLen: 64,
		Keep: func(b []byte) bool { return len(b) <= cookieLen }}
	ab, ba := enginetest.NewFlow("ab", 300, 1), enginetest.NewFlow("ba", 300, 2)
	check := func() {
		for _, e := range []*Engine{p.A, p.B} {
			require.GreaterOrEqual(t, e.unconfirmed, 0)
			require.LessOrEqual(t, e.Pending(), MaxQueued)
			require.LessOrEqual(t, e.sndNxt-e.sndUna, uint32(Window))
		}
	}
	p.Garble(g, 3000, func() { ab.Feed(t, p.A, nil); ba.Feed(t, p.B, nil) },
		func() { ab.Collect(t, p.B); ba.Collect(t, p.A); check() })
	p.RunFlows(1_000_000, ab, ba, nil)
	require.Positive(t, p.A.Stats().PacketsRejected)
}

// TestDescribe: the decoded fields of a data datagram, and a malformed
// one.
func TestDescribe(t *testing.T) {
	d := Describe(unhex(t, "03bbbbbbbbbbbbbbbb0000000768690a"))
	require.NoError(t, d.Err)
	require.Equal(t, "data", d.Type)
	require.Equal(t, uint32(7), d.Fields[1].Value)
	require.Equal(t, 3, d.Frames[0].Fields[0].Value)
	require.ErrorIs(t, Describe(unhex(t, "04bbbbbbbbbbbbbbbb00")).Err, engine.ErrMalformed)
	require.ErrorIs(t, Describe(unhex(t, "03bbbbbbbbbbbbbbbb00000007")).Err, engine.ErrMalformed, "data without a message")
}

// FuzzDecode: no input panics the decoder or Describe.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("\x01aaaaaaaa"))
	f.Add([]byte("\x04bbbbbbbb\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x03"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decode(b)
		_ = Describe(b)
		e := newEngine(t, setup(true, 0xBB))
		_ = e.HandleDatagram(epoch, b)
		_ = e.Poll(epoch, make([]byte, 1400))
	})
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}
