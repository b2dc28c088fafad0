package porous

import (
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// Frames in hex, for one channel and no bandwidth limit.
func connectHex(nonce uint32) string { return fmt.Sprintf("000000ffffffff%08x", nonce) }
func ackHex(nonce uint32) string     { return fmt.Sprintf("01%08x", nonce) }

const (
	disconnectHex    = "02"
	disconnectAckHex = "03"
)

func pingHex(id uint16) string    { return fmt.Sprintf("04%04x", id) }
func pingAckHex(id uint16) string { return fmt.Sprintf("05%04x", id) }

// dataHex is a Data frame holding one single-fragment packet.
func dataHex(seq uint32, ch uint8, pkt uint32, lead uint16, payload string) string {
	return fmt.Sprintf("06%08x0001"+"00%02x%06x%04x00000000%04x%x", seq, ch, pkt, lead, len(payload), payload)
}

func dataAckHex(seqs ...uint32) string {
	s := fmt.Sprintf("07%04x", len(seqs))
	for _, q := range seqs {
		s += fmt.Sprintf("%08x", q)
	}
	return s
}

func at(ms int) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }

// connected returns two sessions after a simultaneous open at 0–1 ms and
// their pings, answered at 3 ms, with nothing left to send.
func connected(t testing.TB, cfgA, cfgB Config) (a, b *Session) {
	t.Helper()
	cfgA.Nonce, cfgB.Nonce = nonceA, nonceB
	a, b = newSession(t, epoch, cfgA), newSession(t, epoch, cfgB)
	fa, fb := pollHex(t, a, at(0)), pollHex(t, b, at(0))
	feedHex(t, a, at(0), fb...)
	feedHex(t, b, at(0), fa...)
	fa, fb = pollHex(t, a, at(0)), pollHex(t, b, at(0))
	feedHex(t, a, at(1), fb...)
	feedHex(t, b, at(1), fa...)
	fa, fb = pollHex(t, a, at(1)), pollHex(t, b, at(1))
	feedHex(t, a, at(1), fb...)
	feedHex(t, b, at(1), fa...)
	require.Equal(t, engine.StateEstablished, a.State())
	require.Equal(t, engine.StateEstablished, b.State())
	fa, fb = pollHex(t, a, at(1)), pollHex(t, b, at(1))
	feedHex(t, a, at(2), fb...)
	feedHex(t, b, at(2), fa...)
	fa, fb = pollHex(t, a, at(2)), pollHex(t, b, at(2))
	feedHex(t, a, at(3), fb...)
	feedHex(t, b, at(3), fa...)
	require.Empty(t, pollHex(t, a, at(3)))
	require.Empty(t, pollHex(t, b, at(3)))
	require.Equal(t, MinRTO, a.Stats().RTO, "pings gave a 2 ms sample")
	return a, b
}

func TestHandshakeSimultaneousOpen(t *testing.T) {
	a, b := newSession(t, epoch, Config{Nonce: nonceA}), newSession(t, epoch, Config{Nonce: nonceB})
	require.Equal(t, engine.StateHandshake, a.State())
	require.Equal(t, at(0), a.Deadline())
	require.Equal(t, []string{connectHex(nonceA)}, pollHex(t, a, at(0)))
	require.Equal(t, []string{connectHex(nonceB)}, pollHex(t, b, at(0)))
	require.Equal(t, at(500), a.Deadline(), "Connect repeats every 500 ms")

	feedHex(t, a, at(10), connectHex(nonceB))
	feedHex(t, b, at(10), connectHex(nonceA))
	require.Equal(t, []string{ackHex(nonceB)}, pollHex(t, a, at(10)))
	require.Equal(t, []string{ackHex(nonceA)}, pollHex(t, b, at(10)))

	feedHex(t, a, at(20), ackHex(nonceA))
	feedHex(t, b, at(20), ackHex(nonceB))
	require.Equal(t, engine.StateEstablished, a.State())
	require.Equal(t, engine.StateEstablished, b.State())
	require.Equal(t, []string{pingHex(0)}, pollHex(t, a, at(20)))
	require.Equal(t, []string{pingHex(0)}, pollHex(t, b, at(20)))
	feedHex(t, a, at(30), pingHex(0))
	require.Equal(t, []string{pingAckHex(0)}, pollHex(t, a, at(30)))
	require.Equal(t, at(1020), a.Deadline(), "next Ping after KeepAlive")
	require.Equal(t, uint32(nonceB), a.PeerNonce())
}

