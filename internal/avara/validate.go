package avara

import (
	"fmt"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// A server validates its client before the connection opens. The Login
// is a datagram anyone can send from any address, and the reference
// server answers it at once with the TOC and its Control and keeps
// resending them until its 120 s dead timeout, about 290 times the
// Login's bytes, to an address that may never have asked (avaraline/Avara
// aaa5e63, src/net/CUDPComm.cpp: CUDPComm::ReadComplete takes the Login
// and CUDPComm::SendConnectionTable sends the table to every client). A
// server session instead takes the Login, sends the TOC and Control, and
// stays in StateHandshake until the client acknowledges the TOC: only the
// owner of the address receives it, so the acknowledgement shows that the
// client receives what is sent to it. Then Config.Join is asked for the
// client's final id, and the session is established. Until then a caller
// bounds what it sends (rudp sends at most 3 times the bytes received),
// and Config.HandshakeTimeout after the Login without an acknowledgement
// ends the session. A Login sent again (the client got no TOC) makes the
// TOC and Control due again at once, so that a client whose first TOC
// was held back by such a bound gets it in answer to its next Login.

var errFull = fmt.Errorf("%w: avara: no player id left for the client", engine.ErrRejected)

// validated establishes a server session whose first TOC was just
// acknowledged, with the id Config.Join gives: a TOC with the new id
// follows when it differs from the one the first TOC gave.
func (s *Session) validated() {
	s.toc = nil
	if s.State() != engine.StateHandshake {
		return
	}
	if s.cfg.Join != nil {
		id, t, ok := s.cfg.Join()
		if !ok || id < 1 || id > MaxClients {
			s.Fail(errFull)
			return
		}
		if id != s.peerID {
			s.prevID, s.peerID = s.peerID, id
			s.queueTOC(&t)
		}
	}
	s.Establish()
}

// resendHandshake makes the server's TOC and Control, while unacknowledged,
// due again at now: the client sent its Login again.
func (s *Session) resendHandshake(now time.Time) {
	for _, m := range s.flight {
		if !m.acked && (m.params.Command == CommandTOC || m.params.Command == CommandControl) {
			m.nextSend = now
		}
	}
}
