package rudp

import (
	"net"
	"time"

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
