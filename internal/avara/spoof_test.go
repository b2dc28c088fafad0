package avara

import (
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// forge encodes d as an attacker who guessed the session's checksum
// version (1 in 65,536) forges it: with ReliablePeer, the session's.
func forge(reliable bool, d Datagram) []byte {
	v := uint16(DefaultVersion)
	if reliable {
		v = sessionVersion(v, v1Seed)
	}
	return AppendDatagram(nil, &d, v)
}

// TestBlindSerialSweep: as a transfer of 300 messages starts, a blind
// attacker sends the receiver 128 messages from the sender's address,
// 512 serials apart, so that some land in any window, with the checksum
// of the session (see TestReplayOldSession for what happens to others).
// Protection (ReliablePeer): two different copies of one serial end the
// session with ErrSpoofed. The receiver delivers exactly
// the sender's messages, in order, or ends with ErrSpoofed; it never
// delivers a forged message silently, and never stalls. Without
// ReliablePeer (no comparison) the forged
// messages take the place of the sender's.
func TestBlindSerialSweep(t *testing.T) {
	for _, reliable := range []bool{false, true} {
		for _, offset := range []uint16{0, 10, 100, 300, 510} {
			t.Run(fmt.Sprint(reliable, offset), func(t *testing.T) {
				blindSweep(t, reliable, offset)
			})
		}
	}
}

func blindSweep(t *testing.T, reliable bool, offset uint16) {
	cfg := streamConfig(true)
	cfg.ReliablePeer = reliable
	p := established(t, cfg)
	var want, got []string
	for i := range 300 {
		msg := fmt.Sprintf("m%03d", i)
		want = append(want, msg)
		require.NoError(t, p.A.Send([]byte(msg), engine.SendOptions{Params: engine.Params{Command: StreamCommand}}))
	}
	for k := range uint16(128) {
		d := Datagram{Ack: NothingReceived, Messages: []Message{{Serial: k*512 + offset, Command: StreamCommand, Data: []byte("forged")}}}
		p.AB.Queue = append(p.AB.Queue, enginetest.Datagram{At: p.Now, Data: forge(reliable, d)})
	}
	p.RunUntil(1_000_000, func() bool {
		got = append(got, drain(p.B)...)
		return len(got) == len(want) || p.B.State() == engine.StateClosed
	})
	if !reliable {
		require.NoError(t, p.B.Err())
		require.NotEqual(t, want, got, "forged messages delivered")
		return
	}
	if p.B.State() == engine.StateClosed {
		require.ErrorIs(t, p.B.Err(), ErrSpoofed)
		return
	}
	require.Equal(t, want, got)
}

// TestForgedAck: a blind attacker acknowledges, from the receiver's
// address, every message the sender has sent, one of which was lost.
// Protection (ReliablePeer): the receiver's ack fields then stay behind
// what the sender took as acknowledged, which ends the sender with
// ErrSpoofed at the receiver's first datagram after max(4 × RTO, 1 s)
// instead of leaving the receiver
// waiting for the lost message for ever. Without ReliablePeer the stall
// is silent.
func TestForgedAck(t *testing.T) {
	for _, reliable := range []bool{false, true} {
		t.Run(fmt.Sprint(reliable), func(t *testing.T) {
			cfg := streamConfig(true)
			cfg.ReliablePeer = reliable
			p := established(t, cfg)
			dropped := false
			p.AB.Drop = func(b []byte) bool {
				var d Datagram
				if dropped || p.B.parse(b, &d) != nil || len(d.Messages) == 0 {
					return false
				}
				dropped = true
				return true
			}
			for i := range 20 {
				require.NoError(t, p.A.Send([]byte{byte(i)}, engine.SendOptions{Params: engine.Params{Command: StreamCommand}}))
			}
			p.StepTo(p.Now)
			require.True(t, dropped)
			forged := forge(reliable, Datagram{Ack: p.A.nextSerial - 2})
			p.BA.Queue = append([]enginetest.Datagram{{At: p.Now, Data: forged}}, p.BA.Queue...)
			start := p.Now
			p.RunUntil(100_000, func() bool {
				return p.A.State() == engine.StateClosed || p.Now.Sub(start) > 20*time.Second
			})
			if !reliable {
				require.NoError(t, p.A.Err())
				require.Zero(t, p.A.Pending(), "the sender believes all acknowledged")
				require.Less(t, len(drain(p.B)), 20, "the receiver waits for the lost message")
				return
			}
			require.ErrorIs(t, p.A.Err(), ErrSpoofed)
			// At the first of the receiver's datagrams after 1 s: it
			// acknowledges again every AckDelay + RTO while it holds a gap.
			require.LessOrEqual(t, p.Now.Sub(start), 3*time.Second)
		})
	}
}

// TestReplayOldSession: an attacker replays, from the client's address,
// every datagram the client of an earlier session of the same two peers
// sent, while a new session carries 300 messages. Protection
// (ReliablePeer): the checksums of a session's datagrams cover a version
// mixed with the client's seed, so the earlier session's datagrams are
// dropped as malformed (its Login, a duplicate, excepted): the new
// session delivers exactly its own messages and does not end. Without
// the session checksum the earlier messages, at the same serials, are
// taken as the client's or end the session as forged.
func TestReplayOldSession(t *testing.T) {
	cfg := streamConfig(true)
	cfg.ReliablePeer = true
	transfer := func(p *pair, tag string, during func()) []string {
		var want, got []string
		for i := range 300 {
			msg := fmt.Sprintf("%s%03d", tag, i)
			want = append(want, msg)
			require.NoError(t, p.A.Send([]byte(msg), engine.SendOptions{Params: engine.Params{Command: StreamCommand}}))
		}
		during()
		p.RunUntil(1_000_000, func() bool {
			got = append(got, drain(p.B)...)
			return len(got) == len(want) || p.B.State() == engine.StateClosed
		})
		require.NoError(t, p.B.Err())
		require.Equal(t, want, got)
		return got
	}
	old := established(t, cfg)
	transfer(old, "old", func() {})
	old.A.Close(old.Now)
	old.RunUntil(100_000, func() bool { return old.A.State() == engine.StateClosed && old.B.State() == engine.StateClosed })
	recorded := old.AB.Log
	require.Greater(t, len(recorded), 10)

	a, b := cfg, cfg
	a.Client, a.Seed = true, v1Seed+1
	b.Accept, b.ClientID = true, 1
	p := enginetest.NewPair(t, t0, newSession(t, t0, a), newSession(t, t0, b), 5*ms, 0, 2, MaxDatagram)
	p.RunUntil(1000, func() bool { return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished })
	transfer(p, "new", func() {
		for _, d := range recorded {
			p.AB.Queue = append(p.AB.Queue, enginetest.Datagram{At: p.Now, Data: d})
		}
	})
	require.GreaterOrEqual(t, p.B.Stats().PacketsRejected, uint64(len(recorded)-2), "all but the Logins dropped")
}
