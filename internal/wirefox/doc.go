// Package wirefox implements Wirefox, wire-compatible with iridinite/wirefox
// at commit 0897fcf (the project's WireFormat.md is out of date; see the
// notes). Section references (§) are to docs/protocols/wirefox.md in this
// repository, the notes that give the exact bytes the reference puts on
// the wire and its behaviour.
//
// ParseDatagram and AppendDatagram encode and decode the datagram header
// (§1.2): flags most significant bit first, a big-endian datagram ID, ACK
// and NAK lists of 1..256 IDs with count − 1 on the wire, and the
// data-length field, which is written exactly and never relied upon on
// receive (§4 bug 1). ParsePacket and AppendPacket do the same for the
// packet header (§1.3): SEG and BIG flags, packet ID, options, channel,
// per-channel sequence, length before offset, split fields.
// ParseHandshake, AppendHandshake and AppendOOB build the out-of-band
// CONNECT_ATTEMPT messages (§1.5). Session is one end of one connection,
// a sans-I/O engine.Engine.
//
// # Choices and deviations
//
// Where the reference is silent, or where this package departs from it
// (§4, §5):
//
//   - Handshake: INITIAL_CLIENT, INITIAL_SERVER, UNENCRYPTED_ACK (§3.2),
//     repeated every 2 s, 4 attempts, then Err wraps
//     engine.ErrHandshakeTimeout; with Config.HandshakeTimeout, repeated
//     until it passes, then Err is engine.ErrHandshakeTimeout. A client that receives INITIAL_SERVER
//     again after it completed sends UNENCRYPTED_ACK again, and its first
//     connected datagram follows UNENCRYPTED_ACK; a server takes a
//     connected datagram from a client it answered as its UNENCRYPTED_ACK
//     (both §5). An unencrypted server is established only once the
//     client proved its address (the reference's server takes
//     UNENCRYPTED_ACK, which echoes nothing of ours, from any source):
//     it sends a probe, a keepalive, at once and every 200 ms, and the
//     client's ACK of one of them, whose datagram IDs start at random,
//     completes the handshake; meanwhile the client's connected datagrams
//     are dropped unacknowledged, and after 10 probes (2 s) Err wraps
//     engine.ErrHandshakeTimeout. An encrypted server needs no probe: the
//     client's DONE is sealed with keys derived from the server's
//     key-exchange key, which only the client's address received.
//     A server refuses another protocol version
//     (INCOMPATIBLE_VERSION) and a client whose crypto flag differs from
//     Config.Encrypt (INCOMPATIBLE_SECURITY) with ERROR_OCCURRED and ends
//     with engine.ErrIncompatible. A client's ERROR_OCCURRED ends it with
//     engine.ErrIncompatible, ErrNoFreeSlots, ErrAlreadyConnected or
//     ErrConnectRefused. ALREADY_CONNECTED concerns a whole endpoint and
//     is never sent here.
//   - Encryption (Config.Encrypt, §1.7, §3.8): after INITIAL_SERVER the
//     AUTH_MSG exchange: the client's fresh X25519 key and challenge flag
//     (state 0), the server's fresh key in answer, both in the clear;
//     then, sealed, the client's challenge to Config.ServerKey and the
//     server's answer (state 1) when the client checks the server's
//     identity, and DONE (state 2), which the server answers with an
//     AUTH_MSG without state that the client ignores. Key pairs,
//     challenge and the 24-byte nonce of every datagram come from
//     Config.Rand. The message awaiting an answer is repeated as in
//     §3.2; a repeat of the peer's plaintext key exchange after ours is
//     answered again, and a server takes a sealed connected datagram for
//     a lost DONE. From the key exchange on every datagram, out-of-band
//     ones included, is sealed, at most MaxDatagram bytes with its 40
//     bytes of nonce and MAC; one that does not open is dropped and
//     counted (ErrDecrypt; the reference drops the connection).
//   - Reliability (§3.3, §3.4): packet IDs from 0; datagram IDs from a
//     random first ID in 0x80000001..0xFFFFFFFF (the reference numbers
//     from 0, and takes such a first ID without NAKs), so that a blind
//     source cannot acknowledge a probe and an old session's datagrams,
//     replayed, fall outside the live one's history;
//     every transmission in a new datagram; ACK and NAK lists in ack-only
//     datagrams when more than 10 IDs are owed or after 10 ms; a skipped
//     datagram ID is NAKed once 3 later IDs arrived and a quarter of the
//     RTT passed, not at once as the reference does (§4 bug 5); a NAKed
//     datagram's packets are sent again at once; the timeout is the
//     reference's (105 ms, then 2·avg + 4·(max − min) + 5 ms over 32
//     samples) times the number of sends, counted from the last send or
//     the latest ACK if later (RFC 6298 §5.3: a stall of the path or a
//     host is not loss). With Config.RepeatAcks (rudp streams) an
//     ack-only datagram repeats the previous one's ACKs, so a lost one
//     costs no resends. After Config.SendLimit sends (6)
//     Err wraps engine.ErrRetransmitLimit. Several resent and new packets
//     share a datagram, within Config.MaxDatagram (at most 1300 bytes,
//     §4 bug 2); datagrams up to RecvBuffer (2048) bytes are received.
//   - Congestion control: the shared controller of internal/congestion
//     (BBR by default) paces the datagrams and bounds those in flight;
//     RACK (RFC 8985) finds lost datagrams from the acks as a NAK would.
//     Nothing on the wire changes. With Config.ReferencePeer, for a
//     peer that may be the reference, the sender also keeps to the
//     reference's own pace: a datagram per 5 ms write cycle, new packets
//     within the reference's congestion window (§3.4).
//   - Channels: channel 0 and Config.Channels, which must mirror the
//     peer's table (§3.5); a packet on another channel is rejected whole.
//     The channels with something to send take turns by deficit round
//     robin, a datagram's worth each. Unreliable messages are sent once;
//     their segments, as in the reference, reliably.
//   - Messages are blobs: the command byte, then the payload (§1.4). Send
//     takes user commands (15 and above) only; internal commands received
//     are not delivered (DISCONNECT_REQUEST closes, the others are
//     dropped).
//   - Keepalive and idle timeout: the reference has neither (§3.7). After
//     Config.KeepAlive without hearing from the peer, the session sends a
//     data datagram without packets (its data section two zero bytes),
//     sent once, whose ACK the reference sends (§3.3) without taking any
//     packet from it, so that a silent peer still answers. (A PONG packet,
//     command 1, would trip the reference's assertion on an unexpected
//     system packet, Peer::OnSystemPacket; a data section shorter than 2
//     bytes makes it drop the connection, DatagramHeader::Deserialize.)
//     Config.IdleTimeout ends the session with engine.ErrIdleTimeout.
//   - Close: Close sends the pending messages, then a reliable
//     DISCONNECT_REQUEST, and closes on DISCONNECT_ACK or after
//     Config.Linger, or, everything acknowledged, after IdleTimeout
//     without an answer. The peer's DISCONNECT_REQUEST is answered with an
//     out-of-band DISCONNECT_ACK, and the session ends (with
//     engine.ErrPeerClosed when messages of ours were pending); with
//     messages pending the answer first waits for the ACKs the reference
//     still sends, its 10 ms ACK delay and 5 ms cycle after a round trip,
//     within its 200 ms linger (Session.Send is refused meanwhile). After its
//     DISCONNECT_REQUEST the session takes and acknowledges nothing more.
//   - Challenges: an established session does not take a new client's
//     INITIAL_CLIENT from the peer's address at once, nor, with
//     Config.Challenge (for peers running this package), its
//     DISCONNECT_REQUEST. It probes the live peer with keepalives, at
//     once and three more times over two timeouts (at least
//     engine.ChallengeMin); the peer's ACK of any datagram sent since
//     answers: the announcement was spoofed (Stats.SpoofsRefused).
//     Otherwise the next copy is taken: the close, or the restart, which
//     ends the session with engine.ErrPeerRestarted (the reference
//     ignores a new INITIAL_CLIENT while connected; its restarted
//     client repeats its INITIAL_CLIENT every 2 s, so that the copy 2 s
//     after the first is taken).
//   - Duplicate histories: the last 65,536 datagram IDs and packet IDs
//     (the reference keeps 10 s), 1,048,576 packet IDs with
//     Config.ReferencePeer; a sender keeps fewer than 32,768 packet IDs
//     outstanding. A datagram whose ID, or one of whose packet IDs, is
//     more than half its history past the newest seen (from 0 before any)
//     is rejected whole, so that a blind spoof cannot move a history so
//     far that the genuine IDs count as duplicates.
//
// # Bounds
//
// Pending messages: Config.MaxQueued (engine.ErrQueueFull). Messages
// waiting for Recv: 4096; then, as with SetRecvOpen(false), a datagram
// with new packets is not acknowledged and its new packets are dropped
// (Stats.Refused), so the peer sends them again. Reassembly and ORDERED
// messages held behind a gap: Config.MaxRecvBuffer bytes (32 MiB), every
// message, segment and held message counted at its footprint (see
// recvmem.go); a packet beyond is refused in the same way (the first of
// a run logged at Debug) unless it belongs to the next message of its
// ORDERED channel, which may exceed the bound by one largest message's
// footprint. A message longer than Config.MaxMessage is taken and
// dropped (Stats.TooLarge). Owed ACKs: 4096, NAKs: 1024; beyond, an ID is
// dropped and the peer's timeout covers it.
package wirefox
