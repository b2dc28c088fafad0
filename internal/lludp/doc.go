// Package lludp implements LLUDP, wire-compatible with the Second Life
// viewer's llmessage (secondlife/viewer commit d6d453b): the Second Life
// packet layer, where messages identified by a template message number are
// each carried whole in one UDP datagram, reliable (acknowledged and
// resent) or not, zerocoded when that makes them shorter. Behaviour
// differences of OpenSim and LibreMetaverse are noted where they matter.
// Section references (§) are to docs/protocols/lludp.md in this
// repository, the notes that supplement the wiki page "Packet Layout"
// with what the viewer really does.
//
// ParsePacket and AppendPacket encode and decode datagrams as the viewer
// puts them on the wire (docs/protocols/lludp.md §1): the 6-byte header with a big-endian
// sequence number, message numbers by frequency (§1.2), zerocoding with
// the viewer's run rules and decoder edge cases (§1.3, ZeroEncode,
// ZeroDecode), appended acks (§1.4) and the extra header after the message
// number (§2 erratum 1). Session is one end of one circuit, a sans-I/O
// engine.Engine: circuit opening with UseCircuitCode (§3.1), sequence
// numbers (§3.2), acknowledgements appended or in PacketAck (§3.3),
// resends (§3.4), duplicate suppression (§3.5), pings (§3.7) and
// CloseCircuit. Message bodies are opaque: the package knows the template
// layouts of its transport messages only, and delivers every other number,
// known or not, untouched.
//
// # Choices and deviations
//
// Where the viewer is silent, or where this package departs from it (docs/protocols/lludp.md
// §5):
//
//   - Sequence numbers start at 1 (Config.InitialSeq) and wrap from
//     0xFFFFFF to 0, as in the viewer; any 32-bit number is accepted on
//     receive and compared on its low 24 bits.
//   - Extra header: never sent; skipped on receive.
//   - Zerocoding: every application message is zerocoded when the encoded
//     form is strictly shorter, whatever the template says (receivers
//     honour the flag, docs/protocols/lludp.md §1.3); transport messages never are, as their
//     template entries are Unencoded. 00 00 is never written; received data
//     is decoded with the viewer's semantics up to MaxDecoded bytes.
//   - Acknowledgements: every accepted reliable datagram is acknowledged,
//     duplicates included. Owed acks ride on outgoing datagrams other than
//     PacketAck and resends (oldest first, at most min(250, (1200 −
//     length)/4), within Config.MaxDatagram); the rest go out in PacketAck
//     messages of up to 251 IDs after Config.AckDelay (100 ms), at once
//     when 251 are owed (the viewer waits for the timer) or when closing.
//     At most 4096 acks are owed; beyond that one is dropped, and the
//     peer's resend is acknowledged instead. With Config.RepeatAcks (rudp
//     streams) a PacketAck also carries the previous one's IDs and goes
//     at once from 125 owed, so a lost PacketAck costs no resends.
//   - Resends: the stored datagram with RESENT set and the same sequence
//     number, without appended acks, after 5 × the averaged ping clamped
//     to [Config.RTOMin, Config.RTOMax] (1 s..10 s, 5 s at first), no
//     back-off. After Config.ResendLimit resends (3) and one more timeout
//     the session fails with engine.ErrRetransmitLimit; the limit can be
//     lifted, as OpenSim does. The client's UseCircuitCode follows the
//     same rule (the viewer's 3 retries, 5 s apart); its failure wraps
//     engine.ErrHandshakeTimeout too.
//   - Averaged ping: the viewer's formula, fed by StartPingCheck /
//     CompletePingCheck round trips only (acks give no samples; with
//     Config.AckRTT they time resends instead). Pings go out every
//     Config.KeepAlive (5 s) without the viewer's ±5 % randomisation,
//     from the time the circuit opens; replies to pings already answered
//     are ignored. With Config.PingWhenQuiet (a choice for peers that
//     both run this package), a ping goes only after KeepAlive without a
//     datagram from the peer, so that an idle circuit carries one
//     StartPingCheck and its reply per interval.
//   - Duplicates: checked whatever the RESENT flag (the viewer checks only
//     resends, so a datagram duplicated by the network reaches its
//     application twice; OpenSim checks always). A 65,536-number bitmap
//     behind the newest sequence number received decides; older numbers
//     are duplicates when before the peer's latest OldestUnacked, and new
//     otherwise (see the bound below). Unreliable application messages
//     are checked too, so that none is delivered twice (a layer that
//     drops duplicates itself may have them all the same:
//     Config.DeliverDuplicates); unreliable
//     transport messages are not, since they are harmless to process twice
//     and some peers send them all with sequence number 0.
//   - Circuits: a client sends UseCircuitCode (Config.Circuit) first and
//     holds its messages until that is acknowledged; a server accepts only
//     a reliable UseCircuitCode until it has one (the viewer accepts
//     nothing else off-circuit) and does not check its contents
//     (Session.Circuit reports them). A later reliable UseCircuitCode with
//     another circuit is a restarted peer: adopted, or refused with
//     engine.ErrPeerRestarted (Config.RejectNewPeerSession), once the
//     challenge below found the old circuit gone. A restarted
//     client presenting the same circuit cannot be told from a duplicate;
//     its first messages are acknowledged and dropped as duplicates until
//     its numbers pass those of the old client.
//   - OpenCircuit is ignored (the viewer refuses it over UDP); unknown
//     numbers, including the Fixed 0xFFFFFFFA, 0xFFFFFFFE and 0xFFFFFFFF,
//     are delivered. Bodies are not validated (docs/protocols/lludp.md §2 erratum 11);
//     transport bodies shorter than their template read missing fields as
//     zero, as the viewer does, except that a PacketAck's missing IDs are
//     not acknowledged.
//   - Close: the protocol has no close handshake. Close waits until every
//     pending message is acknowledged and owed acks are sent, then sends
//     CloseCircuit twice, one round trip apart (the averaged ping, or the
//     SRTT with Config.AckRTT; it is unreliable), and
//     ends; Config.Linger bounds the wait. A received CloseCircuit ends the
//     session, with engine.ErrPeerClosed if messages of ours were
//     pending.
//   - Challenges: the viewer takes a CloseCircuit, or a new circuit's
//     UseCircuitCode, at once, so anyone able to send from the peer's
//     address ends the circuit. Here, while the circuit is open, either is
//     first challenged with a StartPingCheck, repeated
//     engine.ChallengeProbes times over the challenge (RFC 5961's
//     reason): the live circuit answers one and the announcement is ignored
//     (Stats.SpoofsRefused); without an answer within two round trips (at least
//     engine.ChallengeMin) it is taken (Config.NoChallenge restores the viewer's way). A client
//     answers pings only once its circuit is open, and no longer once it
//     has sent CloseCircuit.
//   - Idle timeout: Config.IdleTimeout (100 s) without any accepted
//     datagram, where the viewer counts only CompletePingCheck replies.
//   - Sizes: messages are built within min(1200, Config.MaxDatagram)
//     bytes (header and number included, before acks), so datagrams stay
//     within 1201 bytes; datagrams up to MaxDecoded (8192) bytes are
//     accepted.
//   - Delivery is in arrival order; LLUDP has no ordering (docs/protocols/lludp.md §3.6).
//   - Congestion control: the shared controller of internal/congestion
//     (Config.Congestion, BBR by default) bounds the reliable datagrams in
//     flight and paces every datagram carrying a message; the viewer and
//     OpenSim have only their applications' bandwidth throttles. Loss is
//     found by the resend timeout and by RACK (RFC 8985) from the acks:
//     with Config.AckRTT a datagram RACK shows lost is resent at once;
//     otherwise it only stops holding the congestion window, and its
//     resend keeps the viewer's timing (so Config.ResendLimit means what
//     it means to the viewer). With AckRTT the timeout is at least 1.5 ×
//     SRTT, since RACK finds ordinary losses first.
//
// # Bounds
//
// Pending messages: Config.MaxQueued (engine.ErrQueueFull). Delivered
// messages waiting for Recv: MaxRecvQueue (further application messages
// are refused, reliable ones unacknowledged, as with SetRecvOpen(false);
// the datagrams' acks are still applied). Owed acks: 4096. Owed ping answers: 16
// (further pings go unanswered). Duplicate window: 65,536 sequence
// numbers; a datagram older than that and not before the peer's
// OldestUnacked is taken as new, so a message whose acknowledgements were
// all lost while the peer sent 65,536 datagrams could be delivered twice.
// Receive buffer: MaxDecoded. A sequence number still unacknowledged when
// its number comes round again after 2^24 datagrams ends the session with
// engine.ErrRetransmitLimit.
package lludp
