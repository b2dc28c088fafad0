package main

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rudpkit/rudp"
)

// A transfer is one stream of bytes from a sender to a receiver: the
// sender writes the data and half-closes; the receiver reads to EOF,
// writes back the SHA-256 of what it read (32 bytes) and closes; the
// sender compares it with its own.

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

// sendStream sends all of src over conn, reporting progress to progress,
// half-closes conn, and waits for the receiver's digest and end of stream.
// It fails if the digest differs from the SHA-256 of what it sent. The
// elapsed time runs until the digest arrived.
func sendStream(conn *rudp.Conn, src io.Reader, progress io.Writer) (result, error) {
	var r result
	start := time.Now()
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

// receive copies conn to dst until the sender half-closes, reporting
// progress to progress, and returns the SHA-256 of what it read. The
// caller then confirms it.
func receive(conn *rudp.Conn, dst, progress io.Writer) (result, error) {
	var r result
	start := time.Now()
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(dst, h, progress), conn, make([]byte, copyBuffer))
	r.bytes = n
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
