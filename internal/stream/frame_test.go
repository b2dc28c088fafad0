package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// helloFrame is a HELLO with start 0 and no token, so that the peer's
// wire offsets are the stream offsets.
func helloFrame(window uint64) []byte {
	b := make([]byte, helloLen+10)
	return b[:putHello(b, 0, 0, window)]
}

// helloV3 is the wire form of a HELLO: header, start, token, then the
// window's uvarint bytes.
func helloV3(start, token uint64, window ...byte) []byte {
	b := []byte{0x01, 'r', 'u', 'd', 'p', 0x03}
	b = binary.BigEndian.AppendUint64(b, start)
	b = binary.BigEndian.AppendUint64(b, token)
	return append(b, window...)
}

// rstFrame is an RST with code at offset off.
func rstFrame(code uint8, off uint64) []byte {
	b := make([]byte, 12)
	return b[:putRst(b, code, off)]
}

func valueFrame(t byte, v uint64) []byte {
	b := make([]byte, 11)
	return b[:putValue(b, t, v)]
}

func dataFrame(off uint64, p string) []byte {
	return append(valueFrame(typeData, off), p...)
}

// opened returns a Stream whose HELLO has been framed and which has
// received the peer's HELLO advertising peerLimit.
func opened(t testing.TB, cfg Config, peerLimit uint64) *Stream {
	s := New(cfg)
	buf := make([]byte, s.maxFrame)
	n := s.NextFrame(buf)
	require.Positive(t, n)
	require.Equal(t, typeHello, buf[0])
	require.NoError(t, s.HandleFrame(helloFrame(peerLimit)))
	require.True(t, s.Opened())
	return s
}

// next returns a copy of the next frame, or nil.
func next(s *Stream) []byte {
	buf := make([]byte, s.maxFrame)
	n := s.NextFrame(buf)
	if n == 0 {
		return nil
	}
	return buf[:n]
}

// TestFrameBytesSend: this end starts at wire offset 1000 (0xe8 0x07):
// DATA, FIN and RST carry offsets from there; the peer's WINDOW comes in
// the same space.
func TestFrameBytesSend(t *testing.T) {
	s := New(Config{MaxFrame: 302, RecvWindow: 65536, Start: 1000})
	require.Equal(t, helloV3(1000, 0, 0x80, 0x80, 0x04), next(s))
	require.Nil(t, next(s))
	require.False(t, s.Opened())

	payload := append(bytes.Repeat([]byte{'a'}, 300), "hi"...)
	require.Equal(t, 302, s.Write(payload))
	require.Equal(t, 302, s.Unsent())
	require.Nil(t, next(s), "no DATA before the peer's HELLO")

	require.NoError(t, s.HandleFrame(helloV3(5000, 0, 0xac, 0x02))) // window 300
	require.True(t, s.Opened())
	require.True(t, s.Validated(), "no token of ours to echo")
	require.Equal(t, append([]byte{0x02, 0xe8, 0x07}, payload[:299]...), next(s), "300 bytes of credit, a 3-byte offset")
	require.Equal(t, []byte{0x02, 0x93, 0x0a, 'a'}, next(s), "offset 1299")
	require.Nil(t, next(s), "no credit left")
	require.Equal(t, 2, s.Unsent())

	require.NoError(t, s.HandleFrame([]byte{0x03, 0xd0, 0x0f})) // WINDOW 2000: 1000 bytes
	require.Equal(t, []byte{0x02, 0x94, 0x0a, 'h', 'i'}, next(s))
	require.Nil(t, next(s))
	require.False(t, s.SendDone())

	s.CloseWrite()
	require.Zero(t, s.Writable())
	require.Equal(t, []byte{0x04, 0x96, 0x0a}, next(s)) // FIN 1302
	require.True(t, s.SendDone())
	require.Nil(t, next(s))
	s.CloseWrite()
	require.Nil(t, next(s))

	s.Abort(7)
	require.Equal(t, []byte{0x05, 0x07, 0x96, 0x0a}, next(s)) // RST 7 at 1302
	require.Nil(t, next(s))
}

