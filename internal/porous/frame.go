package porous

import (
	"encoding/binary"
	"fmt"

	"github.com/rudpkit/rudp/internal/engine"
)

// Wire constants (docs/protocols/porous.md §1, §6).
const (
	// Version is the protocol version carried in Connect (docs/protocols/porous.md §1.1).
	Version = 0
	// MaxFrameSize is the largest datagram, in bytes: 1500 − 28. One
	// datagram carries exactly one frame (docs/protocols/porous.md §1).
	MaxFrameSize = 1472
	// DataHeaderSize is the size of a Data frame without messages: type,
	// frame_seq u32, msg_count u16.
	DataHeaderSize = 7
	// FragmentHeaderSize is the size of a Fragment message without data.
	FragmentHeaderSize = 13
	// SentinelSize is the size of a Sentinel message.
	SentinelSize = 7
	// WindowAckSize is the size of a WindowAck message.
	WindowAckSize = 5
	// FragmentSize is the data carried by every fragment but the last:
	// 1472 − 7 − 13 = 1452 bytes (docs/protocols/porous.md §1.2).
	FragmentSize = MaxFrameSize - DataHeaderSize - FragmentHeaderSize
	// MaxFragments is the most fragments one packet has (fragment IDs are
	// u16).
	MaxFragments = 1 << 16
	// MaxPacketLimit is the largest packet the wire can carry:
	// 65536 × 1452 = 95,158,272 bytes.
	MaxPacketLimit = MaxFragments * FragmentSize
	// MaxAcks is the most frame sequence numbers one DataAck carries
	// within MaxFrameSize.
	MaxAcks = (MaxFrameSize - dataAckHeaderSize) / 4
	// LargeFrameSize is the largest Data frame a session with
	// Config.LargeFrames takes, in bytes: 44 fragments of FragmentSize with
	// their headers, 64,467 bytes, so that with a 4-byte trailer it fits
	// one UDP datagram over IPv6 through a 65,536-byte loopback MTU. The
	// reference never sends nor takes a frame above MaxFrameSize (see
	// Session.SetMaxFrame).
	LargeFrameSize = DataHeaderSize + 44*(FragmentHeaderSize+FragmentSize)
	// MaxChannels is the most channels a session has (sent as count − 1).
	MaxChannels = 256

	dataAckHeaderSize = 3
	seqMask24         = 1<<24 - 1
)

// FrameType is byte 0 of every datagram (docs/protocols/porous.md §1.1).
type FrameType uint8

// Frame types.
const (
	FrameConnect       FrameType = 0 // 11 bytes
	FrameConnectAck    FrameType = 1 // 5 bytes
	FrameDisconnect    FrameType = 2 // 1 byte
	FrameDisconnectAck FrameType = 3 // 1 byte
	FramePing          FrameType = 4 // 3 bytes
	FramePingAck       FrameType = 5 // 3 bytes
	FrameData          FrameType = 6 // 7 bytes + messages
	FrameDataAck       FrameType = 7 // 3 + 4·count bytes
)

var frameNames = [...]string{"Connect", "ConnectAck", "Disconnect", "DisconnectAck", "Ping", "PingAck", "Data", "DataAck"}

// String returns the frame type's name as docs/protocols/porous.md spells it.
func (t FrameType) String() string {
	if int(t) < len(frameNames) {
		return frameNames[t]
	}
	return fmt.Sprintf("FrameType(%d)", uint8(t))
}

// fixedSize is the exact size of each fixed-size frame type; 0 for Data
// and DataAck.
var fixedSize = [...]int{11, 5, 1, 1, 3, 3, 0, 0}

// MessageType is byte 0 of every message inside a Data frame (docs/protocols/porous.md §1.2).
type MessageType uint8

// Message types.
const (
	MsgFragment  MessageType = 0 // 13 bytes + data
	MsgSentinel  MessageType = 1 // 7 bytes
	MsgWindowAck MessageType = 2 // 5 bytes
)

var messageNames = [...]string{"Fragment", "Sentinel", "WindowAck"}

