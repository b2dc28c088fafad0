package toy

import (
	"encoding/binary"
	"fmt"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/trace"
)

// Datagram types, the first byte of every datagram.
const (
	typeHello    = 1 // client → server: [type][nonce 8]
	typeCookie   = 2 // server → client: [type][nonce 8][cookie 8]
	typeData     = 3 // [type][cookie 8][seq 4][message ≥ 1 byte]
	typeAck      = 4 // [type][cookie 8][next 4][sack 8]
	typePing     = 5 // [type][cookie 8]; answered with an ack
	typeClose    = 6 // [type][cookie 8]
	typeCloseAck = 7 // [type][cookie 8]
)

// Datagram sizes, in bytes.
const (
	helloLen   = 1 + 8
	cookieLen  = 1 + 8 + 8
	shortLen   = 1 + 8 // ping, close, close-ack
	ackLen     = 1 + 8 + 4 + 8
	dataHeader = 1 + 8 + 4
)

// typeNames names the datagram types for tracing.
var typeNames = [...]string{typeHello: "hello", typeCookie: "cookie", typeData: "data", typeAck: "ack",
	typePing: "ping", typeClose: "close", typeCloseAck: "close_ack"}

// packet is one decoded datagram. ID is the nonce of a hello or cookie
// and the cookie of every other type.
type packet struct {
	Type   uint8
	ID     uint64
	Cookie uint64 // a cookie datagram's cookie
	Seq    uint32 // data: the message's sequence number; ack: the next expected
	SACK   uint64 // ack: bit i set when Seq+1+i was received
	Data   []byte // data: the message, aliasing the datagram
}

// decode parses b, aliasing it. Errors wrap engine.ErrMalformed.
func decode(b []byte) (packet, error) {
	var p packet
	if len(b) < shortLen {
		return p, fmt.Errorf("%w: toy: %d bytes", engine.ErrMalformed, len(b))
	}
	p.Type, p.ID = b[0], binary.BigEndian.Uint64(b[1:9])
	want := shortLen
	switch p.Type {
	case typeHello, typePing, typeClose, typeCloseAck:
	case typeCookie:
		want = cookieLen
	case typeAck:
		want = ackLen
	case typeData:
		if len(b) <= dataHeader {
			return p, fmt.Errorf("%w: toy: data of %d bytes", engine.ErrMalformed, len(b))
		}
		p.Seq, p.Data = binary.BigEndian.Uint32(b[9:13]), b[dataHeader:]
		return p, nil
	default:
		return p, fmt.Errorf("%w: toy: type %d", engine.ErrMalformed, p.Type)
	}
	if len(b) != want {
		return p, fmt.Errorf("%w: toy: %s of %d bytes, not %d", engine.ErrMalformed, typeNames[p.Type], len(b), want)
	}
	switch p.Type {
	case typeCookie:
		p.Cookie = binary.BigEndian.Uint64(b[9:17])
	case typeAck:
		p.Seq, p.SACK = binary.BigEndian.Uint32(b[9:13]), binary.BigEndian.Uint64(b[13:21])
	}
	return p, nil
}

// put writes the header of a datagram of type typ with id into b and
// returns its length (shortLen).
func put(b []byte, typ uint8, id uint64) int {
	b[0] = typ
	binary.BigEndian.PutUint64(b[1:9], id)
	return shortLen
}

// IsOpening reports whether p can open an association at a listener: a
// hello, exactly helloLen bytes.
func IsOpening(p []byte) bool { return len(p) == helloLen && p[0] == typeHello }

// Describe decodes datagram b for a tracer. Its Type is the datagram
// type ("hello", "cookie", "data", "ack", "ping", "close", "close_ack");
// its fields are "nonce" (hello, cookie) or "cookie", and "seq", "next",
// "sack" where the type has them; a data datagram has one frame
// "message" with "length" and "data_prefix". On a malformed datagram Err
// is decode's error. It never panics and does not keep b.
func Describe(b []byte) trace.Datagram {
	d := trace.Datagram{Protocol: "toy"}
	p, err := decode(b)
	if err != nil {
		d.Err = err
		return d
	}
	d.Type = typeNames[p.Type]
	switch p.Type {
	case typeHello:
		d.Fields = []trace.Field{{Name: "nonce", Value: p.ID}}
	case typeCookie:
		d.Fields = []trace.Field{{Name: "nonce", Value: p.ID}, {Name: "cookie", Value: p.Cookie}}
	default:
		d.Fields = []trace.Field{{Name: "cookie", Value: p.ID}}
	}
	switch p.Type {
	case typeData:
		d.Fields = append(d.Fields, trace.Field{Name: "seq", Value: p.Seq})
		d.Frames = []trace.Frame{{Type: "message", Fields: []trace.Field{
			{Name: "length", Value: len(p.Data)}, trace.DataPrefix(p.Data)}}}
	case typeAck:
		d.Fields = append(d.Fields, trace.Field{Name: "next", Value: p.Seq}, trace.Field{Name: "sack", Value: p.SACK})
	}
	return d
}
