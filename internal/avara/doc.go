// Package avara implements the Avara UDP transport, wire-compatible with
// the game Avara's CUDPComm layer (avaraline/Avara at commit aaa5e63,
// network version 18). Section references (§) are to
// docs/protocols/avara.md in this repository, the notes that supplement
// the wiki page "Technical: Packets: UDP Header" with what the reference
// really does.
//
// ParseDatagram and AppendDatagram decode and encode datagrams as the
// reference puts them on the wire (§1): little-endian fields, a
// CRC-16/KERMIT computed with the network version in place of the CRC,
// the ack field with its AckMap flag, and messages whose optional fields
// are written exactly as the reference writes them. Session is one end of
// one connection, a sans-I/O engine.Engine: the client's Login and the
// server's TOC and Control replies (§3.1), serials stepping by 2 from 0,
// the ack field and AckMap (§1.5, §3.3), resends (§3.4) and Logout
// (§3.5). Every message is reliable and delivered in order, with its
// command and parameters (engine.Params); game commands (0..127) pass
// through opaquely, negative ones belong to the transport.
//
// # Choices and deviations
//
// Where the reference is silent, or where this package departs from it
// (§5):
//
//   - Datagrams: never above Config.MaxDatagram (1024, the reference's
//     send buffer; the reference can overrun it, §4.4), packed with as
//     many due messages as fit (beyond the reference's 64-byte packing
//     threshold); up to 16,384 bytes accepted. A datagram with a bad
//     tail (a truncated message, a data length outside 0..984) is
//     refused whole, where the reference keeps the messages before it.
//   - NAT punch datagrams (7 bytes, §1.2): never sent; on receive they
//     are ignored without error and without being counted, since they
//     are part of the reference's traffic on the same socket.
//   - Receiving: strictly reliable and ordered by default: a missing
//     serial is waited for however many later messages are held (up to
//     the 2048-serial window). Config.SkipAfter restores the reference's
//     skipping (§3.3); each serial skipped is counted in Stats.Skipped
//     and logged at Debug level. Duplicates are acknowledged again.
//   - Acknowledging: every datagram carries the ack field; a pure
//     acknowledgement goes out Config.AckDelay (41 ms) after something
//     arrived when nothing else did, at once after the peer's Logout,
//     and while messages are held behind a gap, again every AckDelay
//     plus the retransmit time after the last datagram even if nothing
//     arrived: a reference sender that resent 3 times without hearing
//     from us resends nothing until a datagram from us arrives (§3.4),
//     and would otherwise never send the missing message again. With
//     Config.ReferencePeer the acknowledgement of the last message that
//     arrived also goes out in 3 datagrams at that interval, so that
//     the reference hears from us unless all 3 are lost.
//     The AckMap is sent only while messages are held, only with bits
//     0..31, only while every held serial lies within 64 of the base
//     (past that the reference sender would alias bits, §4.1: the ack
//     field goes alone), never with Config.ReferencePeer (the reference
//     sender's aliasing also drops its messages 64 serials beyond a
//     held one, which the receiver cannot see), and never by a client
//     before the server accepted it (§4.5).
//   - Applying acknowledgements: an ack field older than the newest
//     processed is ignored (the reference sends stale ones, §4.2); AckMap
//     bits are trusted only while no message more than 64 serials beyond
//     the map's base was ever sent (a reference receiver holding more
//     sets aliased bits, §4.1). An ack field beyond the last serial sent
//     rejects the datagram.
//   - Resends: each message is resent when its retransmit time has
//     passed since its last transmission, with no back-off. The
//     retransmit time is the reference's (§3.4: 2 s at first, learning
//     only from commands 17 and 31, within 32 ms..4 s), or with
//     Config.AckRTT the RFC 6298 RTO from the newest message each
//     datagram acknowledges, if sent once and after the previous
//     acknowledgement. The reference's "urgent" first-send timer, which
//     depends on the game's latency tolerance, is not reproduced. After
//     3 datagrams of resends without hearing from the peer only new
//     messages go out, plus the oldest unacknowledged one at its time
//     (the reference sends nothing old; with its game sending every
//     frame it always hears back, and without the exception two quiet
//     throttled ends would wait for each other for ever).
//   - Congestion control: the shared controller of internal/congestion
//     (Config.Congestion) paces datagrams that carry messages and bounds
//     the bytes in flight; a message's acknowledgement acknowledges the
//     datagram of its latest transmission, and its resend time declares
//     that datagram lost. Pure acknowledgements are not paced. The
//     reference reads one datagram per frame and skips a gap once 16
//     messages wait behind it, so with Config.ReferencePeer the sender
//     also keeps the reference's byte quota (§3.2: about 12 KB/s) and
//     at most 16 messages outstanding from the oldest unacknowledged
//     one; a reference receiver then never skips.
//   - Connections: a client sends its Login (serial 0, p3 Config.Seed,
//     the password as a Pascal string, zero-padded to Config.LoginPad,
//     sender −1, ack field 0xFFFE) and
//     nothing else until a TOC with its seed gives it its id; then it
//     sends its Control. A server session (Config.Accept) opens only for
//     a Login with the right password; a wrong one, or a full server (the
//     caller's business), gets no answer, and the client ends after
//     Config.HandshakeTimeout (3 s) with an error saying so. The server
//     sends the TOC (Config.Table; Session.SendTOC for later ones) and its
//     Control, and, unlike the reference, is established only once the
//     client acknowledged the TOC, which shows that the Login's address
//     is the client's (validate.go; Config.Join gives the final id); a
//     Login sent again makes the TOC due at once, and a server without
//     the acknowledgement ends after Config.HandshakeTimeout (4 s). A message whose sender byte names another player than the
//     connection's rejects the datagram (the reference re-matches
//     addresses instead, §3.1.5, which is a listener's business). The
//     distribution field is parsed and ignored.
//   - Close: Close queues a Logout (p1 our id) after what is pending and
//     ends once everything is acknowledged, within Config.Linger (20 s,
//     as the reference). The reference never acknowledges a Logout (it
//     drops the connection on reading it, §3.5), so with
//     Config.ReferencePeer the Logout is sent only once everything
//     before it is acknowledged, and the session ends a retransmit time
//     after the Logout's second transmission, itself a retransmit time
//     after the first. A received Logout, or a Kill naming a client,
//     ends the session after one acknowledgement; with messages of ours
//     unacknowledged Err wraps engine.ErrPeerClosed.
//   - Challenges: the protocol has no secret: anyone who can send from
//     the peer's address and guess a serial within the window can inject
//     any message, a Logout included. Against the reference nothing is
//     challenged: its closing side keeps acknowledging for 20 s, so a
//     probe would not tell a genuine close from a spoofed one. Between
//     peers running this package (rudp's streams), Config.ChallengeClose
//     challenges a close (engine.Challenge): the Logout is dropped
//     unacknowledged and never held ahead of its turn, a probe (a poke)
//     goes out, and a closing end acknowledges nothing new but a close
//     once its Logout went out; an acknowledged probe refuses the
//     Logout as spoofed, an unanswered one lets the Logout sent again
//     after max(2 × RTO, engine.ChallengeMin) be taken. A close while
//     we are closing too is taken at once. Integrity of the data between
//     rudp peers comes from the root package's stream seal.
//   - Forged data: the protocol has no secret, and the reference holds
//     any serial within 2048 of the next expected one and believes any
//     ack field up to its last serial sent. Between peers running this
//     package (rudp's streams), Config.ReliablePeer makes the checksums
//     after the Login cover the version mixed with the client's seed
//     (a datagram of another session fails it), and ends the session
//     (ErrSpoofed) on two different copies of one serial and on the
//     peer's ack fields staying behind one taken before (spoof.go).
//   - Timeouts: Config.DeadTimeout (120 s) ends a session whose oldest
//     unacknowledged message waited that long with nothing acknowledged
//     (engine.ErrRetransmitLimit), as the reference. The UDP layer has
//     no keepalive (§3.5); Config.KeepAlive adds one for peers running
//     this package (rudp streams): a poke (Ping, command 31, p3 0) after
//     KeepAlive without hearing from the peer, acknowledged at once.
//     Config.IdleTimeout is off by default.
//
// # Bounds
//
// Pending messages: Config.MaxQueued (1024, engine.ErrQueueFull). In
// flight: the 2048-serial window (1024 messages). Held out of order: the
// same window, one slot per serial (a message beyond it is dropped
// unacknowledged and sent again). Delivered and not yet taken by Recv:
// MaxRecvQueue (4096), beyond which game messages are refused
// unacknowledged, as with SetRecvOpen(false).
package avara
