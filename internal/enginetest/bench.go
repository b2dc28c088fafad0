package enginetest

import (
	"bytes"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
)

// maxSteps bounds the exchanges a benchmark waits for one message to be
// taken or for the last ones to arrive, so that a stuck engine fails the
// benchmark instead of hanging it.
const maxSteps = 1_000_000

// BenchmarkTransfer measures the delivery of reliable copies of msg from
// tx to rx: each op Sends one copy (exchanging while the send queue is
// full), and after the loop the timer runs until rx has delivered every
// copy, whole, so the figure is bytes delivered, not bytes queued.
// exchange advances the virtual clock by one step and moves every
// datagram due, both ways.
func BenchmarkTransfer(b *testing.B, tx, rx engine.Engine, msg []byte, opts engine.SendOptions, exchange func()) {
	var sent, got int
	step := func() {
		exchange()
		for {
			m, ok := rx.Recv()
			if !ok {
				return
			}
			if !bytes.Equal(m.Data, msg) {
				b.Fatalf("message %d: %d bytes differ from the %d sent", got, len(m.Data), len(msg))
			}
			got++
		}
	}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; tx.Send(msg, opts) != nil; i++ {
			if i == maxSteps {
				b.Fatalf("message %d not taken after %d exchanges", sent, maxSteps)
			}
			step()
		}
		sent++
	}
	b.StartTimer() // b.Loop stopped it: the delivery belongs to the transfer
	for i := 0; got < sent; i++ {
		if i == maxSteps {
			b.Fatalf("%d of %d messages delivered after %d exchanges", got, sent, maxSteps)
		}
		step()
	}
	b.StopTimer()
	if got != sent {
		b.Fatalf("%d messages delivered, %d sent", got, sent)
	}
}