// TestHandshakeFigure2a: A's ConnectAck is dropped; B repeats its Connect
// and A, already connected, acknowledges it (paper Figure 2a). A's Data,
// sent before B is connected, is ignored by B and resent after the RTO.
func TestHandshakeFigure2a(t *testing.T) {
	a, b := newSession(t, epoch, Config{Nonce: nonceA}), newSession(t, epoch, Config{Nonce: nonceB})
	require.NoError(t, a.Send([]byte("hello"), engine.SendOptions{}))
	require.NoError(t, b.Send([]byte("world"), engine.SendOptions{}))
	require.Equal(t, []string{connectHex(nonceA)}, pollHex(t, a, at(0)))
	require.Equal(t, []string{connectHex(nonceB)}, pollHex(t, b, at(0)))

	feedHex(t, a, at(10), connectHex(nonceB)) // A: request first
	feedHex(t, b, at(10), connectHex(nonceA))
	require.Equal(t, []string{ackHex(nonceB)}, pollHex(t, a, at(10))) // dropped
	require.Equal(t, []string{ackHex(nonceA)}, pollHex(t, b, at(10)))

	feedHex(t, a, at(20), ackHex(nonceA)) // then the acknowledgement
	require.Equal(t, engine.StateEstablished, a.State())
	dataA := dataHex(nonceB, 0, 0, 0, "hello")
	require.Equal(t, []string{pingHex(0), dataA}, pollHex(t, a, at(20)))
	feedHex(t, b, at(30), pingHex(0), dataA) // ignored while connecting
	require.Empty(t, pollHex(t, b, at(30)))
	require.Empty(t, recvStrings(b))
	require.Equal(t, engine.StateHandshake, b.State())

	require.Equal(t, at(500), b.Deadline())
	require.Equal(t, []string{connectHex(nonceB)}, pollHex(t, b, at(500)))
	require.Empty(t, pollHex(t, a, at(500)))
	feedHex(t, a, at(510), connectHex(nonceB))
	require.Equal(t, []string{ackHex(nonceB)}, pollHex(t, a, at(510)), "connected: acknowledge again")
	feedHex(t, b, at(520), ackHex(nonceB))
	require.Equal(t, engine.StateEstablished, b.State())
	dataB := dataHex(nonceA, 0, 0, 0, "world")
	require.Equal(t, []string{pingHex(0), dataB}, pollHex(t, b, at(520)))

	// A's Data times out 600 ms (the initial RTO) after it left.
	require.Equal(t, at(620), a.Deadline())
	feedHex(t, a, at(530), pingHex(0), dataB)
	require.Equal(t, []string{pingAckHex(0), dataAckHex(nonceA)}, pollHex(t, a, at(530)))
	require.Equal(t, []string{"world"}, recvStrings(a))
	require.Equal(t, []string{dataA}, pollHex(t, a, at(620)), "resent unchanged, same frame_seq")
	feedHex(t, b, at(630), dataA)
	require.Equal(t, []string{dataAckHex(nonceB)}, pollHex(t, b, at(630)))
	require.Equal(t, []string{"hello"}, recvStrings(b))
	feedHex(t, a, at(640), dataAckHex(nonceB))
	require.Zero(t, a.Pending())
	require.Equal(t, uint64(1), a.Stats().Retransmits)
}