// TestTokenEcho: a HELLO carrying a token is answered by an ECHO of it
// right after this end's HELLO; the end that sent the token is validated
// by that ECHO only.
func TestTokenEcho(t *testing.T) {
	listener := New(Config{MaxFrame: 64, Token: 0x0102030405060708})
	dialer := New(Config{MaxFrame: 64})
	hello := next(listener)
	require.Equal(t, helloV3(0, 0x0102030405060708, 0x80, 0x80, 0x10), hello)
	next(dialer)
	require.NoError(t, dialer.HandleFrame(hello))
	require.True(t, dialer.Validated())
	echo := next(dialer)
	require.Equal(t, []byte{0x06, 1, 2, 3, 4, 5, 6, 7, 8}, echo)
	require.Nil(t, next(dialer))

	require.NoError(t, listener.HandleFrame(helloV3(0, 0, 0x40)))
	require.True(t, listener.Opened())
	require.False(t, listener.Validated())
	require.NoError(t, listener.HandleFrame([]byte{0x06, 1, 2, 3, 4, 5, 6, 7, 9}))
	require.False(t, listener.Validated(), "another token")
	require.Equal(t, uint64(1), listener.Ignored())
	require.NoError(t, listener.HandleFrame(echo))
	require.True(t, listener.Validated())
}

func TestFrameBytesReceive(t *testing.T) {
	s := New(Config{MaxFrame: 64, RecvWindow: 1000})
	require.Equal(t, helloV3(0, 0, 0xe8, 0x07), next(s))
	require.NoError(t, s.HandleFrame(helloV3(0, 0, 0x00)))
	require.True(t, s.Opened())
	require.False(t, s.Readable())
	p := make([]byte, 300)
	n, err := s.Read(p)
	require.Zero(t, n)
	require.NoError(t, err)

	data := bytes.Repeat([]byte("0123456789"), 25)
	require.NoError(t, s.HandleFrame(append([]byte{0x02, 0x00}, data...)))
	require.True(t, s.Readable())
	n, err = s.Read(p[:249])
	require.NoError(t, err)
	require.Equal(t, data[:249], p[:n])
	require.Nil(t, next(s), "1249 is under 1000+250")
	n, err = s.Read(p)
	require.NoError(t, err)
	require.Equal(t, data[249:], p[:n])
	require.Equal(t, []byte{0x03, 0xe2, 0x09}, next(s)) // WINDOW 1250
	require.Nil(t, next(s))

	require.NoError(t, s.HandleFrame([]byte{0x02, 0xfa, 0x01, 'z'}))
	require.NoError(t, s.HandleFrame([]byte{0x04, 0xfb, 0x01})) // FIN 251
	require.NoError(t, s.HandleFrame([]byte{0x04, 0xfb, 0x01})) // duplicate
	require.True(t, s.RecvDone())
	require.True(t, s.Readable())
	n, err = s.Read(p)
	require.NoError(t, err)
	require.Equal(t, "z", string(p[:n]))
	require.Nil(t, next(s), "no WINDOW after FIN")
	n, err = s.Read(p)
	require.Zero(t, n)
	require.Same(t, io.EOF, err)
	require.True(t, s.Readable())

	require.NoError(t, s.HandleFrame([]byte{0x05, 0x03, 0x64})) // RST at 100: before the data received
	require.NoError(t, s.Err())
	require.Equal(t, uint64(1), s.Ignored())
	require.NoError(t, s.HandleFrame([]byte{0x05, 0x03, 0xfb, 0x01})) // RST at 251
	require.Same(t, ErrReset, s.Err())
	code, ok := s.ResetCode()
	require.True(t, ok)
	require.Equal(t, uint8(3), code)
	n, err = s.Read(p)
	require.Zero(t, n)
	require.Same(t, io.EOF, err, "FIN received before the RST")
}

