// Package congestion is the congestion controller that every rudp engine
// shares: how many bytes may be in flight (cwnd), when the next datagram
// may leave (pacing), and which datagrams are lost (RACK). It is sans-I/O
// like the engines: time comes in as an argument, nothing reads the clock
// or starts a goroutine, and the same calls give the same answers on every
// platform (integer arithmetic only).
//
// Nothing here changes the bytes on the wire. An engine tells the
// Controller what it sends and what the peer acknowledged, in the terms of
// its own protocol (POROUS DataAcks, Airhook confirmations and missed
// lists, LLUDP acks), and asks it whether it may send.
//
// # Using a Controller
//
// The engine keeps one Packet per datagram that counts in flight (one
// that carries data the peer acknowledges) and calls:
//
//   - OnSent when the datagram leaves;
//   - OnAcked for each datagram newly acknowledged and OnLost for each one
//     declared lost, then Update once per acknowledgement (or loss
//     detection) event with its RTT sample;
//   - CanSend before building a datagram, and NextSend to learn when to
//     try again when pacing holds it back;
//   - AppLimited when it could send but has nothing to send.
//
// # Algorithms
//
// BBR (the default) is model-based, after the BBR drafts
// (draft-ietf-ccwg-bbr-02; delivery-rate estimation as in
// draft-cheng-iccrg-delivery-rate-estimation-02): it estimates the
// bottleneck bandwidth (the largest delivery rate over the last ten round
// trips) and the minimum RTT (over ten seconds), paces at a gain times the
// bandwidth (Startup 2.77, then a cycle of 1.25, 0.75 and six rounds at
// 1), and keeps at most about two bandwidth-delay products in flight.
// Startup also ends when the smallest RTT of a round shows a queue (RFC
// 9406's delay threshold), before the queue overflows.
//
// Loss is judged by the round each datagram was sent in, two rounds
// later, once all of them are resolved. The datagrams sent at a gain of
// at most 1 give the background loss rate: loss the path shows whatever
// the rate, which the bandwidth estimate corrects for instead of decaying
// by it. It averages the median of the last three samples, so that the
// round or two in which a burst overflowed a queue does not count as
// random loss (and inflate the bandwidth estimate). Loss is congestion
// when the datagrams sent while probing lose more than the background
// plus LossThreshold (2 %, BBRv3's threshold), or when datagrams are lost
// while the previous round's smallest RTT shows a standing queue.
// Congestion bounds the flight at 0.7 times the level that lost, but not
// below the BDP (when it ends Startup, the overshoot's later rounds are
// not judged again), and ends Startup or the probe; each
// round without congestion raises the bound by four datagrams per 10 ms
// of minimum RTT (additive increase, so that flows sharing a bottleneck
// converge to equal shares). Random loss
// on an uncongested path therefore does not lower the rate, and loss at
// an overflowing queue does.
//
// Known limits: a bottleneck with a queue too shallow to show a standing
// queue, shared by several flows, is seen as random loss by each of them
// (they keep their rates, as BBR v1 does, and the loss persists); a
// policer is seen as congestion only when probes raise the loss.
//
// AIMD is the congestion window of the POROUS paper (Rev 0.2 §3.1.3,
// equations 7–12) as rudp's POROUS engine always ran it: slow start, then
// one datagram per window, halving at most once per RTT on loss and a
// reset after losses for eight RTOs; no pacing. It is kept for those who
// want the paper's behaviour; docs/protocols/porous.md §3.3 gives the
// details.
//
// RACK (RFC 8985) detects loss by time: a datagram is lost once a
// datagram sent after it has been acknowledged and a reordering window
// has passed, so a loss costs about one round trip and reordering within
// the window causes no resend.
package congestion