// TestHandshakeFigure2b: B's Connect is dropped; A receives the
// acknowledgement of its own Connect first, then B's repeated request
// (paper Figure 2b).
func TestHandshakeFigure2b(t *testing.T) {
	a, b := newSession(t, epoch, Config{Nonce: nonceA}), newSession(t, epoch, Config{Nonce: nonceB})
	require.Equal(t, []string{connectHex(nonceA)}, pollHex(t, a, at(0)))
	require.Equal(t, []string{connectHex(nonceB)}, pollHex(t, b, at(0))) // dropped
	feedHex(t, b, at(10), connectHex(nonceA))
	require.Equal(t, []string{ackHex(nonceA)}, pollHex(t, b, at(10)))
	feedHex(t, a, at(20), ackHex(nonceA))
	require.Equal(t, engine.StateHandshake, a.State(), "acknowledged, but no request yet")
	require.Empty(t, pollHex(t, a, at(20)))
	require.Empty(t, pollHex(t, a, at(500)), "no Connect repeat once acknowledged")

	require.Equal(t, []string{connectHex(nonceB)}, pollHex(t, b, at(500)))
	feedHex(t, a, at(510), connectHex(nonceB))
	require.Equal(t, engine.StateEstablished, a.State())
	require.Equal(t, []string{ackHex(nonceB), pingHex(0)}, pollHex(t, a, at(510)))
	feedHex(t, b, at(520), ackHex(nonceB), pingHex(0))
	require.Equal(t, engine.StateEstablished, b.State())
	require.Equal(t, []string{pingAckHex(0), pingHex(0)}, pollHex(t, b, at(520)))
}

// TestDisconnectFigure3: A disconnects; B's DisconnectAck is dropped; A
// repeats its Disconnect and B, now disconnected, acknowledges it (paper
// Figure 3; B trusts the Disconnect at once, as the paper's peers do).
func TestDisconnectFigure3(t *testing.T) {
	a, b := connected(t, Config{}, Config{NoChallenge: true})
	a.Close(at(100))
	require.Equal(t, engine.StateClosing, a.State())
	require.ErrorIs(t, a.Send(nil, engine.SendOptions{}), engine.ErrClosed)
	require.Equal(t, at(100), a.Deadline())
	require.Equal(t, []string{disconnectHex}, pollHex(t, a, at(100)))
	feedHex(t, b, at(110), disconnectHex)
	require.Equal(t, engine.StateClosing, b.State())
	require.Equal(t, []string{disconnectAckHex}, pollHex(t, b, at(110))) // dropped

	require.Equal(t, at(600), a.Deadline())
	require.Empty(t, pollHex(t, a, at(599)))
	require.Equal(t, []string{disconnectHex}, pollHex(t, a, at(600)))
	feedHex(t, b, at(610), disconnectHex)
	require.Equal(t, []string{disconnectAckHex}, pollHex(t, b, at(610)))
	feedHex(t, a, at(620), disconnectAckHex)
	require.Equal(t, engine.StateClosed, a.State())
	require.NoError(t, a.Err())
	require.Zero(t, a.Deadline())
	require.ErrorIs(t, a.HandleDatagram(at(620), []byte{2}), engine.ErrClosed)

	// B leaves TIME-WAIT MinTimeWait after the last Disconnect.
	require.Equal(t, at(1610), b.Deadline())
	require.Empty(t, pollHex(t, b, at(1609)))
	require.Equal(t, engine.StateClosing, b.State())
	require.Empty(t, pollHex(t, b, at(1610)))
	require.Equal(t, engine.StateClosed, b.State())
	require.NoError(t, b.Err())
}

