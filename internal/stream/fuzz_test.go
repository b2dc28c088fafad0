package stream

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// lp prefixes each frame with its length, the input format of
// FuzzStreamFrame, with control bits clear.
func lp(frames ...[]byte) []byte {
	var b []byte
	for _, f := range frames {
		b = append(b, byte(len(f)))
		b = append(b, f...)
	}
	return b
}

// FuzzStreamFrame feeds arbitrary frames to an opened Stream. The input is a
// sequence of records: a control byte c, then c&0x3f bytes of frame. Bit
// 0x40 of c reads from the stream after the frame, bit 0x80 writes to it.
// The stream must never panic, never fail on a frame once open (frames it
// cannot use are counted in Ignored), stay within its memory bounds,
// produce only well-formed frames, and read exactly the bytes a simple
// model of reassembly predicts.
func FuzzStreamFrame(f *testing.F) {
	f.Add(lp(dataFrame(0, "hello"), valueFrame(typeFin, 5)))
	f.Add(lp(dataFrame(3, "lo"), dataFrame(0, "hel"), valueFrame(typeWindow, 300)))
	f.Add(lp(valueFrame(typeWindow, 40), dataFrame(190, "0123456789"), rstFrame(4, 200)))
	f.Add(lp(valueFrame(typeFin, 3), dataFrame(0, "abc"), rstFrame(4, 3), dataFrame(1, "b")))
	f.Add(append(lp(dataFrame(0, "0123456789abcdef0123456789abcdef")), 0xc0, 0xc0, 0x40, 0xc0))
	f.Add(lp(helloV3(9, 9, 0x00), []byte{0x06, 0, 0, 0, 0, 0, 0, 0, 1}))
	f.Fuzz(func(t *testing.T, in []byte) {
		const w = 200
		cfg := Config{MaxFrame: 48, RecvWindow: w, SendBuffer: 100}
		s := New(cfg)
		buf := make([]byte, cfg.MaxFrame)
		require.Equal(t, helloLen+2, s.NextFrame(buf)) // HELLO advertising 200
		require.NoError(t, s.HandleFrame(helloFrame(0)))

		var model []byte // last byte written at each offset at or past the in-order point
		var have []bool
		rbuf := make([]byte, 64)
		wbuf := make([]byte, 64)
		for len(in) > 0 {
			c := in[0]
			l := min(int(c&0x3f), len(in)-1)
			fr := in[1 : 1+l]
			in = in[1+l:]

			live := s.err == nil || s.drain
			before, ignored := s.recvNext, s.Ignored()
			err := s.HandleFrame(fr)
			if err != nil {
				t.Fatalf("HandleFrame(% x) = %v on an open stream", fr, err)
			} else if p, perr := parseFrame(fr); live && perr == nil && p.typ == typeData && s.Ignored() == ignored {
				for i, b := range p.payload {
					o := p.value + uint64(i)
					if o < before {
						continue
					}
					for uint64(len(model)) <= o {
						model = append(model, 0)
						have = append(have, false)
					}
					model[o], have[o] = b, true
				}
			}
			if msg := boundsViolation(s); msg != "" {
				t.Fatal(msg)
			}
			if s.err == nil {
				for o := s.readOff; o < s.recvNext; o++ {
					if !have[o] {
						t.Fatalf("offset %d in order but never received", o)
					}
				}
				if s.recvNext < uint64(len(have)) && have[s.recvNext] {
					t.Fatalf("offset %d received but not in order", s.recvNext)
				}
			}

			for n := s.NextFrame(buf); n > 0; n = s.NextFrame(buf) {
				if _, perr := parseFrame(buf[:n]); perr != nil || n > cfg.MaxFrame {
					t.Fatalf("produced bad frame % x: %v", buf[:n], perr)
				}
			}
			if c&0x80 != 0 {
				s.Write(wbuf[:l])
			}
			if c&0x40 != 0 {
				from := s.readOff
				n, err := s.Read(rbuf[:1+l])
				if n > 0 && (err != nil || !bytes.Equal(model[from:from+uint64(n)], rbuf[:n])) {
					t.Fatalf("read at %d: % x, %v; want % x", from, rbuf[:n], err, model[from:from+uint64(n)])
				}
			}
		}
	})
}
