package avara

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/sigurn/crc16"
)

// Wire sizes and values (docs/protocols/avara.md §1, §6).
const (
	// DefaultVersion is the network version of the reference at the cited
	// commit (kAvaraNetVersion): the value bytes 0–1 hold while the CRC
	// is computed (docs/protocols/avara.md §1.3).
	DefaultVersion = 18
	// HeaderLen is the CRC and the ack field.
	HeaderLen = 4
	// AckMapLen is the length of the AckMap that follows the header when
	// bit 0 of the ack field is set.
	AckMapLen = 4
	// MaxDatagram is the largest datagram this package builds: the
	// reference's send buffer (docs/protocols/avara.md §1.6, §4.4).
	MaxDatagram = 1024
	// MaxReceived is the largest datagram accepted: the reference's
	// receive buffer.
	MaxReceived = 16384
	// MaxData is the most data bytes one message carries (1024 − 40).
	MaxData = 984
	// PunchLen is the length of the NAT hole-punching datagrams that share
	// the reference's socket (docs/protocols/avara.md §1.2): never sent,
	// ignored on receive.
	PunchLen = 7
	// NothingReceived is the ack field of a side that has received
	// nothing: serial 0 − 2.
	NothingReceived uint16 = 0xFFFE
	// SenderSerialMax is the highest serial whose messages always carry
	// the sender byte, so that early messages can be matched to a
	// connection whose address changed (docs/protocols/avara.md §1.4).
	SenderSerialMax = 100
	// MaxMessageHeader is the longest message header: serial, send count,
	// flags, command, distribution, 4-byte p3, p2, 2-byte data length, p1
	// and sender.
	MaxMessageHeader = 2 + 1 + 1 + 1 + 2 + 4 + 2 + 2 + 1 + 1
)

// Flag bits of a message (docs/protocols/avara.md §1.4).
const (
	flagP1           = 0x01
	flagP2           = 0x02
	flagP3Long       = 0x04
	flagLenLong      = 0x08
	flagLenShort     = 0x10
	flagP3Short      = 0x20
	flagDistribution = 0x40
	flagSender       = 0x80
)

var (
	errShort    = fmt.Errorf("%w: avara: datagram shorter than %d bytes", engine.ErrMalformed, HeaderLen)
	errLong     = fmt.Errorf("%w: avara: datagram longer than %d bytes", engine.ErrMalformed, MaxReceived)
	errChecksum = fmt.Errorf("%w: avara: checksum mismatch (corrupted, or another network version)", engine.ErrMalformed)
	errAckMap   = fmt.Errorf("%w: avara: AckMap flag set without an AckMap", engine.ErrMalformed)
	errTrunc    = fmt.Errorf("%w: avara: truncated message", engine.ErrMalformed)
	errDataLen  = fmt.Errorf("%w: avara: message data length out of 0..%d", engine.ErrMalformed, MaxData)
	// ErrPunch is returned by ParseDatagram for a 7-byte datagram: a NAT
	// hole-punching packet, not an Avara datagram (docs/protocols/avara.md
	// §1.2). It does not wrap engine.ErrMalformed; sessions ignore such
	// datagrams without counting them.
	ErrPunch = errors.New("avara: NAT punch datagram")
)

// Message is one message of a datagram (docs/protocols/avara.md §1.4).
// The encoder writes its optional fields as the reference does: p1, p2,
// p3 and the data length only when nonzero, p3 in 2 bytes when it is
// 1..65535 and in 4 otherwise, the data length in 1 byte up to 255; the
// distribution and sender bytes only when their Has flags are set.
type Message struct {
	Serial    uint16 // even; steps by 2 per message
	SendCount uint8  // times sent before this transmission
	Command   int8
	P1        int8
	P2        int16
	P3        int32
	// Distribution is the recipients' bitmap, written only with
	// HasDistribution. When absent the receiver takes its own bit.
	Distribution    int16
	HasDistribution bool
	// Sender is the id of the player the message comes from, written only
	// with HasSender. When absent the receiver takes the connection's id.
	Sender    int8
	HasSender bool
	// Data is the message's data, at most MaxData bytes. ParseDatagram
	// leaves it pointing into the datagram.
	Data []byte
}

