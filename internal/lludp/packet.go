package lludp

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/rudpkit/rudp/internal/engine"
)

// Flag bits of the first byte (docs/protocols/lludp.md §1.1). The low nibble is written 0
// and ignored on receive.
const (
	// FlagZerocoded: the region from the message number to the end of the
	// body is zerocoded (docs/protocols/lludp.md §1.3).
	FlagZerocoded = 0x80
	// FlagReliable: the receiver must acknowledge the datagram (docs/protocols/lludp.md
	// §3.3).
	FlagReliable = 0x40
	// FlagResent: the datagram is a resend of an earlier one with the same
	// sequence number (docs/protocols/lludp.md §3.4).
	FlagResent = 0x20
	// FlagAppendedAcks: acknowledgements trail the message (docs/protocols/lludp.md §1.4).
	FlagAppendedAcks = 0x10
)

// Wire sizes (docs/protocols/lludp.md §1.1, §1.7, §6).
const (
	// HeaderLen is the fixed header: flags, 4-byte big-endian sequence
	// number, extra-header length.
	HeaderLen = 6
	// MinDatagram is the shortest datagram: a header and a 1-byte message
	// number.
	MinDatagram = HeaderLen + 1
	// MTUBytes is the viewer's budget for a message before appended acks
	// (header included): the most bytes this package builds, and the
	// budget from which the number of appended acks is computed.
	MTUBytes = 1200
	// MaxAppendedAcks is the most acknowledgements the viewer appends to
	// one datagram.
	MaxAppendedAcks = 250
	// MaxPacketAckIDs is the most IDs this package (like the viewer) puts
	// in one PacketAck message.
	MaxPacketAckIDs = 251
	// maxExtra is the longest extra header (its length is one byte).
	maxExtra = 0xFF
)

var (
	errShort    = fmt.Errorf("%w: lludp: datagram shorter than %d bytes", engine.ErrMalformed, MinDatagram)
	errLong     = fmt.Errorf("%w: lludp: datagram longer than %d bytes", engine.ErrMalformed, MaxDecoded)
	errAckCount = fmt.Errorf("%w: lludp: appended ack count exceeds the datagram", engine.ErrMalformed)
	errNumber   = fmt.Errorf("%w: lludp: truncated message number", engine.ErrMalformed)
	errExtra    = fmt.Errorf("%w: lludp: extra header runs past the message", engine.ErrMalformed)
)

// Packet is one LLUDP datagram (docs/protocols/lludp.md §1.1): a header, one message and
// optional appended acks.
type Packet struct {
	// Flags holds the flag bits (FlagZerocoded, FlagReliable, FlagResent,
	// FlagAppendedAcks) as received; ParsePacket clears the low nibble.
	// AppendPacket uses FlagReliable and FlagResent as given, takes
	// FlagZerocoded as a request (see AppendPacket) and sets
	// FlagAppendedAcks exactly when Acks is not empty.
	Flags byte
	// Seq is the sequence number, big-endian on the wire. Any 32-bit value
	// is accepted on receive; this package's sessions send 24-bit values.
	Seq uint32
	// Extra is the extra header, at most 255 bytes, placed after the
	// message number as in the viewer (docs/protocols/lludp.md §2 erratum 1). Sessions send
	// none and ignore what they receive.
	Extra []byte
	// Message is the message number in the template's full form (see
	// NumberLen).
	Message uint32
	// Body is the message body, opaque to the transport.
	Body []byte
	// Acks are the appended acknowledgements in wire order (oldest first
	// when this package sends them), at most 255.
	Acks []uint32
}