func TestParseFrame(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want frame
	}{
		{helloV3(7, 9, 0x80, 0x80, 0x04), frame{typ: typeHello, value: 65536, start: 7, token: 9}},
		{helloV3(1<<64-1, 0, 0x00), frame{typ: typeHello, start: 1<<64 - 1}},
		{[]byte{0x02, 0xac, 0x02, 0x68, 0x69}, frame{typ: typeData, value: 300, payload: []byte("hi")}},
		{[]byte{0x02, 0x00, 0x00}, frame{typ: typeData, payload: []byte{0}}},
		{[]byte{0x03, 0xe8, 0x07}, frame{typ: typeWindow, value: 1000}},
		{[]byte{0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, frame{typ: typeWindow, value: 1<<64 - 1}},
		{[]byte{0x04, 0x05}, frame{typ: typeFin, value: 5}},
		{[]byte{0x05, 0x07, 0x00}, frame{typ: typeRst, code: 7}},
		{[]byte{0x05, 0x07, 0xe8, 0x07}, frame{typ: typeRst, code: 7, value: 1000}},
		{[]byte{0x06, 0, 0, 0, 0, 0, 0, 1, 2}, frame{typ: typeEcho, value: 0x102}},
	} {
		got, err := parseFrame(tc.in)
		require.NoError(t, err, "% x", tc.in)
		require.Equal(t, tc.want, got, "% x", tc.in)
	}
	// Encoders produce the same bytes.
	b := make([]byte, helloLen+10)
	require.Equal(t, helloV3(7, 9, 0x80, 0x80, 0x04), b[:putHello(b, 7, 9, 65536)])
	require.Equal(t, []byte{0x02, 0xac, 0x02, 0x68, 0x69}, dataFrame(300, "hi"))
	require.Equal(t, []byte{0x03, 0xe8, 0x07}, valueFrame(typeWindow, 1000))
	require.Equal(t, []byte{0x04, 0x05}, valueFrame(typeFin, 5))
	require.Equal(t, []byte{0x05, 0x07, 0xe8, 0x07}, rstFrame(7, 1000))
	require.Equal(t, []byte{0x06, 0, 0, 0, 0, 0, 0, 1, 2}, b[:putEcho(b, 0x102)])
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<63 - 1, 1 << 63, 1<<64 - 1} {
		require.Equal(t, len(valueFrame(typeFin, v))-1, uvarintLen(v), "%d", v)
	}
}

