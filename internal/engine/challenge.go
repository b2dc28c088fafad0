package engine

import (
	"time"

	"github.com/rudpkit/rudp/trace"
)

// ChallengeKind is what a challenged announcement was: a restart of the
// peer (a new session, nonce or circuit) or its close.
type ChallengeKind uint8

const (
	// ChallengeNone: no challenge.
	ChallengeNone ChallengeKind = iota
	// ChallengeRestart: the peer's address announced a new peer session.
	ChallengeRestart
	// ChallengeClose: the peer's address announced the peer's close.
	ChallengeClose
)

// ChallengeProbes is how many probes an engine that can repeat its probe
// sends during one challenge, evenly spread over it: one lost probe or
// answer must not let a spoofed announcement through.
const ChallengeProbes = 4

// Challenge is the state of an engine's challenge of a restart or close
// announced from the peer's address while the association is live (the
// reason of RFC 5961's challenge ACK): a blind attacker can send from the
// peer's address but cannot answer what is sent to it. The engine probes
// the live peer (a ping), and may probe again (Reprobe); an answer to any
// of the probes refuses the announcement as spoofed, and only when Until
// passes without one is the next announcement of that kind taken. The
// zero Challenge is idle.
type Challenge struct {
	Kind   ChallengeKind // the running challenge's kind; ChallengeNone when none runs
	Passed ChallengeKind // ran out unanswered: the next announcement of this kind is taken
	Probe  uint32        // the id of the running challenge's first probe
	Until  time.Time     // when the running challenge runs out
	more   [ChallengeProbes - 1]uint32
	nMore  int // probes sent after the first, in more (the latest kept)
	// Tracer, when not nil, receives each challenge's start and end.
	Tracer *trace.ConnTracer
}

// String returns "restart", "close" or "none".
func (k ChallengeKind) String() string {
	switch k {
	case ChallengeRestart:
		return "restart"
	case ChallengeClose:
		return "close"
	}
	return "none"
}

// trace reports an event of a challenge of kind k at now.
func (c *Challenge) trace(now time.Time, k ChallengeKind, result string) {
	if c.Tracer != nil && c.Tracer.Challenge != nil {
		c.Tracer.Challenge(now, k.String(), result)
	}
}

// Ask reports whether an announcement of kind k may be acted on: a
// challenge of that kind ran out unanswered. Otherwise, when no challenge
// runs, it starts one for the probe id probe, running out at until, and
// reports started: the engine then sends that probe and counts the
// challenge. An announcement made while a challenge runs changes nothing.
// now is the time of the announcement.
func (c *Challenge) Ask(now time.Time, k ChallengeKind, probe uint32, until time.Time) (act, started bool) {
	switch {
	case c.Passed == k:
		return true, false
	case c.Kind == ChallengeNone:
		c.Kind, c.Probe, c.Until, c.nMore = k, probe, until, 0
		c.trace(now, k, "started")
		return false, true
	}
	return false, false
}

// Running reports whether a challenge runs.
func (c *Challenge) Running() bool { return c.Kind != ChallengeNone }

// Reprobe records that the engine sent another probe, id, for the running
// challenge; an answer to it counts as to the first. Of the probes after
// the first, the latest ChallengeProbes − 1 are kept.
func (c *Challenge) Reprobe(id uint32) {
	if c.Kind == ChallengeNone || c.Probed(id) {
		return
	}
	copy(c.more[1:], c.more[:])
	c.more[0] = id
	c.nMore = min(c.nMore+1, len(c.more))
}

// Probed reports whether id is one of the running challenge's probes.
func (c *Challenge) Probed(id uint32) bool {
	if c.Kind == ChallengeNone {
		return false
	}
	if id == c.Probe {
		return true
	}
	for _, m := range c.more[:c.nMore] {
		if m == id {
			return true
		}
	}
	return false
}

// Answer ends the running challenge at now if id is one of its probes', and
// reports whether it did: the live peer is there, so what was announced
// was spoofed (count it in Stats.SpoofsRefused).
func (c *Challenge) Answer(now time.Time, id uint32) bool {
	if !c.Probed(id) {
		return false
	}
	c.trace(now, c.Kind, "spoofed")
	c.Kind, c.Passed = ChallengeNone, ChallengeNone
	return true
}

// Expire ends the running challenge at now, unanswered at Until: the next
// announcement of its kind is taken. It returns that kind.
func (c *Challenge) Expire(now time.Time) ChallengeKind {
	k := c.Kind
	c.trace(now, k, "accepted")
	c.Kind, c.Passed = ChallengeNone, k
	return k
}