// Datagram is one Avara UDP datagram (docs/protocols/avara.md §1.2): the
// ack field, the optional AckMap and zero or more messages.
type Datagram struct {
	// Ack is the last serial received in order: the ack field with bit 0
	// (the AckMap flag) cleared. NothingReceived before anything arrived.
	Ack uint16
	// HasAckMap sets bit 0 of the ack field and writes AckMap. Bit k of
	// AckMap acknowledges serial Ack + 2(k+1) (docs/protocols/avara.md
	// §1.5).
	HasAckMap bool
	AckMap    uint32
	Messages  []Message
}

// crcTable is CRC-16/KERMIT (docs/protocols/avara.md §1.3).
var crcTable = crc16.MakeTable(crc16.CRC16_KERMIT)

// Checksum returns the CRC-16/KERMIT of datagram b computed with its
// bytes 0–1 replaced by version, little-endian, as the reference checks
// and sends it (docs/protocols/avara.md §1.3). b must hold at least 2
// bytes; it is not modified.
func Checksum(b []byte, version uint16) uint16 {
	v := [2]byte{byte(version), byte(version >> 8)}
	crc := crc16.Update(crc16.Init(crcTable), v[:], crcTable)
	return crc16.Complete(crc16.Update(crc, b[2:], crcTable), crcTable)
}

// appendHeader appends the CRC placeholder, the ack field and, with
// hasMap, the AckMap.
func appendHeader(b []byte, ack uint16, hasMap bool, ackMap uint32) []byte {
	field := ack &^ 1
	if hasMap {
		field |= 1
	}
	b = append(b, 0, 0)
	b = binary.LittleEndian.AppendUint16(b, field)
	if hasMap {
		b = binary.LittleEndian.AppendUint32(b, ackMap)
	}
	return b
}

// seal stores the checksum of the datagram d in its bytes 0–1.
func seal(d []byte, version uint16) {
	binary.LittleEndian.PutUint16(d, Checksum(d, version))
}

// MessageLen returns the encoded length of m.
func MessageLen(m *Message) int {
	n := 5 + len(m.Data)
	if m.HasDistribution {
		n += 2
	}
	switch {
	case uint32(m.P3) > 0xFFFF:
		n += 4
	case m.P3 != 0:
		n += 2
	}
	if m.P2 != 0 {
		n += 2
	}
	switch {
	case len(m.Data) > 0xFF:
		n += 2
	case len(m.Data) > 0:
		n++
	}
	if m.P1 != 0 {
		n++
	}
	if m.HasSender {
		n++
	}
	return n
}

// AppendMessage appends the wire form of m to b, with the reference's
// field order: serial, send count, flags, command, distribution, p3, p2,
// data length, p1, sender, data. m.Data must not exceed MaxData bytes.
func AppendMessage(b []byte, m *Message) []byte {
	var flags byte
	if m.HasDistribution {
		flags |= flagDistribution
	}
	switch {
	case uint32(m.P3) > 0xFFFF:
		flags |= flagP3Long
	case m.P3 != 0:
		flags |= flagP3Short
	}
	if m.P2 != 0 {
		flags |= flagP2
	}
	switch {
	case len(m.Data) > 0xFF:
		flags |= flagLenLong
	case len(m.Data) > 0:
		flags |= flagLenShort
	}
	if m.P1 != 0 {
		flags |= flagP1
	}
	if m.HasSender {
		flags |= flagSender
	}
	b = binary.LittleEndian.AppendUint16(b, m.Serial)
	b = append(b, m.SendCount, flags, byte(m.Command))
	if flags&flagDistribution != 0 {
		b = binary.LittleEndian.AppendUint16(b, uint16(m.Distribution))
	}
	switch {
	case flags&flagP3Long != 0:
		b = binary.LittleEndian.AppendUint32(b, uint32(m.P3))
	case flags&flagP3Short != 0:
		b = binary.LittleEndian.AppendUint16(b, uint16(m.P3))
	}
	if flags&flagP2 != 0 {
		b = binary.LittleEndian.AppendUint16(b, uint16(m.P2))
	}
	switch {
	case flags&flagLenLong != 0:
		b = binary.LittleEndian.AppendUint16(b, uint16(len(m.Data)))
	case flags&flagLenShort != 0:
		b = append(b, byte(len(m.Data)))
	}
	if flags&flagP1 != 0 {
		b = append(b, byte(m.P1))
	}
	if flags&flagSender != 0 {
		b = append(b, byte(m.Sender))
	}
	return append(b, m.Data...)
}

