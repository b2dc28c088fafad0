package stream

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Frame type bytes.
const (
	typeHello  byte = 0x01
	typeData   byte = 0x02
	typeWindow byte = 0x03
	typeFin    byte = 0x04
	typeRst    byte = 0x05
	typeEcho   byte = 0x06
)

// magic opens every HELLO frame.
const magic = "rudp"

// Version is the stream protocol version carried by HELLO. A HELLO with any
// other version is a protocol violation. Version 3 changed no frame: it
// tells the peer that this end's engine takes datagrams larger than its
// protocol's usual bound (rudp's POROUS streams on loopback), which a
// version 2 peer drops.
const Version = 3

// helloLen is the size of a HELLO frame without its limit varint: type,
// magic, version, start offset and token.
const helloLen = 1 + len(magic) + 1 + 8 + 8

// frame is one decoded frame. payload aliases the buffer it was parsed from.
type frame struct {
	typ     byte
	value   uint64 // HELLO: window; WINDOW: limit; DATA: offset; FIN: final offset; RST: send offset; ECHO: token
	start   uint64 // HELLO: the sender's first offset
	token   uint64 // HELLO: the token to echo, 0 for none
	code    uint8  // RST
	payload []byte // DATA
}

func typeName(t byte) string {
	switch t {
	case typeHello:
		return "HELLO"
	case typeData:
		return "DATA"
	case typeWindow:
		return "WINDOW"
	case typeFin:
		return "FIN"
	case typeRst:
		return "RST"
	case typeEcho:
		return "ECHO"
	}
	return fmt.Sprintf("type 0x%02x", t)
}

// protoErr returns an error wrapping ErrProtocol.
func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}

// uvarintLen is the size of v as a shortest uvarint, 1 to 10 bytes.
func uvarintLen(v uint64) int {
	return (bits.Len64(v|1) + 6) / 7
}

// readUvarint decodes a shortest-form uvarint at the start of b and returns
// it with its size; ok is false when b holds none.
func readUvarint(b []byte) (v uint64, n int, ok bool) {
	v, n = binary.Uvarint(b)
	if n <= 0 || n != uvarintLen(v) {
		return 0, 0, false
	}
	return v, n, true
}

// parseFrame decodes one frame. Errors wrap ErrProtocol.
func parseFrame(f []byte) (frame, error) {
	if len(f) == 0 {
		return frame{}, protoErr("empty frame")
	}
	fr := frame{typ: f[0]}
	b := f[1:]
	switch fr.typ {
	case typeHello:
		if len(b) < len(magic)+1 {
			return frame{}, protoErr("truncated HELLO")
		}
		if string(b[:len(magic)]) != magic {
			return frame{}, protoErr("bad HELLO magic %q", b[:len(magic)])
		}
		if v := b[len(magic)]; v != Version {
			return frame{}, protoErr("unsupported version %d", v)
		}
		if len(b) < helloLen-1 {
			return frame{}, protoErr("truncated HELLO")
		}
		fr.start = binary.BigEndian.Uint64(b[len(magic)+1:])
		fr.token = binary.BigEndian.Uint64(b[len(magic)+9:])
		b = b[helloLen-1:]
		fallthrough
	case typeWindow, typeFin:
		v, n, ok := readUvarint(b)
		if !ok {
			return frame{}, protoErr("bad varint in %s", typeName(fr.typ))
		}
		if n != len(b) {
			return frame{}, protoErr("%d trailing bytes after %s", len(b)-n, typeName(fr.typ))
		}
		fr.value = v
	case typeData:
		v, n, ok := readUvarint(b)
		if !ok {
			return frame{}, protoErr("bad varint in DATA")
		}
		if n == len(b) {
			return frame{}, protoErr("DATA without payload")
		}
		fr.value = v
		fr.payload = b[n:]
	case typeRst:
		if len(b) < 2 {
			return frame{}, protoErr("RST of %d bytes", len(f))
		}
		fr.code = b[0]
		v, n, ok := readUvarint(b[1:])
		if !ok || n != len(b)-1 {
			return frame{}, protoErr("bad offset in RST")
		}
		fr.value = v
	case typeEcho:
		if len(b) != 8 {
			return frame{}, protoErr("ECHO of %d bytes", len(f))
		}
		fr.value = binary.BigEndian.Uint64(b)
	default:
		return frame{}, protoErr("unknown frame type 0x%02x", fr.typ)
	}
	return fr, nil
}

// putHello writes a HELLO frame with the sender's first offset start, a
// token to echo (0 for none) and its receive window into buf and returns
// its size. buf must hold helloLen+10 bytes.
func putHello(buf []byte, start, token, window uint64) int {
	buf[0] = typeHello
	copy(buf[1:], magic)
	buf[1+len(magic)] = Version
	binary.BigEndian.PutUint64(buf[2+len(magic):], start)
	binary.BigEndian.PutUint64(buf[10+len(magic):], token)
	return helloLen + binary.PutUvarint(buf[helloLen:], window)
}

// putEcho writes an ECHO frame of token into buf and returns its size, 9.
func putEcho(buf []byte, token uint64) int {
	buf[0] = typeEcho
	binary.BigEndian.PutUint64(buf[1:], token)
	return 9
}

// maxValueLen is the largest frame putValue writes, and so the largest
// DATA header: a type and a 10-byte uvarint.
const maxValueLen = 1 + binary.MaxVarintLen64

// putValue writes a frame made of type t and the uvarint v (WINDOW, FIN)
// into buf and returns its size. buf must hold maxValueLen bytes.
func putValue(buf []byte, t byte, v uint64) int {
	buf[0] = t
	return 1 + binary.PutUvarint(buf[1:], v)
}

// putRst writes an RST frame with code and the sender's send offset into
// buf and returns its size. buf must hold 12 bytes.
func putRst(buf []byte, code uint8, off uint64) int {
	buf[0] = typeRst
	buf[1] = code
	return 2 + binary.PutUvarint(buf[2:], off)
}