// TestCloseWaitsForData: Close sends what is queued and waits for its
// acknowledgement before Disconnect.
func TestCloseWaitsForData(t *testing.T) {
	a, b := connected(t, Config{}, Config{NoChallenge: true})
	require.NoError(t, a.Send([]byte("last"), engine.SendOptions{}))
	a.Close(at(10))
	d := dataHex(nonceB, 0, 0, 0, "last")
	require.Equal(t, []string{d}, pollHex(t, a, at(10)))
	feedHex(t, b, at(20), d)
	require.Equal(t, []string{dataAckHex(nonceB)}, pollHex(t, b, at(20)))
	feedHex(t, a, at(30), dataAckHex(nonceB))
	require.Equal(t, []string{disconnectHex}, pollHex(t, a, at(30)))
	feedHex(t, b, at(40), disconnectHex)
	require.Equal(t, []string{disconnectAckHex}, pollHex(t, b, at(40)))
	feedHex(t, a, at(50), disconnectAckHex)
	require.Equal(t, engine.StateClosed, a.State())
	require.NoError(t, a.Err())
	require.Equal(t, []string{"last"}, recvStrings(b), "delivered messages stay readable")
}

func TestPeerClosedWithPending(t *testing.T) {
	a, _ := connected(t, Config{NoChallenge: true}, Config{})
	require.NoError(t, a.Send([]byte("x"), engine.SendOptions{}))
	feedHex(t, a, at(10), disconnectHex)
	require.Equal(t, []string{disconnectAckHex}, pollHex(t, a, at(10)), "no Data once disconnected")
	require.ErrorIs(t, a.Send(nil, engine.SendOptions{}), engine.ErrClosed)
	require.Empty(t, pollHex(t, a, at(2000)))
	require.Equal(t, engine.StateClosed, a.State())
	require.ErrorIs(t, a.Err(), engine.ErrPeerClosed)
}

func TestLingerTimeout(t *testing.T) {
	a, _ := connected(t, Config{Linger: 2 * time.Second}, Config{})
	require.NoError(t, a.Send([]byte("x"), engine.SendOptions{}))
	a.Close(at(10))
	require.Equal(t, []string{dataHex(nonceB, 0, 0, 0, "x")}, pollHex(t, a, at(10)))
	// The peer is gone: resends and pings until Linger runs out.
	end, frames := pollUntilClosed(t, a, at(10), at(2010))
	require.Equal(t, at(2010), end)
	require.Equal(t, []string{disconnectHex}, frames, "one last Disconnect")
	require.ErrorIs(t, a.Err(), engine.ErrLingerTimeout)
	require.Equal(t, 1, a.Pending())
}

func TestCloseBeforeHandshake(t *testing.T) {
	a := newSession(t, epoch, Config{Nonce: nonceA})
	require.Equal(t, []string{connectHex(nonceA)}, pollHex(t, a, at(0)))
	a.Close(at(1))
	require.Equal(t, engine.StateClosed, a.State())
	require.NoError(t, a.Err())

	// With the peer's Connect seen, closing sends Disconnect.
	b := newSession(t, epoch, Config{Nonce: nonceB})
	feedHex(t, b, at(0), connectHex(nonceA))
	require.Equal(t, []string{ackHex(nonceA), connectHex(nonceB)}, pollHex(t, b, at(0)))
	b.Close(at(1))
	require.Equal(t, []string{disconnectHex}, pollHex(t, b, at(1)))
	feedHex(t, b, at(2), disconnectAckHex)
	require.Equal(t, engine.StateClosed, b.State())
	require.NoError(t, b.Err())
}

func TestIncompatibleConnect(t *testing.T) {
	a := newSession(t, epoch, Config{Nonce: nonceA, Channels: 2})
	require.Equal(t, []string{"000001ffffffff0a0a0a0a"}, pollHex(t, a, at(0)))
	feedHex(t, a, at(1), connectHex(nonceB)) // one channel
	require.Equal(t, engine.StateClosed, a.State())
	require.ErrorIs(t, a.Err(), engine.ErrIncompatible)
	require.Empty(t, pollHex(t, a, at(1)), "nothing sent")

	b := newSession(t, epoch, Config{Nonce: nonceB})
	feedHex(t, b, at(1), "000100ffffffff0a0a0a0a") // version 1
	require.ErrorIs(t, b.Err(), engine.ErrIncompatible)
}

