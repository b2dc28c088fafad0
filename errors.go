package rudp

import (
	"errors"
	"io"
	"net"
	"os"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/stream"
)

// Errors returned by conns and listeners, to be matched with errors.Is.
// Most reach the caller wrapped in a *net.OpError. Besides these, a dialed
// conn whose peer's port answers ICMP port unreachable fails with an error
// matching syscall.ECONNREFUSED (see the package doc, "A vanished peer").
var (
	// ErrReset: the peer aborted the connection, restarted, or closed while
	// data was still arriving; or the local side gave up on a close.
	ErrReset = stream.ErrReset
	// ErrProtocol: the peer broke rudp's stream framing (it may not be a
	// rudp stream at all, for example a message conn or another program).
	ErrProtocol = stream.ErrProtocol
	// ErrHandshakeTimeout: the peer did not complete the handshake within
	// Config.HandshakeTimeout. It is a net.Error whose Timeout() is true.
	// The error a conn returns matches it with errors.Is and says what was
	// tried: a peer that stays silent may not be listening, or may speak
	// another protocol, have another channel count (POROUS), or be a
	// listener of the other kind (streams or message conns).
	ErrHandshakeTimeout = engine.ErrHandshakeTimeout
	// ErrIdleTimeout: nothing was received from the peer for
	// Config.IdleTimeout. It is a net.Error whose Timeout() is true.
	ErrIdleTimeout = engine.ErrIdleTimeout
	// ErrMessageTooLarge: a message conn's Write or WriteMessage exceeded
	// the protocol's largest message (MessageConn.MaxMessage: Airhook 256
	// bytes, LLUDP 1190, POROUS Config.MaxMessage).
	ErrMessageTooLarge = engine.ErrMessageTooLarge
	// ErrEmptyMessage: a message conn was asked to send zero bytes, which
	// the protocol cannot carry (Airhook messages are 1..256 bytes; POROUS
	// and LLUDP carry empty messages).
	ErrEmptyMessage = engine.ErrEmptyMessage
	// ErrUnsupported: a message option the protocol cannot express.
	ErrUnsupported = engine.ErrUnsupported
	// ErrUnknownProtocol: Config.Protocol or a protocol name is not one this
	// version implements.
	ErrUnknownProtocol = errors.New("unknown protocol")
	// ErrIncompatible: the peer's handshake carries parameters this end
	// cannot work with: a POROUS peer with another protocol version or
	// another channel count (Config.Channels); a Wirefox peer with another
	// protocol version, or whose encryption (Config.WirefoxEncrypt)
	// differs from this end's.
	ErrIncompatible = engine.ErrIncompatible
	// ErrPeerClosed: a message conn's peer closed the association while
	// messages written here were still unconfirmed (they may be lost); and
	// what a write to a message conn whose peer has closed fails with
	// (its text then says only that the peer closed). Reads return io.EOF
	// once everything the peer sent has been read.
	ErrPeerClosed = engine.ErrPeerClosed
	// ErrSpoofed: a stream received datagrams forged from its peer's
	// address that got past the engine's checks (a blind attacker that
	// guessed the sequence numbers and the checksum's key in use) and
	// contradict the peer's own, two different copies of one message:
	// the stream ends rather than deliver bytes that may be forged.
	// Guessing takes about 2^19 datagrams (POROUS) or 2^21 (Avara); use
	// crypto/tls over the stream against an attacker who can see the
	// traffic.
	ErrSpoofed = engine.ErrSpoofed
	// ErrRetransmitLimit: the peer acknowledged nothing of what was sent
	// within the protocol's limit: an LLUDP message was resent
	// Config.ResendLimit times, a Wirefox packet sent as many times (6 by
	// default on message conns), or an Avara message waited 120 s (a
	// stream: Config.IdleTimeout) while nothing was acknowledged.
	ErrRetransmitLimit = engine.ErrRetransmitLimit
	// ErrLingerTimeout: Close could not deliver everything Write accepted
	// within Config.Linger.
	ErrLingerTimeout = engine.ErrLingerTimeout
)

// opError wraps err as the *net.OpError that net.Conn methods return. It
// returns io.EOF and nil unchanged.
func opError(op string, local, remote net.Addr, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	return &net.OpError{Op: op, Net: "rudp", Source: local, Addr: remote, Err: err}
}

// handshakeTimeoutError is ErrHandshakeTimeout with a text that says what
// was tried and why a peer may have stayed silent. Like ErrHandshakeTimeout
// it reports Timeout() true, so that the *net.OpError wrapping it is a
// net.Error timeout.
type handshakeTimeoutError struct{ text string }

func (e *handshakeTimeoutError) Error() string   { return e.text }
func (e *handshakeTimeoutError) Unwrap() error   { return ErrHandshakeTimeout }
func (e *handshakeTimeoutError) Timeout() bool   { return true }
func (e *handshakeTimeoutError) Temporary() bool { return true }

var (
	errTimeout = os.ErrDeadlineExceeded
	errClosed  = net.ErrClosed
	// errPeerGone is the failure of a message conn whose peer closed
	// gracefully: it matches ErrPeerClosed.
	errPeerGone error = peerGoneError{}
)

// peerGoneError is errPeerGone: ErrPeerClosed, without the unconfirmed
// messages its own text speaks of.
type peerGoneError struct{}

func (peerGoneError) Error() string { return "peer closed the conn" }
func (peerGoneError) Unwrap() error { return ErrPeerClosed }
