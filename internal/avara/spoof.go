package avara

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
)

// Forged datagrams from a ReliablePeer's address (Config.ReliablePeer;
// the threat of RFC 5961: an attacker who knows both addresses and ports,
// sees no traffic, and sends datagrams from the peer's address). A
// datagram has no secret: its checksum is computable and its serials
// are guessed within a window. The reference holds any serial within
// 2048 of the next expected one, so 32 datagrams at serials 2048 apart
// always land one, which is then delivered in place of the peer's
// message at that serial (the peer's copy is a duplicate), and any ack
// field up to the last serial sent is believed, so one datagram can
// acknowledge messages the peer never received, which are then never
// sent again. Against a ReliablePeer, as rudp's streams are:
//
//   - Copies: the peer resends a message unchanged, so two copies of one
//     serial that differ (command, parameters or data) end the session
//     with an error wrapping ErrSpoofed: a copy held ahead of its turn is
//     compared with the one that comes again, and so is a message taken
//     with a duplicate of it within seenSerials (512) serials behind the
//     next expected one (a checksum of it is kept). One of them was
//     forged and which is unknown; the peer sends its copy again until
//     acknowledged, so a forged one that took the place of the peer's
//     is found when the peer's comes.
//   - Acknowledgements: the peer's ack field never goes back (it names
//     the last serial it received in order). One older than the newest
//     taken comes from a datagram delayed on the way, or the newest was
//     forged: if the peer's ack fields stay behind it for longer than
//     max(4 × RTO, engine.ChallengeMin) while its datagrams keep coming,
//     the session ends with an error wrapping ErrSpoofed: messages were
//     taken as acknowledged that the peer does not have, and they are no
//     longer here to be sent again. Without the check the peer would
//     wait for them silently for ever.
//   - Session checksum: the checksum of every datagram but the Login
//     covers, in place of the network version, the version mixed with
//     the client's seed (sessionVersion), which only the two ends know:
//     a datagram of another session, an earlier one of the same peers
//     replayed included, fails the checksum and is dropped as malformed,
//     and a blind attacker must guess those 16 bits on top of the
//     serial. The Login, which opens the session, carries the seed and
//     keeps the plain version; a server takes a datagram with the plain
//     version only when it holds nothing but a Login (a duplicate).
//
// A forged datagram then needs the right 16 bits of checksum and a
// serial within the 2048 of the window: about one in 2^21 lands. One
// that lands exactly at the next serial is delivered at once; it is
// found, and the session ends, when the peer's copy comes within
// seenSerials serials. A forged ack field that acknowledges
// messages the peer then receives anyway does no harm. Integrity of the
// data itself is the business of the layer above (crypto/tls over a
// stream).

// seenSerials is how far behind the next expected serial the checksums
// of the messages taken are kept (Config.ReliablePeer), in serials.
const seenSerials = 512

// ErrSpoofed is wrapped by Err when a ReliablePeer sent two different
// copies of one serial, or its acknowledgements stayed behind what was
// taken as acknowledged: datagrams were forged from the peer's address.
var ErrSpoofed = fmt.Errorf("%w: avara", engine.ErrSpoofed)

// seenSum is the checksum of the message taken at serial.
type seenSum struct {
	ok     bool
	serial uint16
	sum    uint32
}

// sumOf returns the checksum of a message's command, parameters and data.
func sumOf(p engine.Params, data []byte) uint32 {
	h := fnv.New32a()
	var b [8]byte
	b[0], b[1] = byte(p.Command), byte(p.P1)
	b[2], b[3] = byte(p.P2), byte(p.P2>>8)
	b[4], b[5], b[6], b[7] = byte(p.P3), byte(p.P3>>8), byte(p.P3>>16), byte(p.P3>>24)
	h.Write(b[:])
	h.Write(data)
	return h.Sum32()
}

