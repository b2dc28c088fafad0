package rudp

import (
	"net"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
)

// connTrace is a conn's tracer (Config.Tracer) with its protocol's
// decoder. A nil *connTrace traces nothing.
type connTrace struct {
	t        *trace.ConnTracer
	describe func([]byte) trace.Datagram
}

// newTracer asks Config.Tracer for the tracer of a conn between local and
// remote; nil when there is none.
func (c *Config) newTracer(local, remote net.Addr, stream, client bool) *connTrace {
	if c.Tracer == nil {
		return nil
	}
	t := c.Tracer(trace.ConnInfo{Protocol: c.Protocol.String(), Client: client, Stream: stream, Local: local, Remote: remote})
	if t == nil {
		return nil
	}
	return &connTrace{t: t, describe: c.proto.Describe}
}

// tracer is what the engine reports to: nil without a tracer.
func (tr *connTrace) tracer() *trace.ConnTracer {
	if tr == nil {
		return nil
	}
	return tr.t
}

// input reports datagram p, which the engine took (err nil) or refused.
func (tr *connTrace) input(now time.Time, p []byte, err error) {
	switch {
	case tr == nil:
	case err != nil && tr.t.DatagramDropped != nil:
		tr.t.DatagramDropped(now, len(p), err)
	case err == nil && tr.t.DatagramReceived != nil:
		tr.t.DatagramReceived(now, len(p), tr.describe(p))
	}
}

// closed reports the end of the conn.
func (tr *connTrace) closed(now time.Time, err error) {
	if tr != nil && tr.t.Closed != nil {
		tr.t.Closed(now, err)
	}
}

// traceSent reports the engine's datagram p, size bytes on the wire (p
// and its seal).
func (a *assoc) traceSent(now time.Time, p []byte, size int) {
	if a.tr.t.DatagramSent != nil {
		a.tr.t.DatagramSent(now, size, a.tr.describe(p))
	}
}

// traceFlow reports the stream's becoming blocked by the peer's
// flow-control limit.
func (c *Conn) traceFlow(now time.Time) {
	blocked := c.st.FlowBlocked()
	if blocked && !c.flowBlocked && c.a.tr.t.FlowBlocked != nil {
		c.a.tr.t.FlowBlocked(now, c.st.Unsent())
	}
	c.flowBlocked = blocked
}

// noState is no engine state: the first settle reports the engine's.
const noState engine.State = 255

// traceState reports the engine's state if it changed.
func (a *assoc) traceState(now time.Time) {
	if st := a.eng.State(); st != a.trState {
		a.trState = st
		if a.tr.t.StateChanged != nil {
			a.tr.t.StateChanged(now, st.String())
		}
	}
}
