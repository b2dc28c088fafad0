package wirefox

import (
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// The Configs of the root's conns: a message conn may talk to the
// reference, a stream talks to this package.
var (
	messageConn = Config{ReferencePeer: true}
	streamConn  = Config{Challenge: true, RepeatAcks: true, SendLimit: -1}
)

// handshakeDgram is an out-of-band CONNECT_ATTEMPT of op from peer.
func handshakeDgram(peer uint64, op uint8, data ...byte) []byte {
	return AppendOOB(nil, 0, AppendHandshake(nil, &Handshake{Version: Version, PeerID: peer, Op: op, Data: data}))
}

// TestBlindSourceNotEstablished: a blind source sends INITIAL_CLIENT,
// UNENCRYPTED_ACK and connected datagrams acknowledging every datagram ID
// it can guess (the reference's first IDs, the ends of the random range),
// from an address that never receives anything. The server never becomes
// established, takes none of its packets, sends its probe proofAttempts
// times and ends with engine.ErrHandshakeTimeout 2 s after the
// UNENCRYPTED_ACK.
func TestBlindSourceNotEstablished(t *testing.T) {
	s := newSession(t, t0, Config{Accept: true, ReferencePeer: true})
	require.NoError(t, s.HandleDatagram(t0, handshakeDgram(7, OpInitialClient, 0)))
	require.NotEmpty(t, poll(t, s, t0)) // INITIAL_SERVER, to the spoofed address
	require.NoError(t, s.HandleDatagram(t0, handshakeDgram(7, OpUnencryptedAck)))
	guesses := []uint32{0, 1, 2, 1<<31 + 1, 1<<31 + 2, 1<<32 - 1}
	var dgID uint32
	probes := 0
	now := t0
	for s.State() != engine.StateClosed {
		require.False(t, now.After(t0.Add(time.Minute)))
		for b := poll(t, s, now); b != ""; b = poll(t, s, now) {
			probes++
		}
		if s.State() == engine.StateClosed {
			break
		}
		d := Datagram{Flags: FlagDAT | FlagLNK, ID: dgID, Acks: guesses}
		d.Data = AppendPacket(nil, &Packet{ID: dgID, Options: OptReliable, Body: []byte{CmdUser, 'x'}})
		d.DataLen = uint16(len(d.Data))
		require.NoError(t, s.HandleDatagram(now, AppendDatagram(nil, &d)), "%x", AppendDatagram(nil, &d))
		dgID++
		require.Equal(t, engine.StateHandshake, s.State())
		require.Empty(t, drain(s))
		if d := s.Deadline(); !d.IsZero() {
			now = minTime(d, now.Add(50*ms))
		}
	}
	require.ErrorIs(t, s.Err(), engine.ErrHandshakeTimeout)
	require.Equal(t, proofAttempts, probes)
	require.Equal(t, t0.Add(proofAttempts*proofInterval), now)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// TestSpoofedRestartMessageConn: on a live message conn (which does not
// challenge a close), a spoofed INITIAL_CLIENT with a new PeerID, sent as
// the reference repeats it (4 times 2 s apart), is challenged: the live
// client acknowledges the probe, the conn stays established and still
// carries messages both ways.
func TestSpoofedRestartMessageConn(t *testing.T) {
	p := newPair(t, messageConn, messageConn, 10*ms, 0, 3)
	connect(t, p)
	start := p.Now
	for i := range HandshakeAttempts {
		p.Advance(start.Add(time.Duration(i) * HandshakeInterval))
		require.NoError(t, p.B.HandleDatagram(p.Now, handshakeDgram(0x5b00f, OpInitialClient, 0)))
	}
	p.Advance(p.Now.Add(3 * time.Second))
	require.Equal(t, engine.StateEstablished, p.B.State())
	require.Equal(t, engine.StateEstablished, p.A.State())
	require.NotZero(t, p.B.Stats().SpoofsRefused)
	require.NoError(t, p.A.Send([]byte{CmdUser, 'a'}, engine.SendOptions{}))
	require.NoError(t, p.B.Send([]byte{CmdUser, 'b'}, engine.SendOptions{}))
	p.Advance(p.Now.Add(time.Second))
	require.Equal(t, []string{"\x0fa"}, drain(p.B))
	require.Equal(t, []string{"\x0fb"}, drain(p.A))
}

// TestGenuineRestartMessageConn: the reference client restarted (the old
// one is gone, so nothing answers the probe) and repeats its new
// INITIAL_CLIENT every 2 s: the challenge runs out after
// engine.ChallengeMin and the copy 2 s after the first ends the session
// with engine.ErrPeerRestarted, so that the listener takes it as a new
// client's.
func TestGenuineRestartMessageConn(t *testing.T) {
	p := newPair(t, messageConn, messageConn, 10*ms, 0, 4)
	connect(t, p)
	p.AB.Cut, p.BA.Cut = true, true
	start := p.Now
	hello := handshakeDgram(0x5b00f, OpInitialClient, 0)
	require.NoError(t, p.B.HandleDatagram(p.Now, hello))
	p.Advance(start.Add(HandshakeInterval))
	require.Equal(t, engine.StateEstablished, p.B.State())
	require.ErrorIs(t, p.B.HandleDatagram(p.Now, hello), engine.ErrPeerRestarted)
}

// TestReplayedOldSession: an attacker records a whole session of its own
// with the server (handshake, messages, DISCONNECT_REQUEST) and replays
// it from the address of a live client. Neither a message conn nor a
// stream takes anything of it: the live conn stays established and
// delivers exactly its own messages, in order.
func TestReplayedOldSession(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{{"message", messageConn}, {"stream", streamConn}} {
		t.Run(c.name, func(t *testing.T) {
			attacker := c.cfg
			attacker.PeerID = 0x01d
			old := newPair(t, attacker, c.cfg, 10*ms, 0, 5)
			connect(t, old)
			for i := range 300 {
				require.NoError(t, old.A.Send([]byte{CmdUser, 'o', byte(i)}, engine.SendOptions{Channel: 1}))
			}
			old.A.Close(old.Now)
			old.RunUntil(100_000, func() bool { return old.A.State() == engine.StateClosed })
			require.Len(t, drain(old.B), 300)
			replay := old.AB.Log

			p := newPair(t, c.cfg, c.cfg, 10*ms, 0, 6)
			connect(t, p)
			var want []string
			send := func(from, to int) {
				for i := from; i < to; i++ {
					m := fmt.Sprintf("\x0flive %d", i)
					require.NoError(t, p.A.Send([]byte(m), engine.SendOptions{Channel: 1}))
					want = append(want, m)
				}
			}
			send(0, 10)
			p.Advance(p.Now.Add(time.Second))
			for _, b := range replay {
				_ = p.B.HandleDatagram(p.Now, b)
			}
			send(10, 20)
			p.Advance(p.Now.Add(5 * time.Second))
			require.Equal(t, engine.StateEstablished, p.B.State(), "%v", p.B.Err())
			require.Equal(t, engine.StateEstablished, p.A.State(), "%v", p.A.Err())
			require.Equal(t, want, drain(p.B))
			require.Zero(t, p.A.Pending())
		})
	}
}

// TestProvenAbove: a server whose layer above proves the client's address
// (Config.ProvenAbove, rudp's streams) is established on UNENCRYPTED_ACK,
// as the reference's is, and takes the client's first data at once; one
// without waits for the proof and drops that data unacknowledged.
func TestProvenAbove(t *testing.T) {
	for _, above := range []bool{true, false} {
		s := newSession(t, t0, Config{Accept: true, ProvenAbove: above})
		require.NoError(t, s.HandleDatagram(t0, handshakeDgram(7, OpInitialClient, 0)))
		require.NotEmpty(t, poll(t, s, t0))
		require.NoError(t, s.HandleDatagram(t0, handshakeDgram(7, OpUnencryptedAck)))
		d := Datagram{Flags: FlagDAT | FlagLNK}
		d.Data = AppendPacket(nil, &Packet{Options: OptReliable, Body: []byte{CmdUser, 'x'}})
		d.DataLen = uint16(len(d.Data))
		require.NoError(t, s.HandleDatagram(t0, AppendDatagram(nil, &d)))
		if above {
			require.Equal(t, engine.StateEstablished, s.State())
			require.Len(t, drain(s), 1)
		} else {
			require.Equal(t, engine.StateHandshake, s.State())
			require.Empty(t, drain(s))
		}
	}
}

// TestSpoofFloodPacedMessageConn: a blind attacker sends a message conn
// (Config.ReferencePeer, paced as the reference reads) a spoofed
// INITIAL_CLIENT from its client's address every 5 ms, each starting a
// challenge as soon as the last was answered. The server sends at most
// one keepalive per probeInterval, and messages keep flowing both ways:
// each keepalive, answered at once, would otherwise put the next data
// datagram of both ends off by refDataGap, for good.
func TestSpoofFloodPacedMessageConn(t *testing.T) {
	p := newPair(t, messageConn, messageConn, ms, 0, 5)
	connect(t, p)
	start := p.Now
	const span = 5 * time.Second
	hello := handshakeDgram(0x5b00f, OpInitialClient, 0)
	exchanged, waiting := 0, false
	for p.Now.Before(start.Add(span)) {
		require.NoError(t, p.B.HandleDatagram(p.Now, hello))
		if !waiting {
			msg := fmt.Appendf(nil, "\x0fping %d", exchanged)
			require.NoError(t, p.A.Send(msg, engine.SendOptions{}))
			waiting = true
		}
		p.Advance(p.Now.Add(5 * ms))
		for _, m := range drain(p.B) {
			require.Equal(t, fmt.Sprintf("\x0fping %d", exchanged), m)
			require.NoError(t, p.B.Send([]byte(m+"!"), engine.SendOptions{}))
		}
		for _, m := range drain(p.A) {
			require.Equal(t, fmt.Sprintf("\x0fping %d!", exchanged), m)
			exchanged, waiting = exchanged+1, false
		}
	}
	keepalives := 0
	var d Datagram
	for _, b := range p.BA.Log {
		if ParseDatagram(b, &d) == nil && d.Flags&FlagDAT != 0 && len(d.Data) == 2 && d.Data[0] == 0 && d.Data[1] == 0 {
			keepalives++
		}
	}
	st := p.B.Stats()
	t.Logf("%d exchanges, %d keepalives, %d challenges, %d spoofs refused in %v", exchanged, keepalives, st.Challenges, st.SpoofsRefused, span)
	require.Equal(t, engine.StateEstablished, p.B.State())
	require.LessOrEqual(t, keepalives, int(span/p.B.probeInterval())+1)
	require.Greater(t, exchanged, 100)
	require.Positive(t, st.SpoofsRefused)
}
