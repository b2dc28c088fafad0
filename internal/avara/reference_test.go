package avara

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// refRun drives one of our server sessions against the model of the
// reference client (refPeer) over two links on a virtual clock.
type refRun struct {
	t        testing.TB
	now      time.Time
	s        *Session
	r        *refPeer
	up, down enginetest.Link // ours to the model, the model's to us
	nextTurn time.Time
	buf      []byte
	got      [][]byte // what our session delivered, in order
	stalls   int      // consecutive steps that did not move the clock
}

func newRefRun(t testing.TB, cfg Config, loss float64, seed uint64) *refRun {
	cfg.Accept, cfg.ClientID = true, 1
	return &refRun{
		t:        t,
		now:      t0,
		s:        newSession(t, t0, cfg),
		r:        newRefPeer(t0, v1Seed),
		up:       enginetest.NewLink(5*ms, loss, seed, 1),
		down:     enginetest.NewLink(5*ms, loss, seed, 2),
		nextTurn: t0,
		buf:      make([]byte, MaxDatagram),
	}
}

// step moves the clock to the next event: an arrival, the model's next
// turn or our deadline, and runs what is due then.
func (x *refRun) step() {
	next := x.nextTurn
	if d := x.s.Deadline(); !d.IsZero() && d.Before(next) {
		next = d
	}
	for _, l := range []*enginetest.Link{&x.up, &x.down} {
		if len(l.Queue) > 0 && l.Queue[0].At.Before(next) {
			next = l.Queue[0].At
		}
	}
	if next.After(x.now) {
		x.now, x.stalls = next, 0
	} else {
		x.stalls++
		require.Less(x.t, x.stalls, 100, "busy loop at %v", x.now.Sub(t0))
	}
	for len(x.up.Queue) > 0 && !x.up.Queue[0].At.After(x.now) {
		x.r.arrive(x.up.Queue[0].Data)
		x.up.Queue = x.up.Queue[1:]
	}
	for len(x.down.Queue) > 0 && !x.down.Queue[0].At.After(x.now) {
		err := x.s.HandleDatagram(x.now, x.down.Queue[0].Data)
		if x.s.State() != engine.StateClosed {
			require.NoError(x.t, err)
		}
		x.down.Queue = x.down.Queue[1:]
	}
	if !x.now.Before(x.nextTurn) {
		for _, b := range x.r.turn(x.now) {
			x.down.Send(x.now, b)
		}
		x.nextTurn = x.nextTurn.Add(x.r.frame)
	}
	for {
		n := x.s.Poll(x.now, x.buf)
		if n == 0 {
			break
		}
		x.up.Send(x.now, x.buf[:n])
	}
	for {
		m, ok := x.s.Recv()
		if !ok {
			break
		}
		x.got = append(x.got, m.Data)
	}
}

// runUntil steps until done, failing once the virtual clock passes limit.
func (x *refRun) runUntil(limit time.Duration, done func() bool) {
	x.t.Helper()
	for !done() {
		require.Less(x.t, x.now.Sub(t0), limit, "not done: ours pending %d held %d expected %d flight %d got %d; model out %d unheard %d held %d expected %d delivered %d closed %v",
			x.s.Pending(), x.s.nHeld, x.s.expected, len(x.s.flight), len(x.got), len(x.r.out), x.r.unheard, len(x.r.held), x.r.expected, len(x.r.Delivered), x.r.Closed)
		x.step()
	}
}

// refMessages returns n messages tagged tag of 0 to 200 random bytes
// after their number.
func refMessages(tag string, n int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	ms := make([][]byte, n)
	for i := range ms {
		ms[i] = append(fmt.Appendf(nil, "%s#%05d:", tag, i), enginetest.RandomBytes(rng, rng.IntN(201))...)
	}
	return ms
}

