package wirefox

import (
	"encoding/binary"
	"fmt"

	"github.com/rudpkit/rudp/internal/engine"
)

// Datagram header flags, most significant bit first
// (docs/protocols/wirefox.md §1.2, §2 erratum 1).
const (
	// FlagDAT: packets follow the header.
	FlagDAT = 0x80
	// FlagLNK: the sender counts itself connected; without it the
	// datagram is out-of-band (handshake, DISCONNECT_ACK, PING,
	// ADVERTISEMENT).
	FlagLNK = 0x40
	// FlagACK: a list of acknowledged datagram IDs follows the ID.
	FlagACK = 0x20
	// FlagNAK: a list of missing datagram IDs follows.
	FlagNAK = 0x10
)

// Packet header flags and options (docs/protocols/wirefox.md §1.3).
const (
	// PacketSEG: more segments of the message follow.
	PacketSEG = 0x80
	// PacketBIG: length and offset are 32-bit.
	PacketBIG = 0x40
	// OptReliable: the packet is resent until acknowledged.
	OptReliable = 0x01
	// OptReceipt: the sender wants to know when the message is
	// acknowledged (local; nothing changes for the receiver).
	OptReceipt = 0x02
)

// Sizes (docs/protocols/wirefox.md §1.6, §6).
const (
	// MTU is the largest datagram the reference receives whole: every
	// datagram this package sends is at most MTU bytes, encryption
	// overhead included.
	MTU = 1300
	// RecvBuffer is the largest datagram accepted: the reference may send
	// datagrams above MTU (docs/protocols/wirefox.md §4 bug 2).
	RecvBuffer = 2048
	// SegmentSize is the largest slice of a message blob in one packet; a
	// longer blob is fragmented (docs/protocols/wirefox.md §3.6).
	SegmentSize = 1200
	// MaxMessage is the largest message blob (command byte included).
	MaxMessage = 16 << 20
	// MaxList is the most IDs in an ACK or NAK list.
	MaxList = 256
	// bigThreshold: a message whose payload is at least this long is sent
	// with PacketBIG on every segment (docs/protocols/wirefox.md §3.6).
	bigThreshold = 65535
)

var (
	errShortHeader = fmt.Errorf("%w: wirefox: truncated datagram header", engine.ErrMalformed)
	errViolation   = fmt.Errorf("%w: wirefox: invalid datagram flags", engine.ErrMalformed)
	errShortPacket = fmt.Errorf("%w: wirefox: truncated packet", engine.ErrMalformed)
	errPacketSize  = fmt.Errorf("%w: wirefox: packet length or offset beyond 16 MiB", engine.ErrMalformed)
)

// Datagram is a datagram header (docs/protocols/wirefox.md §1.2) and the
// packet bytes that follow it.
type Datagram struct {
	// Flags holds FlagDAT, FlagLNK, FlagACK and FlagNAK. ParseDatagram
	// drops the low nibble; AppendDatagram sets FlagACK and FlagNAK from
	// the lists and writes FlagDAT and FlagLNK as given.
	Flags byte
	// DataLen is the data-length field of a DAT datagram as written on
	// the wire: never relied upon on receive (docs/protocols/wirefox.md
	// §4 bug 1). Senders set it to len(Data).
	DataLen uint16
	// ID is the datagram ID.
	ID uint32
	// Acks and Naks are the ACK and NAK lists, at most MaxList IDs each.
	Acks, Naks []uint32
	// Data is the packets of a DAT datagram, to the end of the datagram.
	Data []byte
}