func TestConnectAckOtherNonce(t *testing.T) {
	a := newSession(t, epoch, Config{Nonce: nonceA})
	pollHex(t, a, at(0))
	feedHex(t, a, at(1), ackHex(0x12345678))
	require.Equal(t, engine.StateClosed, a.State())
	require.ErrorIs(t, a.Err(), engine.ErrRejected)
}

func TestHandshakeDisconnect(t *testing.T) {
	a := newSession(t, epoch, Config{Nonce: nonceA})
	pollHex(t, a, at(0))
	feedHex(t, a, at(1), disconnectHex)
	require.Equal(t, []string{disconnectAckHex}, pollHex(t, a, at(1)))
	pollHex(t, a, at(5000))
	require.Equal(t, engine.StateClosed, a.State())
	require.ErrorIs(t, a.Err(), engine.ErrPeerClosed)
}

func TestAccept(t *testing.T) {
	for _, tc := range []struct {
		name string
		hex  string
		errs []error
	}{
		{"malformed", "0000", []error{engine.ErrRejected, engine.ErrMalformed}},
		{"ping", pingHex(0), []error{engine.ErrRejected}},
		{"data", dataHex(nonceB, 0, 0, 0, "x"), []error{engine.ErrRejected}},
		{"incompatible", "000001ffffffff0a0a0a0a", []error{engine.ErrRejected, engine.ErrIncompatible}},
	} {
		s := newSession(t, epoch, Config{Nonce: nonceB, Accept: true})
		require.Empty(t, pollHex(t, s, at(0)), "an accepting session waits for a Connect")
		err := s.HandleDatagram(at(0), unhex(t, tc.hex))
		for _, e := range tc.errs {
			require.ErrorIs(t, err, e, tc.name)
		}
		require.Equal(t, engine.StateHandshake, s.State(), tc.name)
		require.Equal(t, uint64(1), s.Stats().PacketsRejected)
		require.Empty(t, pollHex(t, s, at(0)), tc.name)
		feedHex(t, s, at(1), connectHex(nonceA))
		require.Equal(t, []string{ackHex(nonceA), connectHex(nonceB)}, pollHex(t, s, at(1)), tc.name)
	}
}

// TestPeerRestart: a Connect with a new nonce while connected is first
// challenged with Pings (engine.ChallengeProbes over an RTO, at least
// engine.ChallengeMin); when the live session does not answer, the next
// Connect of the new peer is adopted as the reference does, or refused
// with engine.ErrPeerRestarted.
func TestPeerRestart(t *testing.T) {
	a, _ := connected(t, Config{}, Config{})
	feedHex(t, a, at(10), connectHex(nonceB)) // a repeat: acknowledged again
	require.Equal(t, []string{ackHex(nonceB)}, pollHex(t, a, at(10)))
	feedHex(t, a, at(10), connectHex(0x0b0b0b02))
	require.Equal(t, []string{pingHex(1)}, pollHex(t, a, at(10)), "the live session is asked")
	late := challengeProbes(t, a, at(10), 1)
	require.Equal(t, []string{pingHex(5)}, pollHex(t, a, late), "only the keepalive: the new peer is not taken before it speaks again")
	feedHex(t, a, late, connectHex(0x0b0b0b02))
	require.Equal(t, []string{ackHex(0x0b0b0b02)}, pollHex(t, a, late))
	require.Equal(t, uint64(1), a.Stats().PeerRestarts)
	require.Equal(t, uint64(1), a.Stats().Challenges)
	require.Equal(t, engine.StateEstablished, a.State())

	r, _ := connected(t, Config{RejectNewPeerSession: true}, Config{})
	require.NoError(t, r.HandleDatagram(at(10), unhex(t, connectHex(0x0b0b0b02))))
	require.Equal(t, []string{pingHex(1)}, pollHex(t, r, at(10)))
	late = challengeProbes(t, r, at(10), 1)
	require.Equal(t, []string{pingHex(5)}, pollHex(t, r, late))
	before := r.Stats()
	require.ErrorIs(t, r.HandleDatagram(late, unhex(t, connectHex(0x0b0b0b02))), engine.ErrPeerRestarted)
	require.Empty(t, pollHex(t, r, late))
	require.Equal(t, before, r.Stats())
	feedHex(t, r, late, connectHex(nonceB))
	require.Equal(t, []string{ackHex(nonceB)}, pollHex(t, r, late))
}

