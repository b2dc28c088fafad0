// Package p2p shows two programs, each behind a NAT, opening a rudp
// stream to each other with no relay and no STUN library: UDP hole
// punching. The package has no API; see its example and tests.
//
// A program that wants to reach a peer behind a NAT must do two things.
// First, learn the peer's public address, the one the peer's NAT maps its
// socket to; only a host outside both NATs can see it. Here that host is
// a rendezvous server, itself a rudp Transport listening for streams:
// each peer dials it and sends a room name on a line, and once two peers
// are in the same room each is sent the other's address, as the
// rendezvous saw it, on a line. Second, both peers dial each other at
// about the same time, from the socket they reached the rendezvous from:
// one rudp.Transport per peer, on which the peer dials the rendezvous and
// then the other peer. Each dial opens the peer's own NAT towards the
// other (a NAT with address-dependent filtering drops datagrams from an
// address its host has not sent to), and the two openings that cross
// settle into one conn on each side (a simultaneous open; see
// rudp.Transport).
//
// This works when each NAT maps the socket to the same public address
// whatever the destination (endpoint-independent mapping), which most
// home and mobile NATs do, whatever their filtering. A NAT that maps each
// destination to a port of its own (a symmetric NAT) gives the rendezvous
// an address no other host can reach: the dial then fails after
// rudp.Config.HandshakeTimeout with an error wrapping
// rudp.ErrHandshakeTimeout that names the symmetric NAT, and the peers
// need a relay, a host outside both NATs that forwards their datagrams.
// Guessing the ports such a NAT allocates next, and NAT mapping protocols
// (PCP, UPnP), are not shown. A NAT forgets a mapping left idle for a
// while (RFC 4787 REQ-5 asks for 2 minutes at least; some NATs keep it
// 30 s): a conn's probes after rudp.Config.KeepAlive without receiving
// (20 s by default) keep an idle conn's mappings open.
package p2p
