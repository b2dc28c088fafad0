package wirefox

import (
	"encoding/binary"
	"fmt"

	"github.com/rudpkit/rudp/internal/engine"
)

// Commands: the first byte of a message blob (docs/protocols/wirefox.md
// §1.4).
const (
	CmdPing              = 0
	CmdPong              = 1 // unused by the reference; this package's challenge probe (rudp peers only)
	CmdConnectAttempt    = 2
	CmdDisconnectRequest = 3
	CmdDisconnectAck     = 4
	CmdAdvertisement     = 5
	CmdRPCSignal         = 6
	// CmdUser is the first user command; applications use CmdUser and
	// above.
	CmdUser = 15
)

// Handshake opcodes of CONNECT_ATTEMPT (docs/protocols/wirefox.md §1.5).
const (
	OpInitialClient  = 1
	OpInitialServer  = 2
	OpAuthMsg        = 3
	OpUnencryptedAck = 4
	OpError          = 5
)

// AUTH_MSG states (docs/protocols/wirefox.md §3.8).
const (
	AuthKeyExchange    = 0
	AuthAuthentication = 1
	AuthDone           = 2
)

// ConnectResult values carried by ERROR_OCCURRED
// (docs/protocols/wirefox.md §1.5).
const (
	ResultConnectFailed        = 2
	ResultIncompatibleProtocol = 3
	ResultIncompatibleVersion  = 4
	ResultIncompatibleSecurity = 5
	ResultIncorrectIdentity    = 6
	ResultIncorrectPassword    = 7
	ResultNoFreeSlots          = 8
	ResultAlreadyConnected     = 9
	ResultIPRateLimited        = 10
	ResultBanned               = 11
)

// Magic opens every CONNECT_ATTEMPT; Version is the protocol version.
const (
	Magic   = "WIREFOX"
	Version = 0
	// cryptoFlag is the crypto byte of INITIAL_CLIENT and INITIAL_SERVER
	// when encryption is wanted.
	cryptoFlag = 0x80
	// handshakeHeader is the blob before the opcode data: command, magic,
	// version, PeerID, opcode.
	handshakeHeader = 1 + len(Magic) + 1 + 8 + 1
)

var (
	errNotHandshake = fmt.Errorf("%w: wirefox: not a CONNECT_ATTEMPT", engine.ErrMalformed)
	errOOB          = fmt.Errorf("%w: wirefox: out-of-band datagram without exactly one whole packet", engine.ErrMalformed)
)

// Handshake is the payload of a CONNECT_ATTEMPT blob
// (docs/protocols/wirefox.md §1.5).
type Handshake struct {
	Version uint8
	PeerID  uint64
	Op      uint8
	// Data is the opcode data: the crypto byte of INITIAL_CLIENT and
	// INITIAL_SERVER, the state byte and state data of AUTH_MSG (empty
	// in the server's answer to DONE), the ConnectResult of
	// ERROR_OCCURRED, nothing for UNENCRYPTED_ACK.
	Data []byte
}

// ParseHandshake decodes a CONNECT_ATTEMPT blob (command byte included);
// h.Data aliases blob. Any version parses; a wrong command, magic or a
// truncated blob is an error wrapping engine.ErrMalformed.
func ParseHandshake(blob []byte, h *Handshake) error {
	if len(blob) < handshakeHeader || blob[0] != CmdConnectAttempt || string(blob[1:1+len(Magic)]) != Magic {
		return errNotHandshake
	}
	b := blob[1+len(Magic):]
	h.Version = b[0]
	h.PeerID = binary.BigEndian.Uint64(b[1:])
	h.Op = b[9]
	h.Data = b[10:]
	return nil
}

// AppendHandshake appends the CONNECT_ATTEMPT blob of h to b.
func AppendHandshake(b []byte, h *Handshake) []byte {
	b = append(b, CmdConnectAttempt)
	b = append(b, Magic...)
	b = append(b, h.Version)
	b = binary.BigEndian.AppendUint64(b, h.PeerID)
	b = append(b, h.Op)
	return append(b, h.Data...)
}

// AppendOOB appends an out-of-band datagram with datagram ID id carrying
// blob as its one packet: DAT only, packet ID 0, options 0, channel 0,
// offset 0 (docs/protocols/wirefox.md §1.5). blob must be shorter than
// SegmentSize.
func AppendOOB(b []byte, id uint32, blob []byte) []byte {
	p := Packet{Body: blob}
	n := p.PacketLen()
	d := Datagram{Flags: FlagDAT, ID: id, DataLen: uint16(n)}
	b = AppendDatagram(b, &d)
	return AppendPacket(b, &p)
}

// ParseOOB returns the blob of an out-of-band datagram d (parsed by
// ParseDatagram, without FlagLNK): its one packet, which must not be a
// segment (docs/protocols/wirefox.md §2 erratum 7). Trailing bytes after
// the packet are ignored. Errors wrap engine.ErrMalformed.
func ParseOOB(d *Datagram) ([]byte, error) {
	var p Packet
	if _, err := ParsePacket(d.Data, &p); err != nil {
		return nil, err
	}
	if p.Split() || len(p.Body) == 0 {
		return nil, errOOB
	}
	return p.Body, nil
}

// IsOpening reports whether datagram p can open a connection at a
// listener: an out-of-band datagram whose packet is a CONNECT_ATTEMPT
// INITIAL_CLIENT (docs/protocols/wirefox.md §3.2), whatever its version
// (the session answers an incompatible one). It reads p in place and
// allocates nothing, so that a listener drops anything else from an
// unknown address before building any state.
func IsOpening(p []byte) bool {
	// flags, ID, data length, then the 11-byte packet header.
	const blobAt = 7 + 11
	if len(p) < blobAt+handshakeHeader || p[0]&(FlagDAT|FlagLNK|FlagACK|FlagNAK) != FlagDAT ||
		p[7]&(PacketSEG|PacketBIG) != 0 || p[13] != 0 || p[16] != 0 || p[17] != 0 {
		return false
	}
	blob := p[blobAt:]
	return blob[0] == CmdConnectAttempt && string(blob[1:1+len(Magic)]) == Magic &&
		blob[handshakeHeader-1] == OpInitialClient
}
