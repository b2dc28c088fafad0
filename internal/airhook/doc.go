// Package airhook implements the Airhook protocol: reliable, unordered
// delivery of messages of up to 256 bytes over UDP, wire-compatible with
// wtanaka/airhook at airhook-2 (commit f5a18bd), Dan Egnor's original C
// library.
//
// Packet encodes and decodes the packet format of the published "Packet
// Format" page as corrected by the reference (airhook-docs/protocols/airhook.md §1, §2).
// Session is one endpoint, a sans-I/O engine.Engine that follows the
// reference state machine (docs/protocols/airhook.md §3): the session handshake (§3.2),
// sequence numbers, header repeats and the observed-octet range check
// (§3.3, §3.7), message numbering with E omitted when 0 (§3.4), gap
// detection and missed lists (§3.5, §3.6), the 255-packet and
// 255-message windows (§3.8) and the adoption of a restarted peer
// (§3.9). Driven with a 1 s RTO it emits the reference's packets byte for
// byte (testdata/airhook.json).
//
// # Deviations and choices
//
// The protocol is kept as the reference speaks it; what follows is what
// this engine adds or decides where the reference is silent (docs/protocols/airhook.md §5).
//
//   - Timer: the reference retransmits (header repeats) on a fixed 1 s
//     interval. Here that interval is an RFC 6298 RTO (Config.RTOInitial,
//     RTOMin, RTOMax; defaults 250 ms, 10 ms, 5 s), sampled following
//     Karn's rule from packets sent once that carried messages, and doubled
//     by every header repeat the timer sends. Only the timing of header
//     repeats depends on it, so peers are unaffected. The retransmission
//     of messages itself is the reference's: a message is resent, under a
//     new number, only when the peer reports it missed.
//   - Congestion control: the shared controller of internal/congestion
//     (Config.Congestion, BBR by default) paces the packets that carry
//     messages and bounds the bytes of those not yet confirmed; the
//     reference sends as fast as its 255-packet and 255-message windows
//     allow. When the peer confirms a packet, the packets before it count
//     as delivered, except those carrying a message the peer's missed list
//     names, which count as lost. A packet due only to confirm what
//     arrived goes out whatever the controller says, without messages.
//   - Keepalive (Config.KeepAlive): after KeepAlive without receiving,
//     the session sends a new packet without messages whose observed
//     octet repeats its previous one, so it confirms nothing new; a header
//     repeat when the sequence window is short. The reference has no
//     keepalive (airproxy forces a header repeat after 60 s).
//   - Idle timeout (Config.IdleTimeout): a packet older than the newest
//     one accepted is counted (Stats.Duplicates) but does not reset it,
//     so that a session whose sequence window a forged or corrupted
//     packet moved ahead of the peer's (all the peer's packets then look
//     old) ends with engine.ErrIdleTimeout instead of stalling.
//   - Answering probes: a session answers at once a new packet that
//     carries no message, no missed list, no gap and no new confirmation,
//     which is what such a keepalive looks like. The reference confirms
//     such a packet only with its next transmission, so against a
//     reference peer an idle timeout must exceed the peer's own
//     keepalive interval (60 s for airproxy).
//   - Handshake completion: the session is established once the peer
//     has echoed our session ID (O equal to ours), which is when the
//     reference considers its session confirmed (docs/protocols/airhook.md §3.2). Only an
//     endpoint that received our random ID can echo it, so this also
//     shows that the peer's address receives what we send. The session
//     push goes on after that: until the peer confirms a packet of ours
//     that carried both session fields, every packet carries them and the
//     last one is repeated every RTO (with back-off); a session also
//     answers at once every packet that still carries the peer's session
//     fields. The reference does neither: a reference peer with nothing
//     to send confirms the push only with its next transmission, which
//     does not hold up the handshake here.
//   - Flag bit 7: a datagram with bit 7 set is not an Airhook packet and
//     is rejected with ErrOutOfBand; the reference never sets the bit and
//     does not check it. Bits 5 and 6 are ignored, as in the reference.
//   - Rejections change nothing: a packet that fails the observed-session
//     or observed-octet check is refused before any state changes, whereas
//     the reference has already reset its session state for a new peer
//     session at that point (docs/protocols/airhook.md §4.5).
//   - Refusing messages: at most MaxRecvQueue (4096) delivered messages
//     wait for Recv. Beyond that, and while the caller has closed the
//     session to new data (SetRecvOpen), a new packet carrying messages
//     is taken without them, as its header repeat would be: what it
//     confirms of our packets is applied, so our own messages keep
//     flowing, and its messages are detected missed, so the peer sends
//     them again. A caller that does not call Recv holds the peer back
//     rather than growing memory.
//   - Missed list: capped at 256 entries; a peer with inconsistent
//     numbering overflows the reference's list and aborts it (docs/protocols/airhook.md §4.3).
//   - Restarted peer: adopted as in the reference (Stats.PeerRestarts),
//     or, with Config.RejectNewPeerSession, refused with
//     engine.ErrPeerRestarted so that the caller can start a new
//     association. Once established, though, a new session ID is first
//     challenged, where the reference takes it at once: the session sends
//     the live peer a packet and ignores the new session if that packet
//     is confirmed within two RTOs (Stats.SpoofsRefused), so that a
//     blind attacker sending from the peer's address cannot replace it
//     (see Session.challenged; Config.NoChallenge turns this off).
//   - Close: the protocol has no close message (docs/protocols/airhook.md §3.10). Close
//     stops Send; the session keeps sending what is queued and answering
//     the peer, and reaches StateClosed once nothing is pending, every
//     message received has been confirmed and no datagram has arrived for
//     max(2 RTO, MinTimeWait) (a TIME-WAIT, so that a peer whose last
//     confirmation was lost is still answered), or when Config.Linger runs
//     out (then Err wraps
//     engine.ErrLingerTimeout if messages are left). Closing before the
//     handshake completes closes at once if no peer is known yet or
//     nothing is pending; otherwise what is queued is still delivered. Idle and handshake timeouts are
//     local too.
//   - Ordering: messages are delivered once but not in order; a message
//     reported missed is resent under a new number after younger ones
//     (docs/protocols/airhook.md §3.11). Capabilities().Ordered is false.
//   - Datagram size: at most Config.MaxDatagram (default 1500, the
//     reference applications' buffer), filled with as many queued
//     messages as fit.
package airhook
