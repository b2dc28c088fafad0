// Package netsim is a deterministic network simulator for testing rudp's
// sans-I/O protocol engines: a seeded model of a one-way datagram link
// ([Link]), a virtual clock ([Clock]) and a driver ([Sim]) that connects two
// [engine.Engine] values by two links and runs them on virtual time.
//
// # What a link models
//
// Each [Link] carries datagrams in one direction. In the order applied to a
// datagram given to [Link.Send]:
//
//   - MTU: a datagram longer than LinkConfig.MTU bytes is dropped.
//   - Rate and queue: with LinkConfig.Rate bytes per second, datagrams are
//     serialised one after the other, each taking len/Rate; those waiting
//     form a FIFO of at most LinkConfig.QueueLimit bytes, and a datagram
//     that does not fit is tail-dropped, as by a router buffer.
//   - Loss: with probability LinkConfig.Loss the datagram is lost on the
//     wire (after having used its share of the rate).
//   - Delay: it arrives LinkConfig.Delay after it left, plus a uniform
//     jitter in [0, LinkConfig.Jitter], plus LinkConfig.ReorderDelay with
//     probability LinkConfig.Reorder, so that later datagrams overtake it.
//   - Duplication: with probability LinkConfig.Duplicate a second copy is
//     delivered, with its own jitter.
//
// Datagrams due at the same instant are delivered in the order they were
// sent. Durations are [time.Duration] values, probabilities are in [0, 1],
// sizes are in bytes and rates in bytes per second.
//
// # What it does not model
//
// There is no ICMP (no port unreachable, no "packet too big"), no path MTU
// change, no corruption (a datagram arrives intact or not at all), no
// address or NAT rebinding, no correlation between losses (losses are
// independent, not bursty) and no cross traffic. Serialisation at Rate is
// the only form of congestion.
//
// # Determinism
//
// All randomness comes from a [math/rand/v2] generator chosen by the
// caller ([NewLink]) or derived from one seed ([New]); nothing reads the
// real clock, starts a goroutine or iterates a map. Every datagram that
// passes the MTU and queue checks consumes the same five random values
// whatever the configuration, so changing, say, Jitter does not change
// which datagrams are lost. Given the same seed, configurations and engines
// that are themselves deterministic, a Sim produces the same sequence of
// events, datagrams and virtual times on every run and every platform.
package netsim
