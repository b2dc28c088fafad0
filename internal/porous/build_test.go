package porous

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestSendBuffer: packets written in place with MessageBuffer and queued
// with SendBuffer arrive exactly, in order, over a lossy link whose
// resends recycle the packet buffers; a packet refused with
// ErrQueueFull stays in the buffer, which MessageBuffer returns again
// with its contents, and goes once it is taken.
func TestSendBuffer(t *testing.T) {
	const n = 400
	p := newPair(t, Config{MaxQueued: 8}, Config{}, 5*time.Millisecond, 0.2, 11)
	sent, got, refused := 0, 0, 0
	held := false // the next packet is in the buffer already
	// 1.7 s of virtual time when healthy.
	runWithin(p, 20*time.Second, 1_000_000, func() bool {
		for sent < n {
			want := testPacket(0, sent, FragmentSize)
			buf := p.A.MessageBuffer(FragmentSize)
			if held {
				require.Equal(t, want, buf[:len(want)], "packet %d kept in the buffer", sent)
			} else {
				copy(buf, want)
			}
			if err := p.A.SendBuffer(len(want), engine.SendOptions{}); err != nil {
				require.ErrorIs(t, err, engine.ErrQueueFull)
				held = true
				refused++
				break
			}
			held = false
			sent++
		}
		for _, m := range recvAll(p.B) {
			require.Equal(t, testPacket(0, got, FragmentSize), m.Data, "packet %d", got)
			got++
		}
		return got == n && p.A.Pending() == 0
	})
	require.NotZero(t, refused, "the queue filled")
	require.NotZero(t, p.A.Stats().Retransmits, "packets were resent")
}

// TestMessageBufferClass: a call for fewer bytes than a smaller class
// holds moves the buffer's first bytes to a buffer of that class, so that
// a small packet kept until acknowledged holds a small buffer; a call for
// more bytes keeps what the buffer held; the packet queued is the bytes
// written.
func TestMessageBufferClass(t *testing.T) {
	p := newPair(t, Config{}, Config{}, 5*time.Millisecond, 0, 1)
	s := p.A
	big := s.MessageBuffer(LargeFrameSize)
	require.Equal(t, classCap(LargeFrameSize), cap(big))
	want := make([]byte, 700)
	for i := range want {
		want[i] = byte(i * 7)
	}
	copy(big, want)
	small := s.MessageBuffer(len(want))
	require.Equal(t, FragmentSize, cap(small), "moved to a buffer of one fragment's class")
	require.Equal(t, want, small)
	grown := s.MessageBuffer(3 * FragmentSize)
	require.Equal(t, 4*FragmentSize, cap(grown))
	require.Equal(t, want, grown[:len(want)], "contents kept as the buffer grows")
	require.NoError(t, s.SendBuffer(len(want), engine.SendOptions{}))
	got := false
	runWithin(p, time.Second, 10_000, func() bool {
		for _, m := range recvAll(p.B) {
			require.Equal(t, want, m.Data)
			got = true
		}
		return got
	})
}