// String returns the message type's name as docs/protocols/porous.md spells it.
func (t MessageType) String() string {
	if int(t) < len(messageNames) {
		return messageNames[t]
	}
	return fmt.Sprintf("MessageType(%d)", uint8(t))
}

// Message is one message of a Data frame (docs/protocols/porous.md §1.2).
type Message struct {
	Type MessageType
	// Channel is the 0-based channel ID.
	Channel uint8
	// PacketSeq is the 24-bit per-channel packet sequence number
	// (Fragment, Sentinel, WindowAck); only the low 24 bits are encoded.
	PacketSeq uint32
	// DependentLead is the distance back to the packet's dependency, 0 for
	// none (Fragment, Sentinel).
	DependentLead uint16
	// FragmentID and LastFragmentID number the fragment within its packet
	// (Fragment).
	FragmentID, LastFragmentID uint16
	// Data is the fragment's data, at most 65535 bytes on the wire and at
	// most FragmentSize in a valid fragment (Fragment). After Decode it
	// aliases the decoded datagram.
	Data []byte
}

// Len returns the encoded size of m in bytes.
func (m *Message) Len() int {
	switch m.Type {
	case MsgFragment:
		return FragmentHeaderSize + len(m.Data)
	case MsgSentinel:
		return SentinelSize
	}
	return WindowAckSize
}

// Frame is one POROUS frame, the content of one datagram (docs/protocols/porous.md §1.1).
// Only the fields of its Type are meaningful; Decode zeroes the others
// (Messages and Acks keep their storage, with length 0).
type Frame struct {
	Type FrameType
	// Version is the protocol version (Connect); this package speaks 0.
	Version uint8
	// Channels is the channel count, 1..256, sent as count − 1 (Connect).
	Channels int
	// MaxRxBandwidth is the sender's maximum receive rate in bytes/s
	// (Connect).
	MaxRxBandwidth uint32
	// Nonce is the sender's random ID (Connect), or the echoed ID of the
	// acknowledged Connect (ConnectAck).
	Nonce uint32
	// PingID is the ping counter (Ping) or its echo (PingAck).
	PingID uint16
	// Seq is the frame sequence number (Data).
	Seq uint32
	// Messages are the Data frame's messages, at most 65535; none makes a
	// sentinel frame (docs/protocols/porous.md §3.3).
	Messages []Message
	// Acks are the acknowledged frame sequence numbers (DataAck), at most
	// 65535 on the wire and MaxAcks within MaxFrameSize.
	Acks []uint32
}

// Len returns the encoded size of f in bytes.
func (f *Frame) Len() int {
	switch f.Type {
	case FrameData:
		n := DataHeaderSize
		for i := range f.Messages {
			n += f.Messages[i].Len()
		}
		return n
	case FrameDataAck:
		return dataAckHeaderSize + 4*len(f.Acks)
	}
	if int(f.Type) < len(fixedSize) {
		return fixedSize[f.Type]
	}
	return 1
}

// AppendTo appends the wire form of f to b and returns the extended slice.
// It does not allocate when b has room for f.Len() more bytes. Fields are
// written as they are: Channels must be 1..256, PacketSeq values are cut
// to 24 bits, and the caller keeps Data frames within MaxFrameSize.
func (f *Frame) AppendTo(b []byte) []byte {
	b = append(b, byte(f.Type))
	switch f.Type {
	case FrameConnect:
		b = append(b, f.Version, byte(f.Channels-1))
		b = binary.BigEndian.AppendUint32(b, f.MaxRxBandwidth)
		b = binary.BigEndian.AppendUint32(b, f.Nonce)
	case FrameConnectAck:
		b = binary.BigEndian.AppendUint32(b, f.Nonce)
	case FramePing, FramePingAck:
		b = binary.BigEndian.AppendUint16(b, f.PingID)
	case FrameData:
		b = binary.BigEndian.AppendUint32(b, f.Seq)
		b = binary.BigEndian.AppendUint16(b, uint16(len(f.Messages)))
		for i := range f.Messages {
			b = f.Messages[i].appendTo(b)
		}
	case FrameDataAck:
		b = binary.BigEndian.AppendUint16(b, uint16(len(f.Acks)))
		for _, a := range f.Acks {
			b = binary.BigEndian.AppendUint32(b, a)
		}
	}
	return b
}

