package porous

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// epoch is the start of every test clock.
var epoch = time.Unix(1_000_000, 0)

const (
	nonceA = 0x0a0a0a0a
	nonceB = 0x0b0b0b0b
)

func newSession(t testing.TB, now time.Time, cfg Config) *Session {
	t.Helper()
	s, err := New(now, cfg)
	require.NoError(t, err)
	return s
}

// pollHex polls s at now until nothing is due and returns the frames in
// hex.
func pollHex(t testing.TB, s *Session, now time.Time) []string {
	t.Helper()
	var out []string
	buf := make([]byte, MaxFrameSize)
	for range 100_000 {
		n := s.Poll(now, buf)
		if n == 0 {
			return out
		}
		out = append(out, hex.EncodeToString(buf[:n]))
	}
	t.Fatal("Poll keeps returning frames")
	return nil
}

// maxDeadlineSteps bounds the loops that poll a session at its deadline,
// so that a deadline at which Poll has nothing to do fails a test at once
// instead of spinning it.
const maxDeadlineSteps = 10_000

// pollUntilClosed polls s at from, then at each of its deadlines, until it
// reaches StateClosed, requiring that no poll comes after by. It returns
// the time of the last poll and the frames that poll wrote; it fails
// after maxDeadlineSteps polls.
func pollUntilClosed(t testing.TB, s *Session, from, by time.Time) (time.Time, []string) {
	t.Helper()
	now := from
	for range maxDeadlineSteps {
		require.False(t, now.After(by), "polled at %v, after %v", now.Sub(epoch), by.Sub(epoch))
		frames := pollHex(t, s, now)
		if s.State() == engine.StateClosed {
			return now, frames
		}
		now = s.Deadline()
	}
	t.Fatalf("still %v after %d polls at its deadline, at %v", s.State(), maxDeadlineSteps, now.Sub(epoch))
	return now, nil
}

// feedHex hands hex frames to s at now, requiring no error.
func feedHex(t testing.TB, s *Session, now time.Time, frames ...string) {
	t.Helper()
	for _, h := range frames {
		b, err := hex.DecodeString(h)
		require.NoError(t, err)
		require.NoError(t, s.HandleDatagram(now, b), h)
	}
}

// recvAll takes every delivered message of s.
func recvAll(s *Session) []engine.Message {
	var out []engine.Message
	for {
		m, ok := s.Recv()
		if !ok {
			return out
		}
		out = append(out, m)
	}
}

// recvStrings takes every delivered message of s as strings.
func recvStrings(s *Session) []string {
	var out []string
	for _, m := range recvAll(s) {
		out = append(out, string(m.Data))
	}
	return out
}

// link is a one-way simulated link.
type link = enginetest.Link

// deliverFrames hands b every frame a's Poll returns at now, in order,
// through buf; it fails tb if b refuses one or if a never runs dry.
func deliverFrames(tb testing.TB, now time.Time, buf []byte, a, b *Session) {
	tb.Helper()
	for range 100_000 {
		n := a.Poll(now, buf)
		if n == 0 {
			return
		}
		require.NoError(tb, b.HandleDatagram(now, buf[:n]))
	}
	tb.Fatal("Poll keeps returning frames")
}

// pair is two sessions joined by two links on a virtual clock.
type pair = enginetest.Pair[*Session]

func newPair(t testing.TB, cfgA, cfgB Config, delay time.Duration, loss float64, seed uint64) *pair {
	t.Helper()
	if cfgA.Nonce == 0 {
		cfgA.Nonce = nonceA
	}
	if cfgB.Nonce == 0 {
		cfgB.Nonce = nonceB
	}
	p := enginetest.NewPair(t, epoch, newSession(t, epoch, cfgA), newSession(t, epoch, cfgB), delay, loss, seed, MaxFrameSize)
	p.Epoch = epoch
	p.PollLimit = 1 << 20
	return p
}

// frameTypes summarises hex frames as "Type" strings, Data frames with
// their frame_seq.
func frameTypes(t testing.TB, frames []string) []string {
	var out []string
	for _, h := range frames {
		var f Frame
		require.NoError(t, Decode(unhex(t, h), &f))
		out = append(out, f.Type.String())
	}
	return out
}

// runWithin runs p until done reports true, failing once the virtual
// clock is more than d past where it started, or after limit steps (as
// RunUntil, for a loop that does not move the clock). d bounds the work
// the caller expects, with a wide margin: a stall (resends that never get
// through, a window that never opens) lets virtual time run, and fails
// after a few of its steps rather than after limit of them.
func runWithin(p *pair, d time.Duration, limit int, done func() bool) {
	p.T.Helper()
	end := p.Now.Add(d)
	p.RunUntil(limit, func() bool {
		if done() {
			return true
		}
		require.False(p.T, p.Now.After(end), "not done within %v of virtual time, at %v", d, p.Now.Sub(epoch))
		return false
	})
}
