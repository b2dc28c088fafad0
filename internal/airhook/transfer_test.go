package airhook

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// flow feeds numbered messages of random length into one session and
// counts what the other side delivers.
type flow struct {
	tag       string
	total     int
	sent      int
	rng       *rand.Rand
	want, got map[string]int
	received  int
}

func newFlow(tag string, total int, seed uint64) *flow {
	return &flow{
		tag:   tag,
		total: total,
		rng:   rand.New(rand.NewPCG(seed, 3)),
		want:  map[string]int{},
		got:   map[string]int{},
	}
}

// feed sends messages until the queue is full or all are sent.
func (f *flow) feed(t testing.TB, s *Session) {
	for f.sent < f.total {
		m := []byte(fmt.Sprintf("%s#%05d:", f.tag, f.sent))
		m = append(m, bytes.Repeat([]byte{byte('a' + f.sent%26)}, f.rng.IntN(maxMessageLen-len(m)+1))...)
		err := s.Send(m, engine.SendOptions{})
		if errors.Is(err, engine.ErrQueueFull) {
			return
		}
		require.NoError(t, err)
		f.want[string(m)]++
		f.sent++
	}
}

// collect takes every delivered message from s.
func (f *flow) collect(s *Session) {
	for {
		m, ok := s.Recv()
		if !ok {
			return
		}
		f.got[string(m.Data)]++
		f.received++
	}
}

func (f *flow) done() bool { return f.sent == f.total && f.received >= f.total }

func TestLossyTransferExactlyOnce(t *testing.T) {
	const total = 2000
	p := newPair(t, Config{Session: 0x11111111}, Config{Session: 0x22222222}, 15*time.Millisecond, 0.3, 2026)
	ab, ba := newFlow("ab", total, 1), newFlow("ba", total, 2)
	p.RunUntil(200_000, func() bool {
		ab.feed(t, p.A)
		ba.feed(t, p.B)
		ab.collect(p.B)
		ba.collect(p.A)
		return ab.done() && ba.done() && p.A.Pending() == 0 && p.B.Pending() == 0
	})
	require.Equal(t, ab.want, ab.got)
	require.Equal(t, ba.want, ba.got)
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