// appendTo appends the wire form of m.
func (m *Message) appendTo(b []byte) []byte {
	switch m.Type {
	case MsgFragment:
		return appendFragment(b, m.Channel, m.PacketSeq, m.DependentLead, m.FragmentID, m.LastFragmentID, m.Data)
	case MsgSentinel:
		return appendSentinel(b, m.Channel, m.PacketSeq, m.DependentLead)
	}
	return appendWindowAck(b, m.Channel, m.PacketSeq)
}

func appendU24(b []byte, v uint32) []byte { return append(b, byte(v>>16), byte(v>>8), byte(v)) }

func appendFragment(b []byte, ch uint8, seq uint32, lead, id, last uint16, data []byte) []byte {
	b = append(b, byte(MsgFragment), ch)
	b = appendU24(b, seq)
	b = binary.BigEndian.AppendUint16(b, lead)
	b = binary.BigEndian.AppendUint16(b, id)
	b = binary.BigEndian.AppendUint16(b, last)
	b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
	return append(b, data...)
}

func appendSentinel(b []byte, ch uint8, seq uint32, lead uint16) []byte {
	b = append(b, byte(MsgSentinel), ch)
	b = appendU24(b, seq)
	return binary.BigEndian.AppendUint16(b, lead)
}

func appendWindowAck(b []byte, ch uint8, seq uint32) []byte {
	b = append(b, byte(MsgWindowAck), ch)
	return appendU24(b, seq)
}

// Decoding errors; all wrap engine.ErrMalformed.
var (
	errEmpty          = fmt.Errorf("%w: porous: empty datagram", engine.ErrMalformed)
	errTooLong        = fmt.Errorf("%w: porous: datagram too long", engine.ErrMalformed)
	errFrameType      = fmt.Errorf("%w: porous: unknown frame type", engine.ErrMalformed)
	errFrameSize      = fmt.Errorf("%w: porous: wrong size for the frame type", engine.ErrMalformed)
	errDataAckHeader  = fmt.Errorf("%w: porous: DataAck shorter than its %d-byte header", engine.ErrMalformed, dataAckHeaderSize)
	errDataAckSize    = fmt.Errorf("%w: porous: DataAck length is not 3 + 4·count", engine.ErrMalformed)
	errDataHeader     = fmt.Errorf("%w: porous: Data frame shorter than its %d-byte header", engine.ErrMalformed, DataHeaderSize)
	errMessageHeader  = fmt.Errorf("%w: porous: message cut before its type and channel", engine.ErrMalformed)
	errFragmentHeader = fmt.Errorf("%w: porous: Fragment cut within its %d-byte header", engine.ErrMalformed, FragmentHeaderSize)
	errFragmentData   = fmt.Errorf("%w: porous: Fragment data runs past the datagram", engine.ErrMalformed)
	errSentinelSize   = fmt.Errorf("%w: porous: Sentinel cut within its %d bytes", engine.ErrMalformed, SentinelSize)
	errWindowAckSize  = fmt.Errorf("%w: porous: WindowAck cut within its %d bytes", engine.ErrMalformed, WindowAckSize)
	errMessageType    = fmt.Errorf("%w: porous: unknown message type", engine.ErrMalformed)
	errTrailing       = fmt.Errorf("%w: porous: bytes after the last message", engine.ErrMalformed)
	errTooManyMessage = fmt.Errorf("%w: porous: msg_count exceeds what the datagram can hold", engine.ErrMalformed)
)

