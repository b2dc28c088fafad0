package avara

import "time"

// The reference's write quota (Config.ReferencePeer), from
// avaraline/Avara aaa5e63, src/net/CUDPComm.cpp, CUDPComm::AsyncWrite:
// every connection earns kUnitQuota (3) bytes per millisecond for each
// cram level up to the lower of both ends' levels, plus one; a
// connection is written to only while its quota is not negative; the
// quota is capped at kMaxAllowedQuota (3 × 120) when a datagram goes out,
// and each datagram costs kHeaderQuota (12) plus its length.
const (
	quotaUnit   = 3   // bytes per millisecond per cram level above −1
	quotaHeader = 12  // bytes paid per datagram besides its length
	quotaCap    = 360 // bytes the quota may bank
)

// quotaRate is the bytes per millisecond the connection earns: (min(our
// cram level, the peer's) + 1) × 3. The peer's level is 0 until its
// Control arrives, as in the reference (a new connection's cramData is 0).
func (s *Session) quotaRate() int {
	return (int(min(s.cfg.Cram, s.peerCram)) + 1) * quotaUnit
}

// earn adds the quota earned in the whole milliseconds since the last
// time it was earned, up to quotaCap. Banking at most quotaCap while
// idle is the reference's cap applied early: it caps before paying, and
// a quota at or above 0 allows a datagram either way.
func (s *Session) earn(now time.Time) {
	n := now.Sub(s.quotaAt) / time.Millisecond
	if !s.cfg.ReferencePeer || n <= 0 {
		return
	}
	s.quotaAt = s.quotaAt.Add(n * time.Millisecond)
	s.quota = int(min(quotaCap, int64(s.quota)+int64(n)*int64(s.quotaRate())))
}

// pay charges a datagram of n bytes to the quota.
func (s *Session) pay(n int) {
	if s.cfg.ReferencePeer {
		s.quota -= quotaHeader + n
	}
}

// quotaAllows reports whether the quota lets a datagram carrying
// messages leave at now (always, without Config.ReferencePeer).
func (s *Session) quotaAllows(now time.Time) bool {
	s.earn(now)
	return !s.cfg.ReferencePeer || s.quota >= 0
}

// quotaReady returns when the quota next allows a datagram carrying
// messages: the latest time passed in if it does now, else the first
// whole millisecond at which the debt is paid.
func (s *Session) quotaReady() time.Time {
	if !s.cfg.ReferencePeer || s.quota >= 0 {
		return s.now
	}
	r := s.quotaRate()
	ms := (-s.quota + r - 1) / r
	return s.quotaAt.Add(time.Duration(ms) * time.Millisecond)
}

// outstandingAllows reports whether Config.ReferencePeer lets the next
// serial go: fewer than ReferenceSkipAfter messages outstanding from the
// oldest unacknowledged one (s.flight starts with it), so that the
// reference receiver, which skips a gap once 16 messages are held behind
// it (avaraline/Avara aaa5e63, src/net/CUDPConnection.cpp,
// CUDPConnection::ReceivedPacket), can hold at most 15.
func (s *Session) outstandingAllows() bool {
	return !s.cfg.ReferencePeer || len(s.flight) == 0 ||
		s.nextSerial-s.flight[0].serial < 2*ReferenceSkipAfter
}