// challengeProbes checks that s, which sent Ping first at start for a
// challenge, repeats it evenly until the challenge's end, which it
// returns, and sends nothing else in between.
func challengeProbes(t *testing.T, s *Session, start time.Time, first uint16) time.Time {
	t.Helper()
	d := max(s.rto(), engine.ChallengeMin)
	for i := 1; i < engine.ChallengeProbes; i++ {
		next := start.Add(time.Duration(i) * d / engine.ChallengeProbes)
		require.Equal(t, next, s.Deadline(), "probe %d", i+1)
		require.Empty(t, pollHex(t, s, next.Add(-time.Microsecond)))
		require.Equal(t, []string{pingHex(first + uint16(i))}, pollHex(t, s, next), "probe %d", i+1)
	}
	require.Equal(t, start.Add(d), s.Deadline(), "the end of the challenge")
	return start.Add(d)
}

// TestChallengeReprobes: the first challenge Ping or its answer may be
// lost; an answer to a later Ping refuses the spoofed Disconnect all the
// same, and the keepalive goes back to its interval.
func TestChallengeReprobes(t *testing.T) {
	a, _ := connected(t, Config{}, Config{})
	feedHex(t, a, at(10), disconnectHex)
	require.Equal(t, []string{pingHex(1)}, pollHex(t, a, at(10)))
	next := a.Deadline()
	require.Equal(t, []string{pingHex(2)}, pollHex(t, a, next))
	feedHex(t, a, next.Add(5*time.Millisecond), pingAckHex(2))
	require.Equal(t, uint64(1), a.Stats().SpoofsRefused)
	require.False(t, a.chal.Running())
	require.Equal(t, next.Add(5*time.Millisecond+DefaultKeepAlive), a.Deadline())
	require.Equal(t, engine.StateEstablished, a.State())
}

// TestSpoofedRestartAndClose: a Connect with a new nonce or a Disconnect
// from the peer's address, when the live session answers the challenge
// Ping, changes nothing: a blind attacker cannot end the session.
func TestSpoofedRestartAndClose(t *testing.T) {
	for _, spoof := range []string{connectHex(0x0b0b0b02), disconnectHex} {
		a, _ := connected(t, Config{RejectNewPeerSession: true}, Config{})
		require.NoError(t, a.HandleDatagram(at(10), unhex(t, spoof)))
		require.Equal(t, []string{pingHex(1)}, pollHex(t, a, at(10)))
		feedHex(t, a, at(20), pingAckHex(1)) // the live peer
		require.Empty(t, pollHex(t, a, at(700)), "no DisconnectAck, no ConnectAck")
		require.Equal(t, engine.StateEstablished, a.State())
		require.Equal(t, uint64(1), a.Stats().SpoofsRefused)
		require.NoError(t, a.HandleDatagram(at(800), unhex(t, spoof)), "challenged again")
		require.Equal(t, []string{pingHex(2)}, pollHex(t, a, at(800)))
	}
}

// TestChallengedDisconnect: a real Disconnect (the peer, disconnecting,
// ignores Pings) is answered when the challenge runs out, an RTO (at
// least engine.ChallengeMin) after it came.
func TestChallengedDisconnect(t *testing.T) {
	a, _ := connected(t, Config{}, Config{})
	feedHex(t, a, at(10), disconnectHex)
	require.Equal(t, []string{pingHex(1)}, pollHex(t, a, at(10)))
	require.Equal(t, engine.StateEstablished, a.State())
	end := challengeProbes(t, a, at(10), 1)
	require.Equal(t, engine.StateEstablished, a.State())
	require.Equal(t, []string{disconnectAckHex}, pollHex(t, a, end))
	require.Equal(t, engine.StateClosing, a.State())
	pollUntilClosed(t, a, end, end.Add(maxTimeWait))
	require.NoError(t, a.Err())
}