var malformed = []struct {
	name string
	in   []byte
}{
	{"empty", []byte{}},
	{"unknown type 0x00", []byte{0x00}},
	{"unknown type 0x07", []byte{0x07, 0x00}},
	{"unknown type 0xff", []byte{0xff, 0x01, 0x02}},
	{"truncated HELLO magic", []byte{0x01, 'r', 'u', 'd'}},
	{"HELLO without version", []byte{0x01, 'r', 'u', 'd', 'p'}},
	{"HELLO without start", []byte{0x01, 'r', 'u', 'd', 'p', 0x03}},
	{"HELLO truncated token", helloV3(1, 2)[:20]},
	{"HELLO without window", helloV3(1, 2)},
	{"HELLO truncated window", helloV3(1, 2, 0x80)},
	{"bad magic", append([]byte{0x01, 'R', 'U', 'D', 'P'}, helloV3(0, 0, 0)[5:]...)},
	{"version 1", []byte{0x01, 'r', 'u', 'd', 'p', 0x01, 0x00}},
	{"version 2", append([]byte{0x01, 'r', 'u', 'd', 'p', 0x02}, helloV3(0, 0, 0)[6:]...)},
	{"version 4", append([]byte{0x01, 'r', 'u', 'd', 'p', 0x04}, helloV3(0, 0, 0)[6:]...)},
	{"HELLO trailing byte", helloV3(0, 0, 0x00, 0x00)},
	{"DATA empty", []byte{0x02}},
	{"DATA truncated offset", []byte{0x02, 0x80}},
	{"DATA without payload", []byte{0x02, 0x00}},
	{"DATA non-minimal offset", []byte{0x02, 0x80, 0x00, 'x'}},
	{"WINDOW empty", []byte{0x03}},
	{"WINDOW truncated", []byte{0x03, 0xff}},
	{"WINDOW trailing byte", []byte{0x03, 0x01, 0x00}},
	{"WINDOW non-minimal", []byte{0x03, 0x80, 0x00}},
	{"WINDOW overflow", []byte{0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}},
	{"WINDOW 11-byte varint", []byte{0x03, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}},
	{"FIN empty", []byte{0x04}},
	{"FIN trailing byte", []byte{0x04, 0x00, 0x00}},
	{"RST empty", []byte{0x05}},
	{"RST without offset", []byte{0x05, 0x01}},
	{"RST trailing byte", []byte{0x05, 0x01, 0x02, 0x03}},
	{"ECHO short", []byte{0x06, 1, 2, 3, 4, 5, 6, 7}},
	{"ECHO long", []byte{0x06, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
}

func TestParseMalformed(t *testing.T) {
	for _, tc := range malformed {
		_, err := parseFrame(tc.in)
		require.ErrorIs(t, err, ErrProtocol, tc.name)
	}
}

// requireProtocolAbort checks that s failed with err, a protocol error, and
// produces exactly an RST with CodeProtocol.
func requireProtocolAbort(t *testing.T, s *Stream, err error, name string) {
	t.Helper()
	require.ErrorIs(t, err, ErrProtocol, name)
	require.Same(t, err, s.Err(), name)
	n, rerr := s.Read(make([]byte, 10))
	require.Zero(t, n, name)
	require.Same(t, err, rerr, name)
	require.True(t, s.Readable(), name)
	require.Zero(t, s.Write([]byte("x")), name)
	require.Zero(t, s.Writable(), name)
	require.Zero(t, s.Unsent(), name)
	require.Equal(t, rstFrame(CodeProtocol, 0), next(s), name)
	require.Nil(t, next(s), name)
	require.True(t, s.SendDone(), name)
	require.Nil(t, s.rx.blk, name)
	// Later frames are ignored.
	require.NoError(t, s.HandleFrame(dataFrame(0, "x")), name)
	require.NoError(t, s.HandleFrame([]byte{0xff}), name)
	require.Same(t, err, s.Err(), name)
	require.Nil(t, next(s), name)
}

// TestMalformedFirstFrameAborts: before the peer's HELLO a malformed
// frame means the peer does not speak rudp's streams: the stream fails.
func TestMalformedFirstFrameAborts(t *testing.T) {
	for _, tc := range malformed {
		s := New(Config{MaxFrame: 64, RecvWindow: 64})
		require.Equal(t, typeHello, next(s)[0])
		s.Write([]byte("pending"))
		requireProtocolAbort(t, s, s.HandleFrame(tc.in), tc.name)
	}
}

// TestImplausibleFramesIgnored: once the stream is open, malformed frames
// and values the peer never sends (outside the window, before data
// received, conflicting) are dropped and counted; the stream goes on.
func TestImplausibleFramesIgnored(t *testing.T) {
	cases := []struct {
		name   string
		frames [][]byte // all plausible but the last
	}{
		{"DATA beyond window", [][]byte{dataFrame(60, "12345")}},
		{"DATA just past window", [][]byte{dataFrame(64, "x")}},
		{"DATA at the largest offset", [][]byte{dataFrame(1<<64-1, "x")}},
		{"DATA beyond window after reads", [][]byte{dataFrame(0, "0123456789"), dataFrame(10, string(make([]byte, 55)))}},
		{"FIN before received data end", [][]byte{dataFrame(0, "0123456789"), valueFrame(typeFin, 5)}},
		{"FIN before out-of-order data", [][]byte{dataFrame(20, "0123456789"), valueFrame(typeFin, 25)}},
		{"conflicting FIN above", [][]byte{valueFrame(typeFin, 10), valueFrame(typeFin, 11)}},
		{"conflicting FIN below", [][]byte{valueFrame(typeFin, 10), valueFrame(typeFin, 9)}},
		{"FIN beyond window", [][]byte{valueFrame(typeFin, 65)}},
		{"DATA after FIN beyond final offset", [][]byte{valueFrame(typeFin, 5), dataFrame(3, "abcde")}},
		{"DATA after FIN at final offset", [][]byte{dataFrame(0, "abcde"), valueFrame(typeFin, 5), dataFrame(5, "f")}},
		{"RST beyond window", [][]byte{rstFrame(0, 65)}},
		{"RST before data received", [][]byte{dataFrame(0, "ab"), rstFrame(0, 1)}},
		{"WINDOW beyond any window", [][]byte{valueFrame(typeWindow, 1<<31)}},
		{"HELLO with another start", [][]byte{helloV3(5, 0, 0x10)}},
		{"ECHO without a token", [][]byte{{0x06, 0, 0, 0, 0, 0, 0, 0, 1}}},
		{"bad HELLO later", [][]byte{dataFrame(0, "ab"), {0x01, 'r', 'u', 'd', 'p', 0x01, 0x00}}},
	}
	for _, tc := range malformed {
		cases = append(cases, struct {
			name   string
			frames [][]byte
		}{"malformed: " + tc.name, [][]byte{tc.in}})
	}
	for _, tc := range cases {
		s := opened(t, Config{MaxFrame: 64, RecvWindow: 64}, 1000)
		for _, f := range tc.frames {
			require.NoError(t, s.HandleFrame(f), tc.name)
		}
		require.Equal(t, uint64(1), s.Ignored(), tc.name)
		require.NoError(t, s.Err(), tc.name)
		require.Equal(t, 7, s.Write([]byte("goes on")), tc.name)
		require.Equal(t, dataFrame(0, "goes on"), next(s), tc.name)
	}
}

// TestDataBeforeOwnHello: the peer cannot have a window before our HELLO
// is framed: its DATA is dropped.
func TestDataBeforeOwnHello(t *testing.T) {
	s := New(Config{MaxFrame: 64})
	require.NoError(t, s.HandleFrame(helloFrame(100)))
	require.NoError(t, s.HandleFrame(dataFrame(0, "x")))
	require.Equal(t, uint64(1), s.Ignored())
	require.Equal(t, typeHello, next(s)[0], "HELLO still goes first")
	require.Nil(t, next(s))
}

func TestFirstFrameNotHello(t *testing.T) {
	for _, f := range [][]byte{dataFrame(0, "x"), valueFrame(typeWindow, 5), valueFrame(typeFin, 0), rstFrame(0, 0), {typeEcho, 0, 0, 0, 0, 0, 0, 0, 1}} {
		s := New(Config{MaxFrame: 64, Ordered: true})
		require.Equal(t, typeHello, next(s)[0])
		err := s.HandleFrame(f)
		require.ErrorIs(t, err, ErrProtocol, "% x", f)
		require.Same(t, err, s.Err())
		require.Equal(t, rstFrame(CodeProtocol, 0), next(s))
	}
	// In order, HELLO then anything is fine.
	s := New(Config{MaxFrame: 64, Ordered: true})
	next(s)
	require.NoError(t, s.HandleFrame(helloFrame(10)))
	require.NoError(t, s.HandleFrame(dataFrame(0, "x")))
}

func TestReorderedBeforeHello(t *testing.T) {
	// Without Config.Ordered, frames overtaking the HELLO are kept but
	// nothing is readable until the HELLO has been checked.
	s := New(Config{MaxFrame: 64, RecvWindow: 64})
	next(s)
	require.NoError(t, s.HandleFrame(dataFrame(3, "def")))
	require.NoError(t, s.HandleFrame(valueFrame(typeWindow, 50)))
	require.NoError(t, s.HandleFrame(valueFrame(typeFin, 6)))
	require.NoError(t, s.HandleFrame(dataFrame(0, "abc")))
	require.False(t, s.Opened())
	require.False(t, s.Readable())
	require.False(t, s.RecvDone())
	p := make([]byte, 10)
	n, err := s.Read(p)
	require.Zero(t, n)
	require.NoError(t, err)
	require.Equal(t, 3, s.Write([]byte("xyz")))
	require.Nil(t, next(s), "no DATA before the peer's HELLO")

	require.NoError(t, s.HandleFrame(helloFrame(10)))
	require.True(t, s.RecvDone())
	require.Equal(t, dataFrame(0, "xyz"), next(s), "WINDOW 50 counts")
	n, err = s.Read(p)
	require.NoError(t, err)
	require.Equal(t, "abcdef", string(p[:n]))
	_, err = s.Read(p)
	require.Same(t, io.EOF, err)

	// A bad HELLO after reordered frames fails the stream.
	s = New(Config{MaxFrame: 64})
	next(s)
	require.NoError(t, s.HandleFrame(dataFrame(0, "abc")))
	err = s.HandleFrame(append([]byte{0x01, 'r', 'u', 'd', 'q'}, helloV3(0, 0, 0)[5:]...))
	require.ErrorIs(t, err, ErrProtocol)
	_, rerr := s.Read(p)
	require.Same(t, err, rerr)
}

func TestDuplicatesAndOverlap(t *testing.T) {
	s := opened(t, Config{MaxFrame: 64, RecvWindow: 64}, 1000)
	for _, f := range [][]byte{
		dataFrame(10, "klm"),
		dataFrame(5, "fghij"),
		dataFrame(12, "mnop"),
		dataFrame(0, "abc"),
		dataFrame(2, "cdefg"),
		dataFrame(0, "abcdefghijklmnop"),
		helloFrame(5),
		valueFrame(typeWindow, 3),
		dataFrame(16, "q"),
		valueFrame(typeFin, 17),
		valueFrame(typeFin, 17),
		dataFrame(16, "q"),
		dataFrame(3, "d"),
	} {
		require.NoError(t, s.HandleFrame(f), "% x", f)
	}
	require.True(t, s.RecvDone())
	p := make([]byte, 64)
	n, err := s.Read(p)
	require.NoError(t, err)
	require.Equal(t, "abcdefghijklmnopq", string(p[:n]))
	_, err = s.Read(p)
	require.Same(t, io.EOF, err)
	require.Equal(t, uint64(1000), s.peerLimit, "limits only grow")
}

func TestErrProtocolWrapping(t *testing.T) {
	s := New(Config{MaxFrame: 64})
	next(s)
	err := s.HandleFrame([]byte{0x09})
	require.True(t, errors.Is(err, ErrProtocol))
	require.Contains(t, err.Error(), "unknown frame type 0x09")
}
