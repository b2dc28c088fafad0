package main

import (
	"fmt"
	"io"
	"os"
)

// send runs "rudpcat send FILE ADDR".
func (c *cli) send(o *options, args []string) error {
	src, size, err := openInput(args[0], newInterruptible(c.ctx, c.stdin))
	if err != nil {
		return err
	}
	defer src.Close()
	conn, err := c.dialAddr(args[1], o)
	if err != nil {
		return err
	}
	defer closeAndWait(conn)
	defer abortOn(c.ctx, conn)()
	bar := newProgress(c.stderr, "send", showProgress(c.stderr, o))
	r, err := sendStream(conn, src, size, bar)
	bar.done()
	if err != nil {
		if c.ctx.Err() != nil {
			return fmt.Errorf("%w after sending %d bytes; the stream was reset", errInterrupted, r.bytes)
		}
		return err
	}
	c.report("sent", r, "confirmed by the receiver")
	return nil
}

// recv runs "rudpcat recv [-o FILE] ADDR". It creates the output file
// only once the socket is bound.
func (c *cli) recv(o *options, args []string) error {
	l, err := listenAddr(args[0], o)
	if err != nil {
		return err
	}
	dst, err := createOutput(o.output, c.stdout)
	if err != nil {
		_ = l.Close()
		return err
	}
	conn, err := c.accept(l, o)
	if err != nil {
		_ = dst.Close()
		return err
	}
	defer closeAndWait(conn)
	defer abortOn(c.ctx, conn)()
	bar := newProgress(c.stderr, "recv", showProgress(c.stderr, o))
	r, err := receive(conn, dst, bar)
	bar.done()
	if cerr := dst.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing %s: %w", o.output, cerr)
	}
	if err != nil {
		if c.ctx.Err() != nil {
			return fmt.Errorf("%w after receiving %d bytes; the stream was reset", errInterrupted, r.bytes)
		}
		return err // no confirmation: the sender fails too
	}
	if err := confirm(conn, r.sum); err != nil {
		return err
	}
	c.report("received", r, "sent back to the sender")
	return nil
}

// report prints a transfer's summary on stderr.
func (c *cli) report(verb string, r result, note string) {
	fmt.Fprintf(c.stderr, "rudpcat: %s %d bytes in %.3f s (%.2f MB/s), %d retransmits\n",
		verb, r.bytes, r.elapsed.Seconds(), r.mbps(), r.retransmits)
	fmt.Fprintf(c.stderr, "rudpcat: sha256 %x (%s)\n", r.sum, note)
}

// openInput opens the file to send, "-" meaning stdin, and returns its
// size, or -1 if unknown.
func openInput(name string, stdin io.Reader) (io.ReadCloser, int64, error) {
	if name == "-" {
		return io.NopCloser(stdin), -1, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return f, -1, nil
	}
	return f, fi.Size(), nil
}

// createOutput creates the file to receive into, "" or "-" meaning stdout.
func createOutput(name string, stdout io.Writer) (io.WriteCloser, error) {
	if name == "" || name == "-" {
		return nopWriteCloser{stdout}, nil
	}
	return os.Create(name)
}

// nopWriteCloser is a Writer whose Close does nothing.
type nopWriteCloser struct{ io.Writer }

// Close does nothing.
func (nopWriteCloser) Close() error { return nil }
