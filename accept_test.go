package rudp

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAcceptQueueNeverBlocks: peers becoming ready while nobody calls
// Accept never block the listener (its queue's wake-up holds one signal):
// Stats and further handshakes go on, and Accept then returns every peer
// in the order it became ready.
func TestAcceptQueueNeverBlocks(t *testing.T) {
	ln := Server(udpSocket(t, nil, 0), &Config{Backlog: 4})
	t.Cleanup(func() { go ln.Close() }) // not waited for: it would block behind a stuck queue
	var clients []*Conn
	for i := range 3 {
		c := Client(udpSocket(t, nil, 0), ln.Addr(), nil)
		t.Cleanup(func() { c.Close() })
		within(t, 10*time.Second, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			assert.NoError(t, c.Handshake(ctx))
		})
		require.False(t, t.Failed())
		clients = append(clients, c)
		within(t, 10*time.Second, func() {
			assert.Eventually(t, func() bool {
				ln.listener.q.mu.Lock()
				defer ln.listener.q.mu.Unlock()
				return len(ln.listener.q.queue) == i+1
			}, 10*time.Second, time.Millisecond)
		})
		require.False(t, t.Failed())
	}
	within(t, 10*time.Second, func() { assert.Zero(t, ln.Stats().BacklogDrops) })
	for _, c := range clients {
		var s net.Conn
		within(t, 10*time.Second, func() {
			var err error
			s, err = ln.Accept()
			assert.NoError(t, err)
		})
		require.False(t, t.Failed())
		require.Equal(t, c.LocalAddr().String(), s.RemoteAddr().String())
		s.Close()
	}
}

// TestListenerStats: datagrams that reach no conn are counted: garbage
// from a stranger, and new peers beyond the backlog.
func TestListenerStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vp := newVPath(t, 0)
		ln := Server(vp.server, &Config{Backlog: 1})
		t.Cleanup(func() {
			ln.Close()                          // resets the unaccepted conn
			time.Sleep(DefaultHandshakeTimeout) // half-open peers end
		})
		junk := vp.socket(t, 4001)
		_, err := junk.WriteTo([]byte{0x00, 0x01, 0x00, 0x02}, ln.Addr()) // a POROUS Connect cut short
		require.NoError(t, err)
		time.Sleep(vpathDelay)
		synctest.Wait()
		require.Equal(t, uint64(1), ln.Stats().UnknownDrops)

		first := Client(vp.client, ln.Addr(), vcfg(Config{}))
		t.Cleanup(func() {
			first.Close()
			first.a.abandon(errClosed)
		})
		require.NoError(t, first.Handshake(context.Background()))
		// Once the listener has the first conn's ECHO, it waits for Accept
		// and fills the backlog; it is never accepted.
		time.Sleep(vpathDelay)
		synctest.Wait()
		ln.listener.q.mu.Lock()
		require.Len(t, ln.listener.q.queue, 1)
		ln.listener.q.mu.Unlock()
		second := Client(vp.socket(t, 4002), ln.Addr(), vcfg(Config{HandshakeTimeout: 300 * time.Millisecond}))
		start := time.Now()
		requireTimeout(t, second.Handshake(context.Background()), ErrHandshakeTimeout)
		require.Equal(t, 300*time.Millisecond, time.Since(start))
		st := ln.Stats()
		require.Positive(t, st.BacklogDrops)
		require.Zero(t, st.Evicted, "a conn waiting for Accept is never evicted")
		require.Zero(t, st.Oversize)
		require.Zero(t, first.Stats().SendErrors)
	})
}

// TestHalfOpenEvicted: with the backlog full of a peer that opened and
// never answered (a spoofed address), a new peer evicts it and is
// accepted; the silent peer got at most three times the bytes it sent.
func TestHalfOpenEvicted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vp := newVPath(t, 0)
		ln := Server(vp.server, &Config{Backlog: 1})
		t.Cleanup(func() {
			ln.Close()
			time.Sleep(DefaultHandshakeTimeout) // half-open peers end
		})
		silent := vp.socket(t, 4001)
		connect := seal([]byte{0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04}) // POROUS Connect, version 0, 1 channel, sealed as streams' datagrams are
		_, err := silent.WriteTo(connect, ln.Addr())
		require.NoError(t, err)
		got := 0
		require.NoError(t, silent.SetReadDeadline(time.Now().Add(time.Second)))
		buf := make([]byte, 2048)
		for range 100 {
			n, _, err := silent.ReadFrom(buf)
			if err != nil {
				var ne net.Error
				require.ErrorAs(t, err, &ne)
				require.True(t, ne.Timeout())
				break
			}
			got += n
		}
		require.Positive(t, got, "the listener answered the opening")
		require.LessOrEqual(t, got, 3*len(connect), "at most three times what it sent, in a second of Connect repeats")

		c := Client(vp.client, ln.Addr(), vcfg(Config{}))
		require.NoError(t, c.Handshake(context.Background()))
		s, err := ln.Accept()
		require.NoError(t, err)
		t.Cleanup(func() {
			for _, x := range []*Conn{c, s.(*Conn)} {
				x.Close()
				x.a.abandon(errClosed)
			}
		})
		require.Equal(t, uint64(1), ln.Stats().Evicted)
	})
}

// TestAdmitEvictsOnlyUnderFlood: a full backlog held mostly by peers
// waiting for Accept (a slow accept loop during a burst of legitimate
// dials) drops a new opening, which its sender repeats, rather than evict
// a half-open peer whose dialer may already count its handshake done;
// one held mostly by half-open peers (a flood of openings that never
// complete) evicts the oldest of them.
func TestAdmitEvictsOnlyUnderFlood(t *testing.T) {
	peers := func(n int) []*Conn {
		cs := make([]*Conn, n)
		for i := range cs {
			cs[i] = new(Conn)
		}
		return cs
	}
	q := newAcceptQueue[*Conn](nil, 8)
	q.queue, q.pending = peers(4), peers(4)
	_, evict, ok := q.admit()
	require.False(t, ok, "half the backlog half-open: the opening is dropped")
	require.False(t, evict)
	require.Equal(t, uint64(1), q.drops)
	require.Len(t, q.pending, 4)

	q.queue, q.pending = peers(3), peers(5)
	oldest := q.pending[0]
	victim, evict, ok := q.admit()
	require.True(t, ok)
	require.True(t, evict, "more than half half-open: the oldest is evicted")
	require.Same(t, oldest, victim)
	require.Equal(t, uint64(1), q.evicted)
	require.Len(t, q.pending, 4)
}
