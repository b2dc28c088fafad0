// Package stream turns an engine's reliable messages into an ordered,
// flow-controlled byte stream with half-close and reset.
//
// A Stream is one end of one stream, written sans-I/O: it owns no socket,
// starts no goroutine, never reads the clock and holds no global state. The
// caller moves bytes in and out:
//
//   - Write copies application bytes into the send buffer; NextFrame cuts
//     the next frame to hand to the engine (one frame per reliable message).
//   - HandleFrame takes every message the engine delivers; Read returns the
//     bytes in order.
//
// Frames may be delivered in any order and more than once: every DATA frame
// carries the absolute offset of its first byte, so the receiver rebuilds the
// byte order whatever the engine's ordering. The engine must deliver every
// frame at least once (or fail the association): frames are never
// retransmitted by this layer, so framed bytes are not kept.
//
// A Stream is not safe for concurrent use; the caller serialises all calls.
// Given the same calls, it produces the same frames, byte for byte.
//
// # Frames
//
// A frame is one type byte followed by its fields. Integers written "uvarint"
// are unsigned LEB128 varints as written by encoding/binary.PutUvarint, in
// their shortest form (a longer encoding of the same value is malformed);
// "u64" is 8 bytes, big-endian. Each end numbers its bytes on the wire from
// a random start (Config.Start) chosen at the start of the stream, modulo
// 2^64: DATA, FIN and RST carry wire offsets of the sender's bytes, WINDOW
// a wire offset of the receiver's peer. A frame has no padding and no
// trailing bytes.
//
//	type  name    fields after the type byte
//	----  ------  --------------------------------------------------------------
//	0x01  HELLO   magic "rudp" (4 bytes: 0x72 0x75 0x64 0x70), version (1 byte,
//	              0x03), start (u64): the wire offset of the sender's first
//	              byte, token (u64): to be echoed, 0 for none, window
//	              (uvarint): how many bytes the sender accepts at first
//	0x02  DATA    offset (uvarint), payload (the rest of the frame, 1 byte or
//	              more); carries the bytes at wire offsets [offset,
//	              offset+len(payload))
//	0x03  WINDOW  limit (uvarint): the sender of the frame accepts bytes of
//	              its peer up to wire offset limit-1
//	0x04  FIN     final (uvarint): the stream ends at this wire offset
//	0x05  RST     code (1 byte), offset (uvarint): the stream is aborted,
//	              having framed up to this wire offset; see CodeCancel,
//	              CodeProtocol
//	0x06  ECHO    token (u64): the token of the peer's HELLO
//
// For example, HELLO with start 7, no token and a window of 65536 bytes is
// 01 72 75 64 70 03 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00 00 80 80
// 04; DATA of "hi" at wire offset 300 is 02 ac 02 68 69, WINDOW 1000 is
// 03 e8 07, FIN 5 is 04 05, RST with code 7 at offset 5 is 05 07 05 and
// ECHO of token 1 is 06 00 00 00 00 00 00 00 01.
//
// Each side sends HELLO first, then never again; a side whose HELLO carried
// a token waits for the peer's ECHO of it before it trusts the peer
// (Validated): the peer then receives what this side sends, so it is not
// a spoofer sending blind. A DATA frame fits in Config.MaxFrame, so its
// payload holds at most MaxFrame-1-(size of the offset varint) bytes, 21
// or more since MaxFrame is at least 32.
//
// Receiving tolerates reordering and duplicates: WINDOW only ever raises
// the peer's limit; DATA overlapping bytes already received is trimmed; a
// repeated FIN with the same final offset or a repeated HELLO is accepted.
// Because the engine may reorder, a frame that the peer sent after its
// HELLO may be delivered before it: such frames are kept (a receive
// window's worth) until the HELLO gives the peer's start. With
// Config.Ordered (an engine that delivers in order), a first frame other
// than HELLO is a protocol violation.
//
// # Spoofed and corrupted frames
//
// A blind attacker, who can send datagrams from the peer's address but
// cannot see what the two ends send, does not know the random starts:
// to place DATA or a FIN in the window, or an RST past the data received
// and within the window, it must guess in 2^64 (the reason of RFC 6528 for
// TCP's initial sequence numbers). Once a stream is open, such frames, any
// value outside the window (a WINDOW more than MaxBuffer past what was
// sent included), a HELLO with another start and malformed frames are
// dropped and counted (Ignored), so that a spoofed or corrupted frame can
// neither inject bytes nor end or stall the stream. Before the peer's
// HELLO, a malformed frame is a protocol violation: the peer is not a rudp
// stream. An on-path attacker sees the starts: crypto/tls over the stream
// protects against it.
//
// # Flow control
//
// The receiver advertises a limit: the offset up to which it accepts bytes,
// equal to the bytes consumed by its reader plus its receive window. The
// HELLO carries the first window (Config.RecvWindow). When the reader has
// consumed enough that the limit the receiver could advertise exceeds the
// last one sent by at least a quarter of the window (at most 1 MiB), a
// WINDOW frame is due. A sender blocked at the limit is therefore always
// unblocked once the reader consumes what it was sent: then the new limit
// exceeds the old one by the whole window. The quarter keeps window
// updates to about four per window of data; the 1 MiB bound keeps a large
// window from lagging by megabytes. No WINDOW is sent once the peer's FIN has been received:
// the peer sends no more data. The window grows, up to
// Config.MaxRecvWindow, while the reader keeps up with a sender it holds
// back (see Tune).
//
// The sender frames DATA only below the peer's highest advertised limit,
// which is 0 until the peer's HELLO has been received.
//
// # Memory
//
// The receive side holds at most Config.RecvWindow stream bytes (unread bytes
// in order, plus segments received out of order), or the lower limit the
// caller sets with SetRecvLimit once the peer has used the window already
// advertised, in a ring that grows with use, with one bit per byte more to track out-of-order segments. The send
// side holds at most Config.SendBuffer bytes accepted by Write and not yet
// framed, or the lower limit the caller sets with SetSendLimit, in a ring
// that grows with use. Framed bytes are the engine's: a Stream keeps none.
// Rings come from pools shared by all streams in the process. While more
// than 32 streams hold a ring of a kind, a ring of that kind goes back as
// soon as it holds nothing (the reader has read every byte received, or
// every byte written has been framed), so that many streams hold memory in
// proportion to the bytes they hold, not to their limits; with fewer, a
// stream keeps its rings until Trim. Ring sizes are powers of two from 4 KiB to 16 MiB,
// so that a ring's buffer may be up to twice its limit (the receive window
// rounded up to 64 bytes, or the send limit) although the bytes it holds
// are not.
//
// # Termination
//
// CloseWrite queues FIN after all buffered bytes: the peer reads everything
// then io.EOF. Abort queues RST with a code: Write accepts nothing more, Read
// returns ErrAborted and no frame follows the RST. A peer's RST makes Read and
// Err return ErrReset, except that a stream whose FIN had already been
// received still reads its bytes then io.EOF. A frame that breaks the
// protocol before the peer's HELLO (malformed, wrong magic or version, or
// with Config.Ordered not a HELLO) makes HandleFrame return an error
// wrapping ErrProtocol; the stream is then aborted with an RST carrying
// CodeProtocol, and Read returns that error.
package stream
