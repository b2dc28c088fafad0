// Package rudp turns a net.PacketConn (a UDP socket by default) into
// reliable connections.
//
// # Two kinds of conn
//
// Streams are net.Conn byte streams between rudp peers, a drop-in for
// net.Dial and net.Listen: ordered, flow-controlled, with half-close
// (CloseWrite), graceful Close, deadlines, and errors that follow Go's
// conventions (io.EOF, os.ErrDeadlineExceeded, net.ErrClosed). They work
// under crypto/tls and net/http and pass golang.org/x/net/nettest's
// conformance tests. Dial, Listen, Dialer, ListenConfig, Client and Server
// make them.
//
// Message conns (MessageConn) speak a protocol's own messages on the wire,
// with nothing added, so they interoperate with other implementations of
// that protocol. DialMessages, MessageDialer, ListenMessages,
// ClientMessages and ServerMessages make them.
//
// # One socket, many conns
//
// A Transport is one net.PacketConn on which a program accepts and dials
// streams and message conns at once, to any number of peers: dialing from
// the port it listens on is how peers behind NATs reach each other (UDP
// hole punching; two Transports dialing each other at once settle which
// is the server). The top-level listeners are each the one listener of a
// Transport of their own.
//
// # Protocols
//
// Each wire protocol is a reliability engine, chosen with Config.Protocol:
//
//	Protocol  Messages                          Ordering                      Channels  Delivery
//	POROUS    0..MaxMessage bytes               in order per channel          1..256    reliable, unreliable, passive
//	Airhook   1..256 bytes                      unordered (streams order)     1         reliable
//	LLUDP     number + 0..1190 B                arrival order                 1         reliable, unreliable
//	Wirefox   command + payload, up to 16 MiB   per channel: unordered,       1..256    reliable, unreliable
//	                                            ordered or sequenced
//	Avara     command, p1..p3 + 0..984 B        in order                      1         reliable
//
// POROUS, the default, is wire-compatible with its reference
// implementation (lowquark/uflow, commit dde0da6); see internal/porous.
// Airhook is wire-compatible with the airhook-2 C library
// (wtanaka/airhook, commit f5a18bd); see internal/airhook. LLUDP is the
// Second Life packet layer, wire-compatible with the Second Life viewer's
// message system (secondlife/viewer, commit d6d453b); see internal/lludp.
// Wirefox is wire-compatible with iridinite/wirefox at commit 0897fcf,
// optionally encrypted as its libsodium build; see internal/wirefox.
// Avara is the UDP layer of the game Avara, wire-compatible with
// avaraline/Avara at commit aaa5e63; see internal/avara. Every engine's
// sender runs the shared congestion controller (Config.Congestion:
// model-based by default, or the POROUS paper's AIMD), which changes
// nothing on the wire. Each package documents the exact behaviour and the
// choices made where its specification is silent.
//
// # Streams on the wire
//
// A stream carries rudp's own framing inside the engine's reliable
// messages (POROUS: channel 0; LLUDP: message number
// StreamMessageNumber): a HELLO with the stream parameters, DATA segments tagged with
// their byte offset (so ordering does not depend on the engine), WINDOW
// updates (flow control: the receiver advertises how far the sender may
// go; Config.RecvWindow), FIN (end of the stream) and RST (abort). Each
// of a stream's datagrams ends with a CRC-32C of the rest, so that one
// corrupted past the UDP checksum is dropped rather than taken by an
// engine (none of the protocols has a checksum of its own); once both
// ends have each other's HELLO, the CRC starts from a key derived from
// both random starts, so that a source that does not see the traffic
// must guess 32 bits for each datagram it forges. Only rudp
// speaks it; use a MessageConn to talk to other implementations.
//
// A POROUS stream's datagrams are at most 1472 bytes, seal included, what
// a 1500-byte IPv4 path carries unfragmented: one fragment of up to 1448
// bytes of stream frame each. Between peers on one host, where the path
// is the loopback interface (its MTU is 65,536 bytes on Linux), each
// side, once the stream is open, packs up to 44 such fragments into one
// datagram of up to 64,471 bytes, a large frame, as TCP uses the whole
// loopback MTU: a datagram's costs (system calls, acknowledgement,
// congestion control) are then paid once for 44 fragments. The first
// large frames probe the path: if one is lost before one has arrived (a
// relay listening on the loopback address in front of a smaller MTU, a
// Linux receiver without UDP receive offload, which reads into 2 KiB
// buffers), the sender gives large frames up for the stream and sends
// what they carried again in datagrams of 1472 bytes. Large frames are
// not POROUS as the reference speaks it; message conns never send them.
//
// # Resources and limits
//
// One goroutine reads each PacketConn; each association has one timer.
// A stream holds at most Config.SendBuffer bytes not yet sent (four
// congestion windows, at least 64 KiB, within it) and Config.RecvWindow
// bytes not yet read, in buffers from pools shared by the process, given
// back when empty while more than 32 streams hold some (fewer keep theirs
// until idle); a message conn at most
// Config.MaxRecvBuffer bytes of unread messages (beyond them it refuses the peer's
// new messages unacknowledged, and the peer sends them again) and the
// engine's send queue; a listener at most Config.Backlog new peers. A
// peer that stops answering
// makes its conn fail with ErrIdleTimeout after Config.IdleTimeout; one
// that never completes its handshake, ErrHandshakeTimeout.
//
// # A vanished peer
//
// A conn made by Dial, Dialer or DialMessages has a connected UDP socket,
// which the system tells when the peer's port answers with ICMP port
// unreachable (its process died, or restarted and forgot the
// association); so does a Client or ClientMessages conn over a
// *net.UDPConn connected to its peer. During the handshake one such
// report fails the dial with connection refused; afterwards, since ICMP
// is easily forged, the reports must persist: at least 3 of them, spread
// over at least one RTO (half a second at most), with no datagram from
// the peer in between. The conn then fails with an error matching
// syscall.ECONNREFUSED, within a second of the peer's departure on an
// active conn. On Linux, rudp also turns on IP_RECVERR (and
// IPV6_RECVERR) on the unconnected *net.UDPConn of a listener or of a
// Client, so that the kernel queues each ICMP error with the destination
// it is about: the conns of those sockets are told in the same way, under
// the same rule. LLUDP and Avara conns, whose keepalives are seconds
// apart, probe the peer at once after the first report, so that every
// protocol sees a vanished peer within about half a second. Elsewhere,
// other PacketConns, and any conn whose peer's host sends no ICMP, learn
// of a vanished peer through Config.IdleTimeout.
//
// # Tracing
//
// Config.Tracer gives each conn a tracer (package trace): its states,
// every datagram decoded by its protocol's codec, losses and their cause,
// congestion metrics, keepalives, challenges and its close. Package qlog
// writes these events as qlog files, which qvis and rudpcat plot draw;
// with QLOGDIR set in the environment and no Config.Tracer, every conn
// writes one into that directory. Without a tracer nothing is traced and
// nothing allocated for it.
package rudp