// ParsePacket decodes datagram p into dst (docs/protocols/lludp.md §1): the header, the
// appended-ack trailer (stripped from the raw datagram first, docs/protocols/lludp.md §1.4),
// then, when FlagZerocoded is set, the zero-decoding of the rest (docs/protocols/lludp.md
// §1.3) into scratch, then the message number (§1.2) and the extra header,
// skipped after the number (erratum 1). dst.Extra and dst.Body alias p or
// scratch; dst.Acks reuses its backing array. ParsePacket does not
// allocate when dst.Acks has capacity for 255 IDs and scratch for
// MaxDecoded bytes.
//
// Errors wrap engine.ErrMalformed: a datagram shorter than MinDatagram or
// longer than MaxDecoded, an ack count that does not fit (length − 1 <
// 4·count + 7), a zero expansion beyond MaxDecoded, a truncated message
// number, or an extra header longer than what follows the number. On error
// dst is left in an unspecified state.
func ParsePacket(p []byte, dst *Packet, scratch []byte) error {
	switch {
	case len(p) < MinDatagram:
		return errShort
	case len(p) > MaxDecoded:
		return errLong
	}
	dst.Flags = p[0] &^ 0x0F
	dst.Seq = binary.BigEndian.Uint32(p[1:5])
	extra := int(p[5])
	end := len(p)
	dst.Acks = dst.Acks[:0]
	if dst.Flags&FlagAppendedAcks != 0 {
		k := int(p[end-1])
		if end-1 < 4*k+MinDatagram {
			return errAckCount
		}
		end -= 1 + 4*k
		for i := range k {
			dst.Acks = append(dst.Acks, binary.BigEndian.Uint32(p[end+4*i:]))
		}
	}
	region := p[HeaderLen:end]
	if dst.Flags&FlagZerocoded != 0 {
		var err error
		if region, err = ZeroDecode(scratch[:0], region); err != nil {
			return err
		}
	}
	n, l := ParseNumber(region)
	if l == 0 {
		return errNumber
	}
	if extra > len(region)-l {
		return errExtra
	}
	dst.Message = n
	dst.Extra = region[l : l+extra : l+extra]
	dst.Body = region[l+extra:]
	return nil
}

// AppendPacket appends the wire form of p to b and returns the extended
// slice (docs/protocols/lludp.md §1). The flags byte carries FlagReliable and FlagResent from
// p.Flags and FlagAppendedAcks when p.Acks is not empty; the low nibble is
// 0. The extra length byte is len(p.Extra) and the extra bytes follow the
// message number.
//
// When p.Flags has FlagZerocoded, the region from the message number to
// the end of the body is zerocoded and the encoded form is kept, with
// FlagZerocoded set, only if it is strictly shorter than the plain form;
// otherwise the plain bytes go out with the flag clear, as the viewer does
// (docs/protocols/lludp.md §1.3). Appended acks are written big-endian after the region,
// never zerocoded, followed by their count.
//
// p.Message must have an encoding (NumberLen > 0); any other value is
// written in the 4-byte Low form of its low 16 bits. Only the first 255
// bytes of p.Extra and the first 255 of p.Acks are written. AppendPacket
// allocates only when b lacks capacity.
func AppendPacket(b []byte, p *Packet) []byte {
	start := len(b)
	flags := p.Flags & (FlagReliable | FlagResent)
	extra := p.Extra[:min(len(p.Extra), maxExtra)]
	b = append(b, flags, byte(p.Seq>>24), byte(p.Seq>>16), byte(p.Seq>>8), byte(p.Seq), byte(len(extra)))
	var num [4]byte
	nl := PutNumber(num[:], p.Message)
	encoded := false
	if plain := nl + len(extra) + len(p.Body); p.Flags&FlagZerocoded != 0 {
		// Kept only if strictly shorter than the plain form: the encoder
		// gets plain − 1 bytes.
		b = slices.Grow(b, plain)
		z := zeroEncoder{out: b[len(b) : len(b)+plain-1]}
		z.add(num[:nl])
		z.add(extra)
		z.add(p.Body)
		z.flush()
		if encoded = !z.over; encoded {
			b = b[:len(b)+z.n]
			flags |= FlagZerocoded
		}
	}
	if !encoded {
		b = append(b, num[:nl]...)
		b = append(b, extra...)
		b = append(b, p.Body...)
	}
	if k := min(len(p.Acks), 0xFF); k > 0 {
		for _, id := range p.Acks[:k] {
			b = binary.BigEndian.AppendUint32(b, id)
		}
		b = append(b, byte(k))
		flags |= FlagAppendedAcks
	}
	b[start] = flags
	return b
}
