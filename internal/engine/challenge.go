package engine

import "time"

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

// Challenge is the state of an engine's challenge of a restart or close
// announced from the peer's address while the association is live (the
// reason of RFC 5961's challenge ACK): a blind attacker can send from the
// peer's address but cannot answer what is sent to it. The engine probes
// the live peer (a ping); an answer to the probe refuses the announcement
// as spoofed, and only when Until passes without one is the next
// announcement of that kind taken. The zero Challenge is idle.
type Challenge struct {
	Kind   ChallengeKind // the running challenge's kind; ChallengeNone when none runs
	Passed ChallengeKind // ran out unanswered: the next announcement of this kind is taken
	Probe  uint32        // the id of the running challenge's probe
	Until  time.Time     // when the running challenge runs out
}

// Ask reports whether an announcement of kind k may be acted on: a
// challenge of that kind ran out unanswered. Otherwise, when no challenge
// runs, it starts one for the probe id probe, running out at until, and
// reports started: the engine then sends that probe and counts the
// challenge. An announcement made while a challenge runs changes nothing.
func (c *Challenge) Ask(k ChallengeKind, probe uint32, until time.Time) (act, started bool) {
	switch {
	case c.Passed == k:
		return true, false
	case c.Kind == ChallengeNone:
		c.Kind, c.Probe, c.Until = k, probe, until
		return false, true
	}
	return false, false
}

// Running reports whether a challenge runs.
func (c *Challenge) Running() bool { return c.Kind != ChallengeNone }

// Answer ends the running challenge if id is its probe's, and reports
// whether it did: the live peer is there, so what was announced was
// spoofed (count it in Stats.SpoofsRefused).
func (c *Challenge) Answer(id uint32) bool {
	if c.Kind == ChallengeNone || id != c.Probe {
		return false
	}
	c.Kind, c.Passed = ChallengeNone, ChallengeNone
	return true
}

// Expire ends the running challenge, unanswered at Until: the next
// announcement of its kind is taken. It returns that kind.
func (c *Challenge) Expire() ChallengeKind {
	k := c.Kind
	c.Kind, c.Passed = ChallengeNone, k
	return k
}
