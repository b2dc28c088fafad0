package socket

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
)

// recordBatch is a batchConn that records what it is asked to send. It
// takes the first accept messages of each call (all when negative), and
// fails the call with err when it takes fewer.
type recordBatch struct {
	calls  int
	sent   []string // "destination:payload" in the order sent
	accept int
	err    error
	events *[]string
}

func (r *recordBatch) WriteBatch(ms []ipv4.Message, _ *Scratch) (int, error) {
	r.calls++
	*r.events = append(*r.events, "send")
	n := len(ms)
	if r.accept >= 0 && r.accept < n {
		n = r.accept
	}
	for _, m := range ms[:n] {
		for _, b := range m.Buffers {
			r.sent = append(r.sent, m.Addr.String()+":"+string(b))
		}
	}
	if n < len(ms) {
		return n, r.err
	}
	return n, nil
}

// recordSender records the runs it is told were sent.
type recordSender struct {
	name   string
	events *[]string
}

func (s *recordSender) Sent(r *Run) {
	*s.events = append(*s.events, "sent "+s.name+" "+r.Tag.(string)+" failed "+string(rune('0'+r.Failed)))
}

// recordLocker records its Unlock.
type recordLocker struct {
	name   string
	events *[]string
}

func (l *recordLocker) Lock()   {}
func (l *recordLocker) Unlock() { *l.events = append(*l.events, "unlock "+l.name) }

func payloads(ps ...string) [][]byte {
	out := make([][]byte, len(ps))
	for i, p := range ps {
		out[i] = []byte(p)
	}
	return out
}

// TestOutboxOneCall: the datagrams of several peers, queued in turn, go
// in one sendmmsg, in the order queued, each to its peer; each owner is
// told of each of its runs, with its tag, after the send; the Lockers held
// are unlocked after that, in the order held.
func TestOutboxOneCall(t *testing.T) {
	var events []string
	rb := &recordBatch{accept: -1, events: &events}
	o := newOutbox(&Socket{batch: rb})
	addrA := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1000}
	addrB := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2000}
	a := &recordSender{name: "a", events: &events}
	b := &recordSender{name: "b", events: &events}

	o.Hold(&recordLocker{name: "a", events: &events})
	o.Add(payloads("a1", "a2", "a3"), addrA, a, "first")
	o.Hold(&recordLocker{name: "b", events: &events})
	o.Add(payloads("b1", "b2"), addrB, b, "only")
	o.Add(payloads("a4"), addrA, a, "second")
	require.Empty(t, events, "nothing sent before Release")
	o.Release()

	require.Equal(t, 1, rb.calls)
	require.Equal(t, []string{
		"127.0.0.1:1000:a1", "127.0.0.1:1000:a2", "127.0.0.1:1000:a3",
		"127.0.0.1:2000:b1", "127.0.0.1:2000:b2", "127.0.0.1:1000:a4",
	}, rb.sent)
	require.Equal(t, []string{
		"send", "sent a first failed 0", "sent b only failed 0", "sent a second failed 0",
		"unlock a", "unlock b",
	}, events)

	events = events[:0]
	o.Release()
	require.Empty(t, events, "nothing held, nothing queued")
}

// TestOutboxBounded: a queue that would go past outboxSize datagrams is
// sent before the next run is queued.
func TestOutboxBounded(t *testing.T) {
	var events []string
	rb := &recordBatch{accept: -1, events: &events}
	o := newOutbox(&Socket{batch: rb})
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1000}
	s := &recordSender{name: "s", events: &events}
	full := make([]string, outboxSize-1)
	for i := range full {
		full[i] = "x"
	}
	o.Add(payloads(full...), to, s, "1")
	o.Add(payloads("y"), to, s, "2")
	require.Empty(t, events, "outboxSize datagrams queued")
	o.Add(payloads("z"), to, s, "3")
	require.Equal(t, []string{"send", "sent s 1 failed 0", "sent s 2 failed 0"}, events)
	o.Release()
	require.Equal(t, 2, rb.calls)
	require.Len(t, rb.sent, outboxSize+1)
}

// TestOutboxFailureOwner: a datagram the socket refuses counts against
// the run it belongs to, and the rest still go.
func TestOutboxFailureOwner(t *testing.T) {
	var events []string
	rb := &recordBatch{accept: 3, err: errors.New("no buffer space"), events: &events}
	o := newOutbox(&Socket{batch: rb})
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1000}
	a := &recordSender{name: "a", events: &events}
	b := &recordSender{name: "b", events: &events}
	o.Add(payloads("a1", "a2"), to, a, "1")
	o.Add(payloads("b1", "b2", "b3"), to, b, "2")
	o.Release()
	// The first call takes a1, a2, b1 and fails on b2, which is lost; the
	// second takes b3.
	require.Equal(t, 2, rb.calls)
	require.Equal(t, []string{"127.0.0.1:1000:a1", "127.0.0.1:1000:a2", "127.0.0.1:1000:b1", "127.0.0.1:1000:b3"}, rb.sent)
	require.Equal(t, []string{"send", "send", "sent a 1 failed 0", "sent b 2 failed 1"}, events)
}
