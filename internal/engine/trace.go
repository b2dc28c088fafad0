package engine

import (
	"time"

	"github.com/rudpkit/rudp/trace"
)

// TraceKeepAlive reports to tr (nil: no tracer) the keepalive an engine
// queued at now.
func TraceKeepAlive(tr *trace.ConnTracer, now time.Time) {
	if tr != nil && tr.KeepAlive != nil {
		tr.KeepAlive(now)
	}
}
