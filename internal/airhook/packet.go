package airhook

import (
	"encoding/binary"
	"fmt"

	"github.com/rudpkit/rudp/internal/engine"
)

// Flag bits of the first octet (docs/protocols/airhook.md §1.2). Bits 5 and 6 are reserved and
// ignored on receive; bit 7 marks a datagram that is not an Airhook packet.
const (
	flagInterval        = 0x01 // I
	flagNext            = 0x02 // E
	flagMissed          = 0x04 // M
	flagSession         = 0x08 // S
	flagObservedSession = 0x10 // O
	flagOutOfBand       = 0x80
)

// Wire limits (docs/protocols/airhook.md §1.4, §6).
const (
	headerLen     = 4   // flags, observed sequence octet, sequence
	maxMessageLen = 256 // one message, in bytes
	maxMessages   = 256 // messages in one packet
	maxMissed     = 256 // entries in one missed list
	// maxHeaderLen is the largest packet without messages this package
	// sends: O, S, E and a full missed list (I is never sent).
	maxHeaderLen = headerLen + 4 + 4 + 1 + 1 + maxMissed
)

// ErrOutOfBand is returned by Decode (and so by Session.HandleDatagram) for
// a datagram whose first octet has bit 7 set. The published format reserves
// that bit for out-of-band datagrams, so such a datagram is not an Airhook
// packet; the reference never sets it (docs/protocols/airhook.md §2 row 8, §5). It wraps
// engine.ErrMalformed.
var ErrOutOfBand = fmt.Errorf("%w: airhook: flag bit 7 set (out-of-band datagram)", engine.ErrMalformed)

var (
	errTruncated       = fmt.Errorf("%w: airhook: truncated packet", engine.ErrMalformed)
	errMessageOverrun  = fmt.Errorf("%w: airhook: message runs past the end of the datagram", engine.ErrMalformed)
	errTooManyMessages = fmt.Errorf("%w: airhook: more than %d messages", engine.ErrMalformed, maxMessages)
)

// Packet is one Airhook packet (docs/protocols/airhook.md §1.1).
//
// As in the reference encoder, an optional field is present on the wire
// exactly when its value is nonzero (non-empty for Missed): session ID 0
// is reserved and a Next of 0 is sent by omitting E (docs/protocols/airhook.md §1.3).
type Packet struct {
	// ObservedSeq is the low octet of the newest peer sequence number the
	// sender accepted.
	ObservedSeq uint8
	// Seq is this packet's 16-bit sequence number.
	Seq uint16
	// ObservedSession is the peer's session ID as known to the sender
	// (flag O); 0 when absent.
	ObservedSession uint32
	// Session is the sender's own session ID (flag S); 0 when absent.
	Session uint32
	// Interval is reserved (flag I); the reference never sends it and
	// ignores it on receive.
	Interval uint8
	// Next is the next message number (flag E): the number of the first
	// message in this packet; 0 when absent.
	Next uint8
	// Missed lists peer message numbers reported lost, oldest first
	// (flag M); at most 256 entries.
	Missed []uint8
	// Messages are the packet's messages, each 1..256 bytes, at most 256
	// of them. Their numbers are Next, Next+1, ... modulo 256.
	Messages [][]byte
}

// Flags returns the first octet the encoder writes for p.
func (p *Packet) Flags() uint8 {
	var f uint8
	if p.ObservedSession != 0 {
		f |= flagObservedSession
	}
	if p.Session != 0 {
		f |= flagSession
	}
	if p.Interval != 0 {
		f |= flagInterval
	}
	if p.Next != 0 {
		f |= flagNext
	}
	if len(p.Missed) != 0 {
		f |= flagMissed
	}
	return f
}

// Len returns the encoded size of p in bytes.
func (p *Packet) Len() int {
	n := headerLen
	if p.ObservedSession != 0 {
		n += 4
	}
	if p.Session != 0 {
		n += 4
	}
	if p.Interval != 0 {
		n++
	}
	if p.Next != 0 {
		n++
	}
	if len(p.Missed) != 0 {
		n += 1 + len(p.Missed)
	}
	for _, m := range p.Messages {
		n += 1 + len(m)
	}
	return n
}