// AppendDatagram appends the wire form of d to b, checksummed with
// version, and returns it. It does not check the size; sessions never
// build more than MaxDatagram bytes.
func AppendDatagram(b []byte, d *Datagram, version uint16) []byte {
	start := len(b)
	b = appendHeader(b, d.Ack, d.HasAckMap, d.AckMap)
	for i := range d.Messages {
		b = AppendMessage(b, &d.Messages[i])
	}
	seal(b[start:], version)
	return b
}

// ParseDatagram decodes datagram b, checked against version, into d,
// reusing d.Messages. Message data point into b. It returns ErrPunch for
// a 7-byte datagram, and an error wrapping engine.ErrMalformed when b is
// shorter than HeaderLen or longer than MaxReceived, its checksum does
// not match (a datagram of another network version looks the same), the
// AckMap is cut short, or a message is truncated or has a data length
// outside 0..MaxData (the reference drops the rest of the datagram there;
// here the whole datagram is refused, and its sender resends what it
// carried). On error d is left in an unspecified state.
func ParseDatagram(b []byte, d *Datagram, version uint16) error {
	switch {
	case len(b) == PunchLen:
		return ErrPunch
	case len(b) < HeaderLen:
		return errShort
	case len(b) > MaxReceived:
		return errLong
	case binary.LittleEndian.Uint16(b) != Checksum(b, version):
		return errChecksum
	}
	field := binary.LittleEndian.Uint16(b[2:])
	d.Ack, d.HasAckMap, d.AckMap = field&^1, field&1 != 0, 0
	d.Messages = d.Messages[:0]
	p := b[HeaderLen:]
	if d.HasAckMap {
		if len(p) < AckMapLen {
			return errAckMap
		}
		d.AckMap = binary.LittleEndian.Uint32(p)
		p = p[AckMapLen:]
	}
	for len(p) > 0 {
		var m Message
		n, err := parseMessage(p, &m)
		if err != nil {
			return err
		}
		d.Messages = append(d.Messages, m)
		p = p[n:]
	}
	return nil
}

// parseMessage decodes the message at the start of p and returns its
// length.
func parseMessage(p []byte, m *Message) (int, error) {
	if len(p) < 5 {
		return 0, errTrunc
	}
	m.Serial = binary.LittleEndian.Uint16(p)
	m.SendCount, m.Command = p[2], int8(p[4])
	flags := p[3]
	i := 5
	field := func(n int) []byte {
		if len(p)-i < n {
			return nil
		}
		f := p[i : i+n]
		i += n
		return f
	}
	if flags&flagDistribution != 0 {
		f := field(2)
		if f == nil {
			return 0, errTrunc
		}
		m.Distribution, m.HasDistribution = int16(binary.LittleEndian.Uint16(f)), true
	}
	switch {
	case flags&flagP3Long != 0:
		f := field(4)
		if f == nil {
			return 0, errTrunc
		}
		m.P3 = int32(binary.LittleEndian.Uint32(f))
	case flags&flagP3Short != 0:
		f := field(2)
		if f == nil {
			return 0, errTrunc
		}
		m.P3 = int32(binary.LittleEndian.Uint16(f))
	}
	if flags&flagP2 != 0 {
		f := field(2)
		if f == nil {
			return 0, errTrunc
		}
		m.P2 = int16(binary.LittleEndian.Uint16(f))
	}
	n := 0
	switch {
	case flags&flagLenLong != 0:
		f := field(2)
		if f == nil {
			return 0, errTrunc
		}
		n = int(int16(binary.LittleEndian.Uint16(f)))
	case flags&flagLenShort != 0:
		f := field(1)
		if f == nil {
			return 0, errTrunc
		}
		n = int(f[0])
	}
	if n < 0 || n > MaxData {
		return 0, errDataLen
	}
	if flags&flagP1 != 0 {
		f := field(1)
		if f == nil {
			return 0, errTrunc
		}
		m.P1 = int8(f[0])
	}
	if flags&flagSender != 0 {
		f := field(1)
		if f == nil {
			return 0, errTrunc
		}
		m.Sender, m.HasSender = int8(f[0]), true
	}
	data := field(n)
	if data == nil && n > 0 {
		return 0, errTrunc
	}
	m.Data = data
	return i, nil
}