// ParseDatagram decodes b into d, reusing d's lists; d.Data aliases b. It
// returns an error wrapping engine.ErrMalformed when the header is
// truncated or its flags break the protocol rules
// (docs/protocols/wirefox.md §2 erratum 7): LNK without DAT, ACK or NAK,
// or no LNK and no DAT. A DAT datagram may carry no packet bytes.
func ParseDatagram(b []byte, d *Datagram) error {
	if len(b) < 5 {
		return errShortHeader
	}
	d.Flags = b[0] & 0xF0
	d.ID = binary.BigEndian.Uint32(b[1:])
	d.Acks, d.Naks, d.DataLen, d.Data = d.Acks[:0], d.Naks[:0], 0, nil
	lnk := d.Flags&FlagLNK != 0
	if lnk && d.Flags&(FlagDAT|FlagACK|FlagNAK) == 0 || !lnk && d.Flags&FlagDAT == 0 {
		return errViolation
	}
	b = b[5:]
	var ok bool
	if d.Flags&FlagACK != 0 {
		if d.Acks, b, ok = parseList(b, d.Acks); !ok {
			return errShortHeader
		}
	}
	if d.Flags&FlagNAK != 0 {
		if d.Naks, b, ok = parseList(b, d.Naks); !ok {
			return errShortHeader
		}
	}
	if d.Flags&FlagDAT != 0 {
		if len(b) < 2 {
			return errShortHeader
		}
		d.DataLen = binary.BigEndian.Uint16(b)
		d.Data = b[2:]
	}
	return nil
}

// parseList reads a count−1 byte and that many IDs into ids.
func parseList(b []byte, ids []uint32) ([]uint32, []byte, bool) {
	if len(b) < 1 {
		return ids, b, false
	}
	n := int(b[0]) + 1
	if len(b) < 1+4*n {
		return ids, b, false
	}
	for i := range n {
		ids = append(ids, binary.BigEndian.Uint32(b[1+4*i:]))
	}
	return ids, b[1+4*n:], true
}

// HeaderLen is the length of d's header: 5 bytes, 1 + 4n per list, 2
// with FlagDAT.
func (d *Datagram) HeaderLen() int {
	n := 5
	if len(d.Acks) > 0 {
		n += 1 + 4*len(d.Acks)
	}
	if len(d.Naks) > 0 {
		n += 1 + 4*len(d.Naks)
	}
	if d.Flags&FlagDAT != 0 {
		n += 2
	}
	return n
}