// AppendTo appends the wire form of p to b and returns the extended slice,
// byte for byte as the reference encoder lays it out. p must respect the
// limits documented on Packet (Missed ≤ 256 entries, Messages ≤ 256 of
// 1..256 bytes each); the encoder does not check them.
func (p *Packet) AppendTo(b []byte) []byte {
	b = append(b, p.Flags(), p.ObservedSeq)
	b = binary.BigEndian.AppendUint16(b, p.Seq)
	if p.ObservedSession != 0 {
		b = binary.BigEndian.AppendUint32(b, p.ObservedSession)
	}
	if p.Session != 0 {
		b = binary.BigEndian.AppendUint32(b, p.Session)
	}
	if p.Interval != 0 {
		b = append(b, p.Interval)
	}
	if p.Next != 0 {
		b = append(b, p.Next)
	}
	if len(p.Missed) != 0 {
		b = append(b, uint8(len(p.Missed)-1))
		b = append(b, p.Missed...)
	}
	for _, m := range p.Messages {
		b = append(b, uint8(len(m)-1))
		b = append(b, m...)
	}
	return b
}

// Decode parses the datagram b into p, strictly as the reference decoder
// does (docs/protocols/airhook.md §1.4): the whole datagram is rejected if a field is
// truncated, if a message runs past the end, or if it holds more than 256
// messages; bits 5 and 6 of the flags are ignored. A datagram with bit 7
// set is rejected with ErrOutOfBand. Every error wraps engine.ErrMalformed.
//
// p.Missed and p.Messages alias b; p.Messages reuses its previous backing
// array, so decoding into the same Packet does not allocate. On error the
// contents of p are unspecified.
func Decode(b []byte, p *Packet) error {
	if len(b) < headerLen {
		return errTruncated
	}
	f := b[0]
	if f&flagOutOfBand != 0 {
		return ErrOutOfBand
	}
	p.ObservedSeq = b[1]
	p.Seq = binary.BigEndian.Uint16(b[2:])
	b = b[headerLen:]
	var ok bool
	if p.ObservedSession, b, ok = decodeUint32(f&flagObservedSession != 0, b); !ok {
		return errTruncated
	}
	if p.Session, b, ok = decodeUint32(f&flagSession != 0, b); !ok {
		return errTruncated
	}
	if p.Interval, b, ok = decodeUint8(f&flagInterval != 0, b); !ok {
		return errTruncated
	}
	if p.Next, b, ok = decodeUint8(f&flagNext != 0, b); !ok {
		return errTruncated
	}
	p.Missed = nil
	if f&flagMissed != 0 {
		if p.Missed, b, ok = decodeRun(b); !ok {
			return errTruncated
		}
	}
	p.Messages = p.Messages[:0]
	for len(b) > 0 {
		if len(p.Messages) == maxMessages {
			return errTooManyMessages
		}
		var m []byte
		if m, b, ok = decodeRun(b); !ok {
			return errMessageOverrun
		}
		p.Messages = append(p.Messages, m)
	}
	return nil
}

func decodeUint32(present bool, b []byte) (uint32, []byte, bool) {
	if !present {
		return 0, b, true
	}
	if len(b) < 4 {
		return 0, b, false
	}
	return binary.BigEndian.Uint32(b), b[4:], true
}

func decodeUint8(present bool, b []byte) (uint8, []byte, bool) {
	if !present {
		return 0, b, true
	}
	if len(b) < 1 {
		return 0, b, false
	}
	return b[0], b[1:], true
}

// decodeRun reads a count-minus-one octet followed by that many plus one
// bytes. The run is capped so that appending to it cannot overwrite what
// follows in b.
func decodeRun(b []byte) (run, rest []byte, ok bool) {
	if len(b) < 1 {
		return nil, b, false
	}
	n := int(b[0]) + 1
	if len(b)-1 < n {
		return nil, b, false
	}
	return b[1 : 1+n : 1+n], b[1+n:], true
}