// Decode parses datagram b into f, reusing f's Messages and Acks storage,
// with the reference's strict rules (docs/protocols/porous.md §1): fixed-size frames must
// have exactly their size, a Data frame must hold exactly msg_count
// well-formed messages, DataAck exactly 3 + 4·count bytes. A datagram
// longer than MaxFrameSize is refused: the reference reads into a
// 1472-byte buffer and cannot parse what it truncated. Errors wrap
// engine.ErrMalformed; f is then unspecified. Fragment data in f aliases
// b. Decode never panics.
func Decode(b []byte, f *Frame) error { return decode(b, f, MaxFrameSize) }

// decode is Decode taking Data frames of up to maxData bytes (at least
// MaxFrameSize); other frames still have at most MaxFrameSize.
func decode(b []byte, f *Frame, maxData int) error {
	msgs, acks := f.Messages[:0], f.Acks[:0]
	*f = Frame{Messages: msgs, Acks: acks} // keep the storage, not the content
	switch {
	case len(b) == 0:
		return errEmpty
	case len(b) > MaxFrameSize && (len(b) > maxData || b[0] != byte(FrameData)):
		return errTooLong
	case b[0] >= byte(len(fixedSize)):
		return errFrameType
	}
	f.Type = FrameType(b[0])
	if n := fixedSize[f.Type]; n != 0 && len(b) != n {
		return errFrameSize
	}
	switch f.Type {
	case FrameConnect:
		f.Version = b[1]
		f.Channels = int(b[2]) + 1
		f.MaxRxBandwidth = binary.BigEndian.Uint32(b[3:])
		f.Nonce = binary.BigEndian.Uint32(b[7:])
	case FrameConnectAck:
		f.Nonce = binary.BigEndian.Uint32(b[1:])
	case FramePing, FramePingAck:
		f.PingID = binary.BigEndian.Uint16(b[1:])
	case FrameData:
		return decodeData(b, f)
	case FrameDataAck:
		if len(b) < dataAckHeaderSize {
			return errDataAckHeader
		}
		n := int(binary.BigEndian.Uint16(b[1:]))
		if len(b) != dataAckHeaderSize+4*n {
			return errDataAckSize
		}
		for i := range n {
			f.Acks = append(f.Acks, binary.BigEndian.Uint32(b[dataAckHeaderSize+4*i:]))
		}
	}
	return nil
}

func decodeData(b []byte, f *Frame) error {
	if len(b) < DataHeaderSize {
		return errDataHeader
	}
	f.Seq = binary.BigEndian.Uint32(b[1:])
	n := int(binary.BigEndian.Uint16(b[5:]))
	b = b[DataHeaderSize:]
	if n*WindowAckSize > len(b) {
		return errTooManyMessage
	}
	for range n {
		if len(b) < 2 {
			return errMessageHeader
		}
		m := Message{Type: MessageType(b[0]), Channel: b[1]}
		switch m.Type {
		case MsgFragment:
			if len(b) < FragmentHeaderSize {
				return errFragmentHeader
			}
			m.PacketSeq = u24(b[2:])
			m.DependentLead = binary.BigEndian.Uint16(b[5:])
			m.FragmentID = binary.BigEndian.Uint16(b[7:])
			m.LastFragmentID = binary.BigEndian.Uint16(b[9:])
			l := int(binary.BigEndian.Uint16(b[11:]))
			if len(b) < FragmentHeaderSize+l {
				return errFragmentData
			}
			m.Data = b[FragmentHeaderSize : FragmentHeaderSize+l : FragmentHeaderSize+l]
			b = b[FragmentHeaderSize+l:]
		case MsgSentinel:
			if len(b) < SentinelSize {
				return errSentinelSize
			}
			m.PacketSeq = u24(b[2:])
			m.DependentLead = binary.BigEndian.Uint16(b[5:])
			b = b[SentinelSize:]
		case MsgWindowAck:
			if len(b) < WindowAckSize {
				return errWindowAckSize
			}
			m.PacketSeq = u24(b[2:])
			b = b[WindowAckSize:]
		default:
			return errMessageType
		}
		f.Messages = append(f.Messages, m)
	}
	if len(b) != 0 {
		return errTrailing
	}
	return nil
}

func u24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }
