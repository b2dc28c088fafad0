package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/rudpkit/rudp"
)

// A transfer is one stream from a sender to a receiver, framed as the
// package doc describes: a header announcing the size, the data, and back
// the receiver's SHA-256 of the data.

// headerMagic starts a transfer header; the data's size follows it.
const headerMagic = "\x00rudpcat"

// headerLen is the length of a transfer header.
const headerLen = len(headerMagic) + 8

// appendHeader appends the transfer header announcing size bytes (-1:
// unknown) to b.
func appendHeader(b []byte, size int64) []byte {
	u := uint64(math.MaxUint64)
	if size >= 0 {
		u = uint64(size)
	}
	return binary.BigEndian.AppendUint64(append(b, headerMagic...), u)
}

// readHeader reads a transfer header from r and returns the size it
// announces, -1 if unknown. A stream that does not start with the header
// is data from its first byte: readHeader then stops reading at the first
// Read that shows it and returns the bytes read, which are data, and size
// -1. A size too large for an int64 is taken as unknown.
func readHeader(r io.Reader) (size int64, data []byte, err error) {
	var h [headerLen]byte
	n := 0
	for n < headerLen {
		m, err := r.Read(h[n:])
		n += m
		k := min(n, len(headerMagic))
		switch {
		case err != nil && err != io.EOF:
			return -1, h[:n], err
		case string(h[:k]) != headerMagic[:k] || err == io.EOF:
			return -1, h[:n], nil
		}
	}
	u := binary.BigEndian.Uint64(h[len(headerMagic):])
	if u > math.MaxInt64 {
		return -1, nil, nil
	}
	return int64(u), nil, nil
}

// copyBuffer is the size of the buffer data is copied through.
const copyBuffer = 256 << 10

// result is one side's account of a transfer.
type result struct {
	bytes       int64
	elapsed     time.Duration
	sum         [sha256.Size]byte
	retransmits uint64 // messages the side's conn sent again
}

// mbps returns the throughput in megabytes (10^6 bytes) per second.
func (r result) mbps() float64 {
	return float64(r.bytes) / 1e6 / r.elapsed.Seconds()
}

// sendStream sends the header announcing size bytes (-1: unknown) and
// all of src over conn, reporting progress to progress, half-closes conn,
// and waits for the receiver's digest and end of stream. It fails if the
// digest differs from the SHA-256 of what it sent. The elapsed time runs
// until the digest arrived.
func sendStream(conn *rudp.Conn, src io.Reader, size int64, progress *progressBar) (result, error) {
	var r result
	start := time.Now()
	if _, err := conn.Write(appendHeader(nil, size)); err != nil {
		return r, fmt.Errorf("sending: %w", err)
	}
	progress.start(size)
	h := sha256.New()
	n, err := io.CopyBuffer(conn, io.TeeReader(src, io.MultiWriter(h, progress)), make([]byte, copyBuffer))
	r.bytes = n
	if err != nil {
		return r, fmt.Errorf("sending: %w", err)
	}
	if err := conn.CloseWrite(); err != nil {
		return r, err
	}
	var peer [sha256.Size]byte
	if _, err := io.ReadFull(conn, peer[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return r, errors.New("the receiver closed without confirming the SHA-256")
		}
		return r, fmt.Errorf("waiting for the receiver's SHA-256: %w", err)
	}
	r.elapsed = time.Since(start)
	h.Sum(r.sum[:0])
	extra, err := io.Copy(io.Discard, conn)
	if err != nil {
		return r, fmt.Errorf("waiting for the receiver to close: %w", err)
	}
	r.retransmits = conn.Stats().Retransmits
	switch {
	case extra > 0:
		return r, fmt.Errorf("the receiver sent %d unexpected bytes after its SHA-256", extra)
	case peer != r.sum:
		return r, fmt.Errorf("SHA-256 mismatch: sent %x, receiver got %x", r.sum, peer)
	}
	return r, nil
}

// receive reads the header from conn, starts progress with the size it
// announces, and copies the data to dst until the sender half-closes,
// reporting progress to progress. It returns the SHA-256 of the data; the
// caller then confirms it.
func receive(conn *rudp.Conn, dst io.Writer, progress *progressBar) (result, error) {
	var r result
	start := time.Now()
	size, head, err := readHeader(conn)
	progress.start(size)
	h := sha256.New()
	w := io.MultiWriter(dst, h, progress)
	n, werr := w.Write(head)
	r.bytes = int64(n)
	if err = cmp.Or(err, werr); err == nil {
		var m int64
		m, err = io.CopyBuffer(w, conn, make([]byte, copyBuffer))
		r.bytes += m
	}
	r.elapsed = time.Since(start)
	r.retransmits = conn.Stats().Retransmits
	if err != nil {
		return r, fmt.Errorf("receiving: %w", err)
	}
	h.Sum(r.sum[:0])
	return r, nil
}

// confirm sends the receiver's digest back to the sender.
func confirm(conn *rudp.Conn, sum [sha256.Size]byte) error {
	if _, err := conn.Write(sum[:]); err != nil {
		return fmt.Errorf("confirming the SHA-256: %w", err)
	}
	return nil
}
