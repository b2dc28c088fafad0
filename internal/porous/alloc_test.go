package porous

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestSteadyStateAllocs moves bursts of reliable packets of one fragment
// on four channels from one session to another, the receiver recycling what it consumed
// (as a stream does): once the sessions have seen such a burst, sending,
// acknowledging and delivering allocate nothing, losses included (one
// exchange in eight loses its first datagram), which hold packets pending
// and reassembly buffers and receive pages out of order. The buffers come
// from the pools shared by the process (see packetPools), which no
// collection empties while nothing is allocated.
func TestSteadyStateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	const channels = 4 // each may hold a congestion window unsent
	now := epoch
	tx := newSession(t, now, Config{Nonce: nonceA, Channels: channels})
	rx := newSession(t, now, Config{Nonce: nonceB, Channels: channels})
	buf := make([]byte, MaxFrameSize)
	exchange := func(from, to *Session, lose bool) {
		for i := range 100_000 {
			n := from.Poll(now, buf)
			if n == 0 {
				return
			}
			if lose && i == 0 {
				continue
			}
			if err := to.HandleDatagram(now, buf[:n]); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatal("Poll keeps returning frames")
	}
	for range 10 {
		exchange(tx, rx, false)
		exchange(rx, tx, false)
	}
	require.Equal(t, engine.StateEstablished, tx.State())

	const burst = 3000
	msg := make([]byte, FragmentSize)
	var got, sent int
	var gotOn [channels]int // packets delivered on each channel
	run := func() {
		got, sent, gotOn = 0, 0, [channels]int{}
		for step := range 10_000 {
			if got == burst && tx.Pending() == 0 {
				return
			}
			for ; sent < burst && tx.SendRoom(uint8(sent%channels)) > 0; sent++ {
				msg[0] = byte(sent / channels)
				if err := tx.Send(msg, engine.SendOptions{Channel: uint8(sent % channels)}); err != nil {
					t.Fatalf("packet %d: %v", sent, err)
				}
			}
			now = now.Add(time.Millisecond)
			exchange(tx, rx, step%8 == 3)
			exchange(rx, tx, false)
			for {
				m, ok := rx.Recv()
				if !ok {
					break
				}
				if i := gotOn[m.Channel%channels]; len(m.Data) != FragmentSize || m.Data[0] != byte(i) {
					t.Fatalf("packet %d of channel %d: %d bytes starting %d", i, m.Channel, len(m.Data), m.Data[0])
				}
				gotOn[m.Channel%channels]++
				got++
				rx.Recycle(m.Data)
			}
		}
		t.Fatalf("%d of %d packets delivered, %d pending after 10,000 exchanges", got, burst, tx.Pending())
	}
	for range 50 { // to the high-water marks, such as the message lists of the transfer queue's slots
		run()
	}
	require.Zero(t, testing.AllocsPerRun(5, run))
}
