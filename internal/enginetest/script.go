package enginetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// Script drives a Pair as the bytes of a fuzz input say, for the engines'
// session fuzzers: the input is a list of records, each an operation and
// its arguments, that step the pair, move its clock, send messages and
// inject mutated copies of captured datagrams, checking both sessions
// after every record.
//
// A record is four bytes, op a1 a2 a3, except a raw datagram. op&7 is:
//
//	0  step the pair to its next event
//	1  advance the clock by a1 ms (the pair runs meanwhile)
//	2  queue a message of 1+a1 bytes on A (op&8: on B)
//	3  inject into A (op&8: into B) a copy of Pool[a1 % len(Pool)], with
//	   the byte at a2 % len xored with a3, or, when op&16, cut to a2 % len
//	4  inject a raw datagram into A (op&8: into B): a1 bytes follow the
//	   op and a1 (a2 and a3 are absent)
//	5  take every delivered message from both sessions
//	6  toggle the loss of both links (a1 % 4 × 10 %)
//	7  cut both links until the next 7 (a1 ignored)
//
// The pool starts with the captures given and grows with every datagram
// the pair sends, so that injected copies follow the live sequence
// numbers.
type Script[S engine.Engine] struct {
	P *Pair[S]
	// Pool holds the datagrams injections copy.
	Pool [][]byte
	// Send queues a message of n bytes on s; errors (a full queue) are
	// the engine's business.
	Send func(s S, n int)
	// Check verifies the bookkeeping of s.
	Check func(s S)
	// MaxRecords bounds the records run (default 64), and so each input's
	// cost.
	MaxRecords int
}

// Run plays b and returns the number of records run.
func (sc *Script[S]) Run(b []byte) int {
	p := sc.P
	maxRecords := sc.MaxRecords
	if maxRecords == 0 {
		maxRecords = 64
	}
	r := 0
	for ; r < maxRecords && len(b) >= 2; r++ {
		op, a1 := b[0], b[1]
		var a2, a3 byte
		if op&7 == 4 {
			n := min(int(a1), len(b)-2)
			sc.inject(op, bytes.Clone(b[2:2+n]))
			b = b[2+n:]
			sc.check()
			continue
		}
		if len(b) >= 4 {
			a2, a3 = b[2], b[3]
		}
		b = b[min(4, len(b)):]
		switch op & 7 {
		case 0:
			p.Step()
		case 1:
			p.Advance(p.Now.Add(time.Duration(a1) * time.Millisecond))
		case 2:
			s := p.A
			if op&8 != 0 {
				s = p.B
			}
			sc.Send(s, 1+int(a1))
		case 3:
			sc.grow()
			if len(sc.Pool) > 0 {
				d := bytes.Clone(sc.Pool[int(a1)%len(sc.Pool)])
				switch {
				case len(d) == 0:
				case op&16 != 0:
					d = d[:int(a2)%len(d)]
				default:
					d[int(a2)%len(d)] ^= a3
				}
				sc.inject(op, d)
			}
		case 5:
			drain(p.A)
			drain(p.B)
		case 6:
			p.AB.Loss = float64(a1%4) / 10
			p.BA.Loss = p.AB.Loss
		case 7:
			p.AB.Cut = !p.AB.Cut
			p.BA.Cut = p.AB.Cut
		}
		sc.check()
	}
	sc.grow()
	return r
}

// inject hands d to A, or to B when op&8.
func (sc *Script[S]) inject(op byte, d []byte) {
	s := sc.P.A
	if op&8 != 0 {
		s = sc.P.B
	}
	_ = s.HandleDatagram(sc.P.Now, d)
}

// grow adds to the pool what the pair sent since, keeping at most 256
// datagrams of traffic.
func (sc *Script[S]) grow() {
	for _, l := range []*Link{&sc.P.AB, &sc.P.BA} {
		for _, d := range l.Log {
			if len(sc.Pool) < 512 {
				sc.Pool = append(sc.Pool, d)
			}
		}
		l.Log = l.Log[:0]
	}
}

func (sc *Script[S]) check() {
	sc.Check(sc.P.A)
	sc.Check(sc.P.B)
}

// Settle heals the links and runs the pair, delivering, until neither
// session has a message pending or one of them has closed (a peer that no
// longer understands this end must end in a timeout), failing if that
// takes more than limit of virtual time or steps steps: nothing stalls
// silently. It checks both sessions every 16 steps and at the end (every
// step would cost the fuzzers most of their speed).
func (sc *Script[S]) Settle(limit time.Duration, steps int) {
	p := sc.P
	p.T.Helper()
	p.AB.Cut, p.BA.Cut, p.AB.Loss, p.BA.Loss = false, false, 0, 0
	end := p.Now.Add(limit)
	for i := 0; ; i++ {
		drain(p.A)
		drain(p.B)
		done := p.A.Pending() == 0 && p.B.Pending() == 0 ||
			p.A.State() == engine.StateClosed || p.B.State() == engine.StateClosed
		if done || i%16 == 0 {
			sc.check()
		}
		if done {
			return
		}
		require.Less(p.T, i, steps, "no end after %d steps at %v", steps, p.at())
		require.True(p.T, p.Step(), "nothing scheduled at %v with messages pending", p.at())
		require.False(p.T, p.Now.After(end), "messages still pending after %v", limit)
	}
}

func drain[S engine.Engine](s S) {
	for {
		if _, ok := s.Recv(); !ok {
			return
		}
	}
}

// MaxScriptInput is the longest input a session fuzzer plays (the rest is
// ignored). The fuzzer minimizes every input it finds interesting, in a
// number of runs that grows with the square of its length: with inputs
// grown to a kilobyte or more it would minimize for minutes and hardly
// fuzz.
const MaxScriptInput = 256

// AddScriptSeeds seeds a session fuzzer: for each capture short enough, a
// script that opens the association, injects the capture into B and sends
// a message each way; and one script that runs every kind of record.
func AddScriptSeeds(f *testing.F, captures [][]byte) {
	for _, d := range captures {
		if len(d) <= MaxScriptInput-18 {
			f.Add(append(append([]byte{1, 50, 0, 0, 4 | 8, byte(len(d))}, d...), 2, 10, 0, 0, 2|8, 200, 0, 0, 1, 100, 0, 0))
		}
	}
	f.Add([]byte{2, 255, 0, 0, 0, 0, 0, 0, 3, 1, 5, 0x80, 3 | 8, 2, 7, 1, 3 | 16, 3, 9, 0, 6, 2, 0, 0, 1, 200, 0, 0, 7, 0, 0, 0, 1, 30, 0, 0, 7, 0, 0, 0, 5, 0, 0, 0})
}
