package avara

import (
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

// TestPingAt: with a message in flight, PingAt(t) resends the oldest
// unacknowledged message at t (a Ping would wait behind the messages in
// flight); with none, it sends a Ping at t.
func TestPingAt(t *testing.T) {
	p := established(t, Config{})
	p.AB.Cut = true // B hears nothing more: A's message stays unacknowledged
	require.NoError(t, p.A.Send([]byte("held"), engine.SendOptions{Params: engine.Params{Command: 5}}))
	p.Advance(p.Now.Add(20 * ms))
	at := p.Now.Add(30 * ms)
	sent := len(p.AB.Log)
	p.A.PingAt(at)
	require.Equal(t, at, p.A.Deadline())
	p.Advance(at)
	require.Len(t, p.AB.Log, sent+1)
	d := Describe(p.AB.Log[sent])
	require.NoError(t, d.Err)
	require.Len(t, d.Frames, 1, "the oldest unacknowledged message alone")
	require.Contains(t, d.Frames[0].Fields, traceField("send_count", uint8(1)), "resent")
	require.Equal(t, uint64(1), p.A.Stats().Retransmits)

	q := established(t, Config{})
	q.Advance(q.Now.Add(20 * ms))
	at = q.Now.Add(30 * ms)
	sent = len(q.AB.Log)
	q.A.PingAt(at)
	q.Advance(at)
	require.Len(t, q.AB.Log, sent+1)
	d = Describe(q.AB.Log[sent])
	require.Len(t, d.Frames, 1)
	require.Contains(t, d.Frames[0].Fields, traceField("command", int8(CommandPing)))
}

// traceField is a decoded field as Describe writes it.
func traceField(name string, v any) trace.Field { return trace.Field{Name: name, Value: v} }
