package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// Flow feeds numbered messages of random length and content into one
// session and counts what the other side delivers, for exactly-once
// checks: at the end Got must equal Want.
type Flow struct {
	Tag            string
	Total          int // messages to send
	Sent, Received int
	Want, Got      map[string]int // by content
	rng            *rand.Rand
	opts           map[string]engine.SendOptions
}

// NewFlow returns a flow of total messages tagged tag, drawn from a
// generator seeded with seed.
func NewFlow(tag string, total int, seed uint64) *Flow {
	return &Flow{
		Tag:   tag,
		Total: total,
		Want:  map[string]int{},
		Got:   map[string]int{},
		rng:   rand.New(rand.NewPCG(seed, 3)),
		opts:  map[string]engine.SendOptions{},
	}
}

// Feed sends reliable messages, with the options opts gives message i
// (nil for the zero options), until s refuses one with
// engine.ErrQueueFull or all are sent. Each is "tag#i:" followed by
// random bytes rich in zero runs, up to s's largest message.
func (f *Flow) Feed(t testing.TB, s engine.Engine, opts func(i int) engine.SendOptions) {
	t.Helper()
	for f.Sent < f.Total {
		m := fmt.Appendf(nil, "%s#%05d:", f.Tag, f.Sent)
		m = append(m, RandomBytes(f.rng, f.rng.IntN(s.Capabilities().MaxMessage-len(m)+1))...)
		var o engine.SendOptions
		if opts != nil {
			o = opts(f.Sent)
		}
		err := s.Send(m, o)
		if errors.Is(err, engine.ErrQueueFull) {
			return
		}
		require.NoError(t, err)
		f.Want[string(m)]++
		f.opts[string(m)] = o
		f.Sent++
	}
}

// Collect takes every message s delivered, checking that it is reliable
// and carries the message number it was sent with.
func (f *Flow) Collect(t testing.TB, s engine.Engine) {
	t.Helper()
	for {
		m, ok := s.Recv()
		if !ok {
			return
		}
		require.True(t, m.Reliable)
		require.Equal(t, f.opts[string(m.Data)].MessageNumber, m.MessageNumber)
		f.Got[string(m.Data)]++
		f.Received++
	}
}

// Done reports whether every message was sent and as many were received.
func (f *Flow) Done() bool { return f.Sent == f.Total && f.Received >= f.Total }

// RandomBytes returns n bytes drawn from rng, rich in zero runs.
func RandomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, 0, n)
	for len(b) < n {
		if rng.IntN(3) == 0 {
			b = append(b, make([]byte, min(n-len(b), rng.IntN(600)))...)
		} else {
			b = append(b, byte(rng.Uint32()))
		}
	}
	return b
}

// RunFlows runs p until every message of ab (from A to B) and ba (from B
// to A) was sent and received and nothing is pending, failing after limit
// steps, and checks that each message arrived exactly once. opts gives
// the send options of message i (nil for the zero options).
func (p *Pair[S]) RunFlows(limit int, ab, ba *Flow, opts func(i int) engine.SendOptions) {
	p.T.Helper()
	p.RunUntil(limit, func() bool {
		ab.Feed(p.T, p.A, opts)
		ba.Feed(p.T, p.B, opts)
		ab.Collect(p.T, p.B)
		ba.Collect(p.T, p.A)
		return ab.Done() && ba.Done() && p.A.Pending() == 0 && p.B.Pending() == 0
	})
	require.Equal(p.T, ab.Want, ab.Got)
	require.Equal(p.T, ba.Want, ba.Got)
}
