package main

import (
	"context"
	"io"
)

// interruptible is a reader of r whose Read returns errInterrupted as soon
// as ctx ends, even while r's own Read blocks, as a terminal's stdin does
// until a line is typed: that Read is left running in its goroutine and
// what it returns is dropped, since the command is ending.
type interruptible struct {
	ctx     context.Context
	r       io.Reader
	buf     []byte
	results chan readResult // the outstanding Read's, one at a time
	waiting bool            // a Read of r is outstanding
}

type readResult struct {
	n   int
	err error
}

func newInterruptible(ctx context.Context, r io.Reader) *interruptible {
	return &interruptible{ctx: ctx, r: r, results: make(chan readResult, 1)}
}

// Read reads into p what one Read of r returns, or fails with
// errInterrupted once ctx has ended.
func (in *interruptible) Read(p []byte) (int, error) {
	if !in.waiting {
		if len(in.buf) < len(p) {
			in.buf = make([]byte, len(p))
		}
		buf := in.buf[:len(p)]
		in.waiting = true
		go func() {
			n, err := in.r.Read(buf)
			in.results <- readResult{n, err}
		}()
	}
	select {
	case <-in.ctx.Done():
		return 0, errInterrupted
	case res := <-in.results:
		in.waiting = false
		n := copy(p, in.buf[:res.n])
		return n, res.err
	}
}