// exchange sends total messages each way, ours from the start and the
// model's once it has its id, and runs until both sides have everything
// they can get and ours has nothing pending, or limit.
func (x *refRun) exchange(total int, limit time.Duration) (ours, theirs [][]byte) {
	ours, theirs = refMessages("ab", total, 1), refMessages("ba", total, 2)
	for _, m := range ours {
		require.NoError(x.t, x.s.Send(m, game))
	}
	queued := false
	x.runUntil(limit, func() bool {
		if !queued && x.r.id >= 0 {
			for _, m := range theirs {
				x.r.queue(x.now, Message{Command: game.Params.Command, Data: m})
			}
			queued = true
		}
		return queued && x.s.Pending() == 0 && len(x.got) == total && len(x.r.out) == 0
	})
	return ours, theirs
}

// TestReferencePeerPaced: with Config.ReferencePeer, 1,000 messages
// each way between a session and the model of the reference client (one
// datagram read per 16 ms frame from a 64-datagram socket buffer,
// skipping a gap behind 16 held messages, its resend throttle, no
// acknowledgement of a Logout) all arrive exactly once and in order, at
// 0 % and at 10 % loss, with a frame of 100 ms too (a busy host): the
// model never skips (so nothing we take as acknowledged is lost), its
// messages all reach us despite its throttle (held behind a gap: seed
// 2026; its last resends lost: seed 6), and it ends with nothing
// unacknowledged. Close then ends without error two retransmit times
// after the Logout although the model never acknowledges it, and the
// model reads it after everything else.
func TestReferencePeerPaced(t *testing.T) {
	for _, c := range []struct {
		loss  float64
		frame time.Duration
		seed  uint64
	}{{0, refFrame, 2026}, {0.1, refFrame, 2026}, {0.1, refFrame, 6}, {0.1, 100 * ms, 2026}} {
		t.Run(fmt.Sprintf("loss %v frame %v seed %d", c.loss, c.frame, c.seed), func(t *testing.T) {
			x := newRefRun(t, Config{ReferencePeer: true}, c.loss, c.seed)
			x.r.frame = c.frame
			ours, theirs := x.exchange(1000, 10*time.Minute)
			require.Zero(t, x.r.Skipped, "the model skipped")
			require.Equal(t, ours, x.r.Delivered)
			require.Equal(t, theirs, x.got)
			st := x.s.Stats()
			require.Zero(t, st.Skipped)
			require.Equal(t, uint64(1000), st.MessagesRecv)
			require.Equal(t, uint64(1000), st.MessagesSent)
			t.Logf("done at %v: model overflow %d, ours %+v", x.now.Sub(t0), x.r.Overflow, st)

			closing := x.now
			x.s.Close(x.now)
			x.runUntil(x.now.Sub(t0)+DefaultLinger, func() bool { return x.s.State() == engine.StateClosed })
			require.NoError(t, x.s.Err())
			require.True(t, x.r.Closed, "the model read the Logout")
			require.LessOrEqual(t, x.now.Sub(closing), 2*initialRetransmit+100*ms)
			t.Logf("closed in %v", x.now.Sub(closing))
		})
	}
}

// TestReferencePeerUnpaced shows what ReferencePeer prevents: without
// it the session sends as the congestion controller allows, losses at
// 10 % leave gaps with 16 messages behind them, and the model skips
// messages (its TOC among them, so it never learns its id), which the
// session takes as acknowledged: all 1,000 leave Pending, fewer arrive.
func TestReferencePeerUnpaced(t *testing.T) {
	x := newRefRun(t, Config{}, 0.1, 2026)
	for _, m := range refMessages("ab", 1000, 1) {
		require.NoError(t, x.s.Send(m, game))
	}
	x.runUntil(10*time.Minute, func() bool { return x.s.Pending() == 0 })
	t.Logf("model skipped %d, overflow %d, delivered %d", x.r.Skipped, x.r.Overflow, len(x.r.Delivered))
	require.NotZero(t, x.r.Skipped)
	require.Less(t, len(x.r.Delivered), 1000)
}
