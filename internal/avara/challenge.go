package avara

import (
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Challenged closes (Config.ChallengeClose). The protocol has no secret:
// anyone who can send from the peer's address can put a Logout in the
// window, so an established session with ChallengeClose asks the live
// peer before it takes one (engine.Challenge): it sends a probe, a Ping
// with p3 0 (a poke, which a peer running this package with KeepAlive
// acknowledges at once), and drops the Logout unacknowledged. An
// acknowledgement of the probe means the live peer is there and did not
// close: the Logout was spoofed (Stats.SpoofsRefused). A peer that really
// closed does not acknowledge it (see refuseAfterLogout) and sends its
// Logout again, since it was not acknowledged; once the challenge ran out
// unanswered, max(2 × RTO, engine.ChallengeMin) after it began, that
// Logout is taken. A Kill naming a client is a close too.

// isClose reports whether a message of command cmd and p1 ends the
// session when taken: a Logout, or a Kill naming us on a client.
func (s *Session) isClose(cmd, p1 int8) bool {
	return cmd == CommandLogout || cmd == CommandKill && s.cfg.Client && p1 == s.id
}

// challenged reports whether a close may be taken now: always without
// Config.ChallengeClose or once we are closing ourselves (the close only
// ends what is ending), else once a challenge ran out unanswered. It
// starts one, queueing its probe, when none runs.
func (s *Session) challenged(now time.Time) bool {
	if !s.cfg.ChallengeClose || s.State() != engine.StateEstablished {
		return true
	}
	s.challenges++
	act, started := s.chal.Ask(now, engine.ChallengeClose, s.challenges, now.Add(max(2*s.rto(), engine.ChallengeMin)))
	if started {
		s.probe = &outMsg{transport: true, params: engine.Params{Command: CommandPing}}
		s.ctl = append(s.ctl, s.probe)
		s.Counters.Challenges++
	}
	return act
}

// probeAcked ends the running challenge when m is its probe: the live
// peer acknowledged it, so the Logout was spoofed.
func (s *Session) probeAcked(now time.Time, m *outMsg) {
	if m == s.probe {
		s.probe = nil
		if s.chal.Answer(now, s.chal.Probe) {
			s.Counters.SpoofsRefused++
		}
	}
}

// expireChallenge ends a challenge unanswered at its end: the next
// Logout is taken.
func (s *Session) expireChallenge(now time.Time) {
	if s.chal.Running() && !now.Before(s.chal.Until) {
		s.chal.Expire(now)
	}
}

// challengeAt returns when the running challenge runs out.
func (s *Session) challengeAt() (time.Time, bool) {
	return s.chal.Until, s.chal.Running()
}

// refuseAfterLogout reports whether a new message is refused because our
// own Logout went out (Config.ChallengeClose): a closing session does not
// acknowledge the peer's probe, or anything else but the peer's own
// close, so that the peer's challenge of our Logout runs out and it takes
// it.
func (s *Session) refuseAfterLogout(m *Message) bool {
	return s.cfg.ChallengeClose && s.logout != nil && !s.logout.firstSent.IsZero() && !s.isClose(m.Command, m.P1)
}