// AppendDatagram appends d to b: the header, then, with FlagDAT, DataLen
// and Data. FlagACK and FlagNAK are set exactly when the lists are not
// empty. Lists longer than MaxList are a programming error and panic
// (the reference mis-encodes them, docs/protocols/wirefox.md §4 bug 6).
func AppendDatagram(b []byte, d *Datagram) []byte {
	if len(d.Acks) > MaxList || len(d.Naks) > MaxList {
		panic("wirefox: ACK or NAK list longer than 256")
	}
	flags := d.Flags &^ (FlagACK | FlagNAK | 0x0F)
	if len(d.Acks) > 0 {
		flags |= FlagACK
	}
	if len(d.Naks) > 0 {
		flags |= FlagNAK
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint32(b, d.ID)
	b = appendList(b, d.Acks)
	b = appendList(b, d.Naks)
	if flags&FlagDAT != 0 {
		b = binary.BigEndian.AppendUint16(b, d.DataLen)
		b = append(b, d.Data...)
	}
	return b
}

func appendList(b []byte, ids []uint32) []byte {
	if len(ids) == 0 {
		return b
	}
	b = append(b, byte(len(ids)-1))
	for _, id := range ids {
		b = binary.BigEndian.AppendUint32(b, id)
	}
	return b
}

// Packet is one packet of a DAT datagram (docs/protocols/wirefox.md §1.3).
type Packet struct {
	// Flags holds PacketSEG and PacketBIG; ParsePacket drops the other
	// bits.
	Flags byte
	// ID is the packet ID.
	ID uint32
	// Options holds OptReliable and OptReceipt as written (other bits are
	// kept).
	Options byte
	// Channel is 0 for the default unordered channel.
	Channel uint8
	// Seq is the per-channel sequence, on the wire only when Channel != 0.
	Seq uint32
	// Offset is the byte offset of Body within the message blob.
	Offset uint32
	// Container and Index are the split fields, on the wire only when
	// PacketSEG is set or Offset > 0.
	Container, Index uint32
	// Body is this packet's slice of the blob; the first segment starts
	// with the command byte. Its length is the length field.
	Body []byte
}

// Split reports whether the packet carries the split fields.
func (p *Packet) Split() bool { return p.Flags&PacketSEG != 0 || p.Offset > 0 }

// PacketLen is the encoded length of p.
func (p *Packet) PacketLen() int { return packetHeaderLen(p.Flags, p.Channel, p.Split()) + len(p.Body) }

// packetHeaderLen is the header length: 11 bytes, + 4 for a channel's
// sequence, + 4 with PacketBIG, + 8 with the split fields.
func packetHeaderLen(flags byte, ch uint8, split bool) int {
	n := 11
	if ch != 0 {
		n += 4
	}
	if flags&PacketBIG != 0 {
		n += 4
	}
	if split {
		n += 8
	}
	return n
}

// ParsePacket decodes the first packet of b into p, with p.Body aliasing
// b, and returns its encoded length. Errors wrap engine.ErrMalformed: a
// truncated packet, or a length or offset beyond 16 MiB (the reference's
// receiver limits, docs/protocols/wirefox.md §1.3).
func ParsePacket(b []byte, p *Packet) (int, error) {
	if len(b) < 7 {
		return 0, errShortPacket
	}
	p.Flags = b[0] & (PacketSEG | PacketBIG)
	p.ID = binary.BigEndian.Uint32(b[1:])
	p.Options, p.Channel = b[5], b[6]
	n := 7
	p.Seq = 0
	if p.Channel != 0 {
		if len(b) < n+4 {
			return 0, errShortPacket
		}
		p.Seq = binary.BigEndian.Uint32(b[n:])
		n += 4
	}
	var length uint32
	if p.Flags&PacketBIG != 0 {
		if len(b) < n+8 {
			return 0, errShortPacket
		}
		length, p.Offset = binary.BigEndian.Uint32(b[n:]), binary.BigEndian.Uint32(b[n+4:])
		n += 8
	} else {
		if len(b) < n+4 {
			return 0, errShortPacket
		}
		length, p.Offset = uint32(binary.BigEndian.Uint16(b[n:])), uint32(binary.BigEndian.Uint16(b[n+2:]))
		n += 4
	}
	if length > MaxMessage || p.Offset >= MaxMessage {
		return 0, errPacketSize
	}
	p.Container, p.Index = 0, 0
	if p.Split() {
		if len(b) < n+8 {
			return 0, errShortPacket
		}
		p.Container, p.Index = binary.BigEndian.Uint32(b[n:]), binary.BigEndian.Uint32(b[n+4:])
		n += 8
	}
	if uint32(len(b)-n) < length {
		return 0, errShortPacket
	}
	p.Body = b[n : n+int(length)]
	return n + int(length), nil
}

// AppendPacket appends p to b. Without PacketBIG, Offset and len(Body)
// must fit 16 bits (a programming error otherwise: they are truncated).
func AppendPacket(b []byte, p *Packet) []byte {
	b = append(b, p.Flags&(PacketSEG|PacketBIG))
	b = binary.BigEndian.AppendUint32(b, p.ID)
	b = append(b, p.Options, p.Channel)
	if p.Channel != 0 {
		b = binary.BigEndian.AppendUint32(b, p.Seq)
	}
	if p.Flags&PacketBIG != 0 {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p.Body)))
		b = binary.BigEndian.AppendUint32(b, p.Offset)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p.Body)))
		b = binary.BigEndian.AppendUint16(b, uint16(p.Offset))
	}
	if p.Split() {
		b = binary.BigEndian.AppendUint32(b, p.Container)
		b = binary.BigEndian.AppendUint32(b, p.Index)
	}
	return append(b, p.Body...)
}
