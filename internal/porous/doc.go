// Package porous implements POROUS (paper Rev 0.2), wire-compatible with
// lowquark/uflow at commit dde0da6 (crate udp-lib-2): ordered delivery of
// optionally-reliable packets on up to 256 channels over UDP, with
// congestion control.
//
// Frame, Message, Decode and Frame.AppendTo are the wire format (docs/protocols/porous.md
// §1): eight frame types, three message types, big-endian, one frame per
// datagram of at most 1472 bytes, parsed as strictly as the reference.
// Session is one peer, a sans-I/O engine.Engine that follows the
// reference: the peer states and the symmetric 4-way handshake with
// nonces (paper §2.2–2.5, Figures 1–3; docs/protocols/porous.md §3.1, §3.2, §3.8), the
// transfer layer with its windows, resends, sentinel frames and AIMD
// congestion window (paper §3.1, Figures 5–7; docs/protocols/porous.md §3.3, §3.4), and the
// sequencing layer with per-channel packet numbers, fragmentation,
// dependencies, Sentinels and WindowAcks (paper §3.2, Figures 8–11; docs/protocols/porous.md
// §3.5, §3.6). Driven like the reference it emits the reference's frames
// byte for byte (testdata/porous.json, both sides of both captures).
//
// # Deviations and choices
//
// Where the reference or the paper leaves room, or has a bug, this is what
// Session does (docs/protocols/porous.md §5). Only the challenge of a close (below) puts
// frames on the wire that the reference would not send there, and the
// reference ignores them.
//
//   - Flow of a flush: as the reference, control frames in the order they
//     were queued, then DataAcks, then Data frames; but Poll hands out one
//     frame at a time, so a flush is "Poll until 0". Every Data frame
//     accepted is acknowledged at the next Poll.
//   - WindowAck: one that would move a channel's send window past the
//     next packet to send is ignored (the reference accepts it, and every
//     later packet of the channel would then wait behind the window).
//   - DataAck: each frame_seq at most once per DataAck (sorted, at most
//     367 per frame), which keeps a reference sender clear of its
//     flight-size wrap (docs/protocols/porous.md §4 bug 1). Received DataAcks may repeat IDs;
//     each frame counts once.
//   - Data before Connected: never sent; messages queued by Send during the
//     handshake wait.
//   - RTT: samples from Ping/PingAck as in the reference (first sample
//     replaces the initial 200/100 ms), and also from DataAcks of frames
//     sent once (Karn's rule), smoothed by engine.RTT. The RTO is srtt +
//     max(4·rttvar, srtt/2, 1 ms), within [MinRTO, MaxRTO] = [10 ms, 3 s];
//     the reference uses srtt + max(step time, 4·rttvar) with no bounds,
//     its step time (about 15 ms) giving headroom that srtt/2 stands in
//     for: without it a queue building at a bottleneck, or the frames of
//     one burst serialised behind each other, read as losses. The
//     reference never backs off; with RACK (below), a timeout declares only
//     the oldest frame lost for its resend and doubles the RTO until the
//     next DataAck (RFC 6298 §5.4-5.5), up to MaxRTO: a flight made late by
//     a queue that grew at once is then acknowledged rather than sent
//     twice (with 1,000 streams to one loopback listener, 21,000 frames
//     per run were resent by timeout, none lost).
//   - Congestion control (docs/protocols/porous.md §3.3) is the shared controller of
//     internal/congestion, local to the sender and invisible on the wire.
//     By default (Config.Congestion = congestion.BBR) it paces datagrams
//     at its estimate of the bottleneck bandwidth and bounds the flight
//     at about two bandwidth-delay products, and loss is detected by RACK
//     (RFC 8985) from the DataAcks as well as by the RTO, so a loss costs
//     about a round trip; random loss does not lower the rate. The RTO
//     then runs from the later of a frame's transmission and the latest
//     DataAck (RFC 6298 §5.3): a path or host that stalls for longer than
//     the RTO makes the flight late, not lost, and costs no resends. The
//     paper's window, congestion.AIMD, remains available and is what the
//     reference runs: initial 1472 bytes, ssthresh 1 GiB, slow start by
//     the bytes acknowledged, one MTU per window acknowledged in
//     congestion avoidance, growth only when at least half the window
//     was in flight, halving at most once per RTT for a frame sent after
//     the previous halving (the paper's order, eq. 11–12: cwnd =
//     max(cwnd/2, 1472), then ssthresh = max(cwnd, 2944); the reference
//     sets ssthresh to the window before halving, docs/protocols/porous.md §2 row 11, which
//     slow-starts straight back into an overflowing queue), reset to one
//     frame after losses for 8·RTO without an acknowledgement (the
//     paper's ρ·T_rto rather than the reference's ρ·T_rtt, docs/protocols/porous.md §2 row
//     10: with the RTO's 10 ms floor a LAN's RTT of tens of microseconds
//     made 8·RTT shorter than one timeout), capped at RTT × send rate
//     limit with an RTT of at least 1 ms (docs/protocols/porous.md §4 bug 7); loss by
//     timeout only. With either, a frame is created only when the next
//     message fits the free window (the whole frame when nothing is in
//     flight) and the pacer allows it; a lost frame is resent before any
//     new frame once it fits. Losses are counted once per frame (docs/protocols/porous.md §4
//     bug 3 avoided). A window reset doubles the RTO, up to 8 times; any
//     acknowledgement clears that.
//   - Watchdog: Config.IdleTimeout (default 20 s) is reset by every
//     datagram from the peer that is accepted (decoded, and not refused
//     as out of window or over the receive budget), not only by PingAck
//     (docs/protocols/porous.md §2 row 9), and applies to the handshake too (ErrHandshakeTimeout).
//   - Pings: every Config.KeepAlive, as the reference; with
//     Config.PingWhenQuiet (a choice for peers that both run this
//     package), only after KeepAlive without a frame from the peer, so
//     that an idle connection carries one Ping and its PingAck per
//     interval and its timer fires for nothing else.
//   - Disconnect: Close waits, bounded by Config.Linger (default 5 s), for
//     everything queued to be sent and acknowledged, then sends
//     Disconnect every 500 ms until DisconnectAck (docs/protocols/porous.md §3.8). When
//     Linger runs out first, one Disconnect is sent and the session ends
//     with engine.ErrLingerTimeout if messages were unconfirmed. After
//     answering the peer's Disconnect the session keeps answering its
//     repeats for max(2·RTO, 1 s) (the reference: 20 s in Disconnected),
//     then ends: Err is nil if nothing of ours was pending, else it wraps
//     engine.ErrPeerClosed (always so during the handshake). PeerClosed
//     reports the peer's close from the moment it is taken, so that a
//     reader need not wait for the end of that TIME-WAIT.
//   - Challenges (RFC 5961): a Disconnect, or a Connect with a new nonce,
//     that arrives while connected may be a blind attacker's, spoofing
//     the peer's address. It is taken only after Pings that the live
//     session would answer (PingAck), sent engine.ChallengeProbes times
//     over max(RTO, engine.ChallengeMin), got no answer; a PingAck to any
//     of them refuses it (Stats.Challenges, Stats.SpoofsRefused;
//     Config.NoChallenge turns this off). A disconnecting peer ignores
//     Pings in the reference, so against it a close costs an RTO more.
//     A disconnecting Session instead answers a Ping with a ConnectAck
//     whose nonce is the pinging peer's nonce XOR (ping id + 1), which a
//     blind attacker cannot forge; the challenger takes the Disconnect on
//     it, one round trip after it came. The reference pings only while
//     connected, and then ignores ConnectAck.
//   - Handshake failures: an incompatible Connect (version, channel count)
//     ends the session with engine.ErrIncompatible and nothing sent; a
//     ConnectAck for another nonce ends it with engine.ErrRejected; both
//     are the reference's "Disconnected" (docs/protocols/porous.md §3.2), here StateClosed at
//     once.
//   - Peer creation (Config.Accept): only a compatible Connect creates a
//     session (the reference accepts any frame that parses; docs/protocols/porous.md §5). A
//     listener answers an incompatible one without creating anything
//     (see Refusal): its own Connect, so that the peer gives up at once
//     as it would with the reference's, then a Disconnect.
//   - Restarted peer: while connected, a Connect with a new nonce is
//     acknowledged as the reference does (Stats.PeerRestarts counts it),
//     or, with Config.RejectNewPeerSession, refused with
//     engine.ErrPeerRestarted so that the caller can start afresh.
//   - Receiving: Data frames are accepted as the reference does (window
//     [i_b − 32768, i_b + 32768)), less what the peer cannot have sent
//     (see spoof.go): a frame numbered like one taken before as the next
//     after the newest is acknowledged but not applied again, and with
//     Config.ReliablePeer frames go at most RxAhead past the oldest one
//     missing (and this end numbers none of its own further past its
//     oldest unacknowledged one, which such a peer would refuse) and
//     channels are delivered strictly in order; two
//     different copies of a packet end the session (ErrSpoofed), and so
//     does a channel waiting for a missing packet for IdleTimeout
//     (ErrStalled). A frame is dropped unacknowledged, so
//     that the peer resends it later, when 65536 IDs already wait for a
//     DataAck or when it would take the receive memory (reassembly queues
//     and packets delivered but not yet taken by Recv) above the budget,
//     max(16 MiB, 4·MaxPacket). Charged are 64 bytes per queued or
//     delivered packet, its whole buffer on its first fragment, and each
//     receive page (64 queue slots) while it is in use. So that the packet
//     blocking a channel can complete, a frame whose packets lie at or
//     before the front of their channel's queue may instead use that
//     channel's reserve of one packet (entry, page and largest buffer);
//     the receive memory is thus at most the budget plus one packet per
//     channel, plus, uncharged, each channel's page table (8 KiB, once it
//     has received) and one spare page kept for reuse. A caller that does not call Recv stops reception once the
//     budget is full. A channel's queue is indexed by packet_seq, so that
//     packets arriving in any order cost constant time each.
//   - Delivery: docs/protocols/porous.md §3.6 walk, which goes on after consuming a
//     sentinel or dud entry (docs/protocols/porous.md §4 bug 2). Delivered messages wait in
//     Recv's queue, which the caller drains. engine.Message.Reliable is
//     false: the send mode is not on the wire. A packet larger than
//     Config.MaxPacket is dropped (acknowledged, as the reference does),
//     counted in Stats.TooLarge and logged at Debug to Config.Logger.
//   - Pending: a Reliable or Passive packet is pending until every frame
//     carrying its fragments is acknowledged, an Unreliable one until all
//     its fragments are sent. Send refuses more than Config.MaxQueued
//     pending packets or Config.MaxQueuedBytes pending bytes (one packet
//     is always admitted when nothing is pending).
//   - Buffers: the buffers of packets sent, and the reassembly buffers of
//     packets of one fragment received (handed back by Recycle), come
//     from pools shared by all the sessions of the process, by size class
//     (see packetPools): a session with nothing in flight holds none.
//   - Bounds: 64 queued control frames (more are dropped; each is repeated
//     by its timer or by the peer), 8 outstanding pings, 65536 frame IDs
//     waiting for a DataAck, the transfer queue by the 32768-frame window,
//     each channel's send queue by Pending's bounds, and its receive queue
//     and Recv's queue by the 65536-packet window and the receive budget
//     and reserves above; the frames received below i_b take two bits
//     per number of the 32768-frame window (8 KiB, allocated at the first
//     frame missing and freed by Trim once none is).
//   - Scheduling (local, docs/protocols/porous.md §2 row 16): each channel has its own send
//     queue. Channels of Low priority (Config.Priorities) send only when
//     no High channel has anything to send; among the channels of one
//     priority the next message comes by deficit round robin
//     (Config.SendOrder RoundRobin, Config.Weights), and small messages
//     of several channels share a frame. A channel that becomes active
//     goes first for one quantum (RFC 8290 §4.2's new flows), and a High
//     one with at most a fragment unsent sends its frame then even if the
//     congestion window or the pacer holds the bulk back: such frames are
//     at most MaxFrameSize bytes in flight in all, and the pacer counts
//     them as a debt the bulk repays, so a small message on a quiet
//     channel does not wait behind another channel's paced bulk and the
//     long-run rate is unchanged. Arrival keeps the reference's order
//     (one queue per priority, in Send order). A channel holding a
//     congestion window of unsent data (at least 64 KiB) refuses more
//     with engine.ErrQueueFull, so a message queued later leaves within
//     about a round trip; an Unreliable packet still unsent after
//     Config.MaxUnreliableDelay (100 ms) is dropped and counted in
//     Stats.Expired rather than sent late.
//   - Datagram size: never above 1472 bytes; a longer incoming datagram is
//     malformed (the reference truncates it and fails to parse it).
//     Config.LargeFrames and SetMaxFrame lift the bound for Data frames
//     between peers that both allow it, never the reference: see
//     LargeFrameSize.
package porous