// paramsOf returns m's command and parameters.
func paramsOf(m *Message) engine.Params {
	return engine.Params{Command: m.Command, P1: m.P1, P2: m.P2, P3: m.P3}
}

// recordTaken keeps the checksum of the message taken at serial
// (ReliablePeer). A Login is not kept: a Login of an earlier session of
// the same client, replayed, differs (its seed) and changes nothing.
func (s *Session) recordTaken(serial uint16, p engine.Params, data []byte) {
	if !s.cfg.ReliablePeer || p.Command == CommandLogin {
		return
	}
	if s.seen == nil {
		s.seen = make([]seenSum, seenSerials/2)
	}
	s.seen[serial/2%uint16(len(s.seen))] = seenSum{ok: true, serial: serial, sum: sumOf(p, data)}
}

// sameAsTaken reports whether m, a duplicate, matches the message taken
// at its serial, when that is known.
func (s *Session) sameAsTaken(m *Message) bool {
	if s.seen == nil {
		return true
	}
	e := s.seen[m.Serial/2%uint16(len(s.seen))]
	return !e.ok || e.serial != m.Serial || e.sum == sumOf(paramsOf(m), m.Data)
}

// sameAsHeld reports whether m matches the message held at its serial.
func (s *Session) sameAsHeld(m *Message) bool {
	h := s.slot(m.Serial)
	return sumOf(h.params, h.data) == sumOf(paramsOf(m), m.Data)
}

// spoofed ends the session: two copies of serial differ.
func (s *Session) spoofed(serial uint16) {
	s.Fail(fmt.Errorf("%w: two different messages with serial %d", ErrSpoofed, serial))
}

// ackBehind handles an ack field older than the newest taken
// (ReliablePeer): the peer's ack fields staying behind for
// max(4 × RTO, engine.ChallengeMin) end the session.
func (s *Session) ackBehind(now time.Time, ack uint16) {
	if !s.cfg.ReliablePeer || ack == s.peerAck {
		s.behindSince = time.Time{}
		return
	}
	if s.behindSince.IsZero() {
		s.behindSince = now
		return
	}
	if now.Sub(s.behindSince) >= max(4*s.rto(), engine.ChallengeMin) {
		s.Fail(fmt.Errorf("%w: the peer's acknowledgements stay at serial %d, behind serial %d taken as acknowledged",
			ErrSpoofed, ack, s.peerAck))
	}
}

// sessionVersion returns what the checksums of a ReliablePeer session's
// datagrams cover in place of the network version: version mixed with
// the client's seed.
func sessionVersion(version uint16, seed int32) uint16 {
	return version ^ uint16(uint32(seed)*0x9E3779B1>>16)
}

// sendVersion returns the version our datagrams' checksums cover: with
// ReliablePeer the session's, except a client's before the TOC (its
// Login).
func (s *Session) sendVersion() uint16 {
	switch {
	case !s.cfg.ReliablePeer:
		return s.cfg.Version
	case s.cfg.Client && s.State() == engine.StateHandshake:
		return s.cfg.Version
	}
	return sessionVersion(s.cfg.Version, s.seed)
}

// parse parses b into d with the version the peer's checksums cover:
// with ReliablePeer the session's, except a server's before the Login
// and for a datagram holding nothing but a Login (the client sent it
// again).
func (s *Session) parse(b []byte, d *Datagram) error {
	if !s.cfg.ReliablePeer || !s.cfg.Client && !s.login {
		return ParseDatagram(b, d, s.cfg.Version)
	}
	err := ParseDatagram(b, d, sessionVersion(s.cfg.Version, s.seed))
	if err == nil || s.cfg.Client || !errors.Is(err, engine.ErrMalformed) {
		return err
	}
	if ParseDatagram(b, d, s.cfg.Version) != nil || len(d.Messages) == 0 ||
		slices.ContainsFunc(d.Messages, func(m Message) bool { return m.Command != CommandLogin }) {
		return err
	}
	return nil
}
