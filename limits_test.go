package rudp

import (
	"bytes"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLimitsShareBudgets: with few busy streams a stream's limits are its
// own (four congestion windows, at least 64 KiB; its receive window,
// which the budget does not cap below 16 MiB); beyond 16 busy streams the
// budgets bind, and the shares stop at minLimit. Every limit is a power
// of two.
func TestLimitsShareBudgets(t *testing.T) {
	for _, c := range []struct{ cwnd, busy, send, recv int }{
		{100_000, 0, 256 << 10, 16 << 20},
		{100_000, 1, 256 << 10, 16 << 20},
		{1_000, 1, 64 << 10, 16 << 20},
		{1_000, 256, 64 << 10, 64 << 10},
		{1_000, 257, 32 << 10, 32 << 10},
		{1 << 20, 16, 1 << 20, 1 << 20},
		{1 << 20, 17, 512 << 10, 512 << 10},
		{100_000, 1000, 16 << 10, 16 << 10},
		{100_000, 10_000, 16 << 10, 16 << 10},
	} {
		require.Equal(t, c.send, sendLimit(c.cwnd, c.busy), "send limit, cwnd %d, %d busy", c.cwnd, c.busy)
		require.Equal(t, c.recv, recvLimit(c.busy), "receive limit, %d busy", c.busy)
	}
}

// TestBusyStreams: a stream counts among the busy ones once it has
// written or received, until it ends, and the limits are set before its
// first Write, so that a fresh stream does not take a whole
// Config.SendBuffer at once.
func TestBusyStreams(t *testing.T) {
	c, s, _ := streamPair(t, nil, links[0])
	busy := func(x *Conn) bool {
		x.a.mu.Lock()
		defer x.a.mu.Unlock()
		return x.busy
	}
	c.a.mu.Lock()
	writable := c.st.Writable()
	c.a.mu.Unlock()
	require.Less(t, writable, DefaultSendBuffer, "held to the send limit before the first Write")

	msg := bytes.Repeat([]byte{1}, 1000)
	_, err := c.Write(msg)
	require.NoError(t, err)
	got := make([]byte, len(msg))
	_, err = s.Read(got)
	require.NoError(t, err)
	require.True(t, busy(c), "wrote")
	require.True(t, busy(s), "received")
	require.NoError(t, c.Close())
	require.NoError(t, s.Close())
	require.Eventually(t, func() bool { return !busy(c) && !busy(s) }, ioBound, time.Millisecond, "ended")
}

// TestBusyStreamRests: a stream that moved bytes and then none stops
// counting as busy, and frees its buffers, trimAfter after its last byte,
// on a timer of its own: not at its next keepalive (DefaultKeepAlive,
// 20 s), which an idle stream would otherwise wait for while it held
// its buffers and a share of the budgets. Virtual time (see vpath).
func TestBusyStreamRests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s, _ := newVPath(t, 0).streams(t, vcfg(Config{Protocol: POROUS}))
		busy := func(x *Conn) bool {
			x.a.mu.Lock()
			defer x.a.mu.Unlock()
			return x.busy
		}
		msg := bytes.Repeat([]byte{7}, 64<<10)
		errc := make(chan error, 1)
		go func() { _, err := c.Write(msg); errc <- err }()
		got := make([]byte, len(msg))
		_, err := io.ReadFull(s, got)
		require.NoError(t, err)
		require.NoError(t, <-errc)
		require.Equal(t, msg, got)
		require.Equal(t, []bool{true, true}, []bool{busy(c), busy(s)})
		time.Sleep(trimAfter - 10*time.Millisecond)
		synctest.Wait()
		require.True(t, busy(s), "the reader is busy within trimAfter of the last byte it received")
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		require.False(t, busy(c), "the writer rested trimAfter after its last byte")
		require.False(t, busy(s), "the reader rested trimAfter after its last byte")
	})
}
