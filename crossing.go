package rudp

import (
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// crossing is what a conn dialed from a Transport needs for a
// simultaneous open: the peer, a Transport too, may dial this end at the
// same time (two programs punching holes through their NATs), and its
// opening then reaches this end's association, a client still in its
// handshake. Each end compares the random identifier of its own opening
// (engine.Protocol.OpeningID) with the peer's: the end whose identifier
// is smaller becomes the server, building an accepting engine from the
// peer's opening in place of its client engine; the other stays the
// client and drops the peer's openings, which its own, answered by the
// new server, make redundant. Both ends compute the same comparison from
// the same two values, however the NATs delayed or dropped the first
// openings, since an opening's identifier stays the same when it is sent
// again.
type crossing struct {
	cfg    *Config
	stream bool
	ours   uint64 // our opening's identifier, once sent
	sent   bool
	theirs uint64 // the peer's, once seen
	seen   bool
}

// sentLocked records the identifier of the first opening this end sent.
func (x *crossing) sentLocked(p []byte) {
	if !x.sent && x.cfg.proto.IsOpening(p, x.cfg.opts) {
		x.ours, x.sent = x.cfg.proto.OpeningID(p)
	}
}

// opening looks at p, a datagram from the peer of a dialed association
// whose engine is still in its handshake or not. It reports whether p is
// taken here rather than by the engine: a peer's opening that this end
// drops (it stays the client), or, with become, the one from which this
// end builds a server engine.
func (x *crossing) opening(p []byte, handshake bool) (taken, become bool) {
	if !x.cfg.proto.IsOpening(p, x.cfg.opts) {
		return false, false
	}
	id, ok := x.cfg.proto.OpeningID(p)
	if !ok {
		return false, false
	}
	if x.seen && id == x.theirs {
		return true, false // the peer's opening again: settled already
	}
	if !handshake || !x.sent {
		return false, false // a new session of the peer: the engine decides
	}
	x.theirs, x.seen = id, true
	return true, x.ours < id // the larger stays the client
}

// crosser is a conn that can take a new engine after a simultaneous open
// (see crossing).
type crosser interface {
	// crossed binds the conn to eng, the server engine that replaced its
	// client engine in the handshake, before anything was written.
	crossed(now time.Time, eng engine.Engine)
}
