package rudp

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// vnetTransfer sends size bytes over a rudp stream between two hosts of a
// pion virtual network whose NICs drop lossPercent of the datagrams they
// receive (seeded), inside a synctest bubble: time is virtual, so the
// timers of a long lossy transfer take no real time. It returns the
// virtual time the transfer took and both ends' stats when the last byte
// was read; the close that follows must complete on both ends.
func vnetTransfer(t *testing.T, p Protocol, lossPercent int, size int) (elapsed time.Duration, cs, ss Stats) {
	synctest.Test(t, func(t *testing.T) {
		vp := newVPath(t, lossPercent)
		spc, cpc := vp.server, vp.client
		cfg := &Config{Protocol: p, IdleTimeout: time.Minute, HandshakeTimeout: time.Minute, Linger: time.Minute,
			Rand: rand.NewChaCha8([32]byte{byte(lossPercent)})} // session IDs and nonces too are seeded
		ln := Server(spc, cfg)
		c := Client(cpc, spc.LocalAddr(), cfg)
		data := randomBytes(size, 8)
		start := time.Now()
		go func() {
			_, _ = c.Write(data)
			_ = c.Close()
		}()
		s, err := ln.Accept()
		require.NoError(t, err)
		got, err := io.ReadAll(s)
		require.NoError(t, err)
		require.True(t, bytes.Equal(data, got), "sha256 %x, want %x", sha256.Sum256(got), sha256.Sum256(data))
		elapsed = time.Since(start)
		synctest.Wait() // everything due at this instant is done
		cs, ss = c.Stats(), s.(*Conn).Stats()
		require.NoError(t, s.Close())
		require.NoError(t, ln.Close())
		<-c.Done()
		<-s.(*Conn).Done()
	})
	return elapsed, cs, ss
}

// TestVNetLossyTransfer runs whole rudp streams, sockets to streams, over
// a virtual network losing up to 50% of the datagrams in each direction,
// in virtual time, for every protocol: every byte arrives, in order, and
// both ends close gracefully.
func TestVNetLossyTransfer(t *testing.T) {
	for _, p := range Protocols() {
		for _, loss := range []int{0, 20, 50} {
			elapsed, cs, ss := vnetTransfer(t, p, loss, 256<<10)
			t.Logf("%s, loss %d%%: %v virtual; client sent %d datagrams, %d retransmits; server sent %d",
				p, loss, elapsed, cs.PacketsSent, cs.Retransmits, ss.PacketsSent)
			if loss > 0 {
				require.Positive(t, cs.Retransmits)
			} else {
				require.Zero(t, cs.Retransmits)
			}
		}
	}
}

// TestVNetDeterministic: with seeded loss and virtual time, the whole stack
// behaves the same on every run: same duration, same counters. Only
// Airhook is held to it. Events that fall on the same virtual instant (a
// datagram, a timer, the writer waking) are handled in an order the
// scheduler picks; POROUS (whose timers fall on the links' 5 ms grid)
// then differs in duration under loss, and LLUDP now and then by one
// keepalive answer counted before or after the end of the transfer.
func TestVNetDeterministic(t *testing.T) {
	e1, c1, s1 := vnetTransfer(t, Airhook, 50, 128<<10)
	e2, c2, s2 := vnetTransfer(t, Airhook, 50, 128<<10)
	require.Equal(t, e1, e2)
	require.Equal(t, c1, c2)
	require.Equal(t, s1, s2)
}
