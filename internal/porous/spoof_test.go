package porous

import (
	"fmt"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// sweepFrames is the number of spoofed Data frames of a sweep: one every
// 2^15 frame numbers, so that at least one falls in any window of the
// reference's 65536 frames, wherever the receive base lies.
const sweepFrames = 1 << 17

// sweeper returns a Link.Drop hook that, each time the link carries a
// genuine datagram, puts the next per spoofed Data frames of a sweep on
// the link before it, as a blind attacker sending from the sender's
// address would: frame i has frame_seq i·2^15 and one complete packet on
// channel 0, numbered seq, with no dependency. *sent counts the frames
// sent.
func sweeper(p *pair, l *link, seq uint32, per int, sent *int) func([]byte) bool {
	return func([]byte) bool {
		for range per {
			if *sent == sweepFrames {
				break
			}
			f := Frame{Type: FrameData, Seq: uint32(*sent) << 15, Messages: []Message{frag(0, seq, 0, "spoofed")}}
			l.Queue = append(l.Queue, enginetest.Datagram{At: p.Now.Add(l.Delay), Data: f.AppendTo(nil)})
			*sent++
		}
		return false
	}
}

// TestSpoofedSweep: a sweep of 2^17 spoofed Data frames from each peer's
// address, covering the whole frame_seq space, interleaved with a lossy
// transfer between two sessions of ReliablePeer, changes nothing: every
// packet arrives once and in order, and neither session ends. The
// reference's window would take two frames of each sweep, whose packet
// far ahead would be delivered and skip every packet before it.
func TestSpoofedSweep(t *testing.T) {
	cfg := Config{ReliablePeer: true}
	p := newPair(t, cfg, cfg, 5*time.Millisecond, 0.02, 5)
	var toB, toA int
	p.AB.Drop = sweeper(p, &p.AB, 50_000, 64, &toB)
	p.BA.Drop = sweeper(p, &p.BA, 50_000, 64, &toA)
	transfer(t, p, 3000, 3000, 1_000_000)
	require.Equal(t, sweepFrames, toB, "the sweep towards B is complete")
	require.Equal(t, sweepFrames, toA, "the sweep towards A is complete")
	t.Logf("virtual %v, b %+v", p.Now.Sub(epoch), p.B.Stats())
}

// forge hands s a Data frame numbered seq with msgs, as a third party
// sending from the peer's address, and returns the error.
func (p *fakePeer) forge(seq uint32, msgs ...Message) error {
	f := Frame{Type: FrameData, Seq: seq, Messages: msgs}
	return p.s.HandleDatagram(p.now, f.AppendTo(nil))
}

// TestSpoofedFramesLand: forged frames that land in a ReliablePeer's
// window deliver nothing, skip nothing and move nothing the peer's
// frames need: a packet far ahead with no dependency waits its turn, a
// Sentinel and a packet larger than MaxPacket are ignored, a frame
// numbered like one of the peer's taken in order is a duplicate, and
// forged frames cannot push the frame window away from the peer's.
func TestSpoofedFramesLand(t *testing.T) {
	p := newFakePeer(t, Config{ReliablePeer: true, MaxPacket: 1000})
	s := p.s
	require.Equal(t, []string{"r0", "r1"}, p.send(frag(0, 0, 0, "r0"), frag(0, 1, 1, "r1")))
	// 100 frames ahead: taken, but its packets wait or are ignored.
	big := Message{Type: MsgFragment, PacketSeq: 3, LastFragmentID: 1, Data: make([]byte, FragmentSize)}
	require.NoError(t, p.forge(p.seq+100, frag(0, 5000, 0, "far"), sentinel(0, 4, 0)))
	require.NoError(t, p.forge(p.seq+101, big))
	require.Empty(t, recvStrings(s))
	require.Equal(t, uint32(2), s.rxch[0].base)
	require.Equal(t, 1, s.rxch[0].n, "only the far packet is held")
	// Numbered like the peer's first frame, taken in order: a duplicate.
	require.NoError(t, p.forge(nonceA, frag(0, 2, 0, "forged")))
	require.Empty(t, recvStrings(s))
	require.Equal(t, 1, s.rxch[0].n)
	// The window is anchored at the oldest frame of the peer's not yet
	// taken: a forged frame cannot move it further.
	require.ErrorIs(t, p.forge(p.seq+RxAhead, frag(0, 2, 0, "forged")), engine.ErrRejected)
	require.NoError(t, p.forge(p.seq+RxAhead-1))
	// The peer's frames go on, in the gap the forged frames left.
	require.Equal(t, []string{"r2", "r3"}, p.send(frag(0, 2, 1, "r2"), frag(0, 3, 1, "r3")))
	require.Equal(t, []string{"r4"}, p.send(frag(0, 4, 1, "r4")))
	require.Equal(t, engine.StateEstablished, s.State())
	require.Equal(t, uint32(5), s.rxch[0].base)
}

// TestSpoofedConflict: two different copies of one packet of a
// ReliablePeer end the session with ErrSpoofed, whichever came first.
func TestSpoofedConflict(t *testing.T) {
	for _, c := range []struct {
		name  string
		forge Message
	}{
		{"bytes", frag(0, 2, 1, "forged")},
		{"lead", frag(0, 2, 0, "r2")},
		{"fragments", Message{Type: MsgFragment, PacketSeq: 2, DependentLead: 1, LastFragmentID: 1, FragmentID: 1, Data: []byte("r2")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newFakePeer(t, Config{ReliablePeer: true})
			require.Equal(t, []string{"r0"}, p.send(frag(0, 0, 0, "r0")))
			require.NoError(t, p.forge(p.seq+10, c.forge))
			require.Empty(t, recvStrings(p.s))
			f := Frame{Type: FrameData, Seq: p.seq, Messages: []Message{frag(0, 1, 1, "r1"), frag(0, 2, 1, "r2")}}
			require.NoError(t, p.s.HandleDatagram(p.now, f.AppendTo(nil)))
			require.Empty(t, recvStrings(p.s))
			require.Equal(t, engine.StateClosed, p.s.State())
			require.ErrorIs(t, p.s.Err(), ErrSpoofed)
		})
	}
	// The same copy again is a duplicate.
	p := newFakePeer(t, Config{ReliablePeer: true})
	require.Empty(t, p.send(frag(0, 1, 1, "r1")))
	require.NoError(t, p.forge(p.seq+10, frag(0, 1, 1, "r1")))
	require.Equal(t, []string{"r0", "r1"}, p.send(frag(0, 0, 0, "r0")))
	require.Equal(t, engine.StateEstablished, p.s.State())
}

// TestStalled: a channel that holds packets behind a missing one for
// IdleTimeout ends the session with ErrStalled, a timeout, while the
// peer's frames keep arriving; so does one whose walk waits for a
// missing dependency, without ReliablePeer.
func TestStalled(t *testing.T) {
	for _, reliable := range []bool{true, false} {
		t.Run(fmt.Sprint(reliable), func(t *testing.T) {
			p := newFakePeer(t, Config{ReliablePeer: reliable, IdleTimeout: 5 * time.Second})
			require.Equal(t, []string{"r0"}, p.send(frag(0, 0, 0, "r0")))
			require.Empty(t, p.send(frag(0, 2, 1, "r2")))
			held := p.now
			for p.now.Before(held.Add(5 * time.Second)) {
				require.Equal(t, engine.StateEstablished, p.s.State(), "at %v", p.now.Sub(held))
				p.send() // the peer is alive
				p.poll()
				p.now = p.now.Add(500 * time.Millisecond)
			}
			require.Equal(t, held.Add(5*time.Second), p.s.Deadline())
			p.poll()
			require.Equal(t, engine.StateClosed, p.s.State())
			require.ErrorIs(t, p.s.Err(), ErrStalled)
			require.ErrorIs(t, p.s.Err(), engine.ErrIdleTimeout)
		})
	}
	// Not while new data is refused: the missing packet may be refused.
	p := newFakePeer(t, Config{ReliablePeer: true, IdleTimeout: 5 * time.Second})
	require.Empty(t, p.send(frag(0, 1, 1, "r1")))
	p.s.SetRecvOpen(false)
	for range 20 {
		p.now = p.now.Add(500 * time.Millisecond)
		p.send()
		p.poll()
	}
	p.s.SetRecvOpen(true)
	p.now = p.now.Add(4 * time.Second)
	p.send()
	p.poll()
	require.Equal(t, engine.StateEstablished, p.s.State())
	require.Equal(t, []string{"r0", "r1"}, p.send(frag(0, 0, 0, "r0")))
}