// TestDisconnectProvenInOneRTT: A closes; B challenges its Disconnect;
// A, disconnecting, answers the Ping with the proof of its close (a
// ConnectAck of B's nonce XOR (ping id + 1)) instead of ignoring it, so B
// takes the close one round trip after the Disconnect came, not an RTO
// later. B has closed for its reader at once; its TIME-WAIT goes on.
func TestDisconnectProvenInOneRTT(t *testing.T) {
	a, b := connected(t, Config{}, Config{})
	a.Close(at(100))
	require.Equal(t, []string{disconnectHex}, pollHex(t, a, at(100)))
	feedHex(t, b, at(110), disconnectHex)
	require.Equal(t, []string{pingHex(1)}, pollHex(t, b, at(110)), "challenged")
	closed, _ := b.PeerClosed()
	require.False(t, closed)
	feedHex(t, a, at(120), pingHex(1))
	require.Equal(t, []string{ackHex(nonceB ^ 2)}, pollHex(t, a, at(120)), "the proof, not a PingAck")
	feedHex(t, b, at(130), ackHex(nonceB^2))
	closed, err := b.PeerClosed()
	require.True(t, closed)
	require.NoError(t, err)
	require.Equal(t, []string{disconnectAckHex}, pollHex(t, b, at(130)))
	require.Equal(t, engine.StateClosing, b.State(), "TIME-WAIT")
	require.Equal(t, at(130).Add(MinTimeWait), b.Deadline())
	feedHex(t, a, at(140), disconnectAckHex)
	require.Equal(t, engine.StateClosed, a.State())
	require.NoError(t, a.Err())
	require.Empty(t, pollHex(t, b, at(130).Add(MinTimeWait)))
	require.Equal(t, engine.StateClosed, b.State())
	require.NoError(t, b.Err())
	require.Zero(t, b.Stats().SpoofsRefused)
}

// TestCloseProofMustMatch: a ConnectAck that is not the proof for the
// running challenge's Ping (the plain nonce, as a repeat from the
// handshake; another Ping's proof; any proof with no challenge running)
// changes nothing: the Disconnect is taken only when the challenge runs
// out, an RTO after it came.
func TestCloseProofMustMatch(t *testing.T) {
	a, _ := connected(t, Config{}, Config{})
	feedHex(t, a, at(5), ackHex(nonceA^2)) // no challenge running
	feedHex(t, a, at(10), disconnectHex)
	require.Equal(t, []string{pingHex(1)}, pollHex(t, a, at(10)))
	feedHex(t, a, at(15), ackHex(nonceA), ackHex(nonceA^1), ackHex(nonceA^3), ackHex(nonceB^2))
	require.Empty(t, pollHex(t, a, at(15)))
	closed, _ := a.PeerClosed()
	require.False(t, closed)
	end := challengeProbes(t, a, at(10), 1)
	require.Equal(t, []string{disconnectAckHex}, pollHex(t, a, end))
	closed, _ = a.PeerClosed()
	require.True(t, closed)
}

func TestTimeouts(t *testing.T) {
	s := newSession(t, epoch, Config{Nonce: nonceA, HandshakeTimeout: 3 * time.Second})
	pollUntilClosed(t, s, at(0), at(3000))
	require.ErrorIs(t, s.Err(), engine.ErrHandshakeTimeout)

	// Watchdog: reset by any frame; 20 s of silence end the session.
	a, _ := connected(t, Config{}, Config{})
	feedHex(t, a, at(5000), pingHex(9))
	pollUntilClosed(t, a, at(5000), at(25000))
	require.ErrorIs(t, a.Err(), engine.ErrIdleTimeout)
	var te interface{ Timeout() bool }
	require.ErrorAs(t, a.Err(), &te)
}
