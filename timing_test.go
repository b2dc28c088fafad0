package rudp

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// The tests here run whole rudp stacks on a virtual network in virtual
// time (see vpath), so they assert the exact instant a timer fires.

// requireTimeout checks that err is a net.Error timeout wrapping want.
func requireTimeout(t *testing.T, err, want error) {
	t.Helper()
	require.ErrorIs(t, err, want)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout())
}

// TestIdleTimeout: when the path is cut, each end fails with
// ErrIdleTimeout exactly IdleTimeout after the last datagram it received.
// Meanwhile each sends a probe at least every KeepAlive, here capped at
// IdleTimeout/3: probes exactly KeepAlive apart, the first at most
// KeepAlive after the last datagram received. (Avara has no keepalive
// and no idle timeout: docs/protocols/avara.md §3.5.)
func TestIdleTimeout(t *testing.T) {
	const idle, keepAlive = 1500 * time.Millisecond, 500 * time.Millisecond
	forEachKind(t, func(t *testing.T, p Protocol, k vkind, vp *vpath) {
		if p == Avara {
			return
		}
		cfg := vcfg(Config{Protocol: p, IdleTimeout: idle, KeepAlive: time.Minute, HandshakeTimeout: time.Minute})
		c, s := k.pair(t, vp, cfg)
		require.NoError(t, send(s, p, []byte("hello")))
		got, err := recv(c)
		require.NoError(t, err)
		require.Equal(t, "hello", got)
		time.Sleep(2 * idle) // idle, held by probes
		serverEnd := make(chan time.Time, 1)
		go func() {
			<-doneOf(s)
			serverEnd <- time.Now()
		}()
		vp.cutNow()

		within(t, 10*idle, func() { _, err = recv(c) })
		lastRx := vp.lastDelivered(false)
		require.Equal(t, idle, time.Since(lastRx), "the client's idle timeout after its last receive")
		requireTimeout(t, err, ErrIdleTimeout)
		requireTimeout(t, send(c, p, []byte("x")), ErrIdleTimeout)
		select {
		case at := <-serverEnd:
			require.Equal(t, idle, at.Sub(vp.lastDelivered(true)), "the server's idle timeout after its last receive")
		case <-time.After(10 * idle):
			t.Fatal("the server never timed out")
		}

		// Datagrams sent within lludpAckDelay (the streams' ack delay,
		// internal/lludp) of the last receive are acks of it, not probes.
		probes := vp.sentBetween(lastRx.Add(lludpAckDelay), lastRx.Add(idle), true)
		require.GreaterOrEqual(t, len(probes), 2, "probes %v", probes)
		require.LessOrEqual(t, probes[0], keepAlive+lludpAckDelay, "probes %v", probes)
		for i := 1; i < len(probes); i++ {
			require.Equal(t, keepAlive, probes[i]-probes[i-1], "probes %v", probes)
		}
	})
}

// TestKeepAliveCap: KeepAlive is capped at a third of IdleTimeout, and
// defaults below it.
func TestKeepAliveCap(t *testing.T) {
	for _, tc := range []struct{ idle, keepAlive, want time.Duration }{
		{0, 0, DefaultKeepAlive},
		{3 * time.Second, 0, time.Second},
		{3 * time.Second, 10 * time.Second, time.Second},
		{time.Minute, 2 * time.Second, 2 * time.Second},
	} {
		cfg, err := (&Config{IdleTimeout: tc.idle, KeepAlive: tc.keepAlive}).resolved()
		require.NoError(t, err)
		require.Equal(t, tc.want, cfg.KeepAlive, "IdleTimeout %v, KeepAlive %v", tc.idle, tc.keepAlive)
	}
}

// TestKeepAliveHoldsIdleConn: an idle but healthy conn, its KeepAlive
// left at the default (above IdleTimeout, so capped), outlives ten idle
// timeouts because keepalives are answered. (Avara has no keepalive: an
// idle conn needs none, it never times out.)
func TestKeepAliveHoldsIdleConn(t *testing.T) {
	const idle = 600 * time.Millisecond
	forEachKind(t, func(t *testing.T, p Protocol, k vkind, vp *vpath) {
		if p == Avara {
			return
		}
		cfg := vcfg(Config{Protocol: p, IdleTimeout: idle, HandshakeTimeout: time.Minute})
		c, s := k.pair(t, vp, cfg)
		time.Sleep(10 * idle)
		require.NoError(t, send(c, p, []byte("still here")))
		var got string
		var err error
		within(t, idle, func() { got, err = recv(s) })
		require.NoError(t, err)
		require.Equal(t, "still here", got)
	})
}

// TestHandshakeTimeout: a conn whose peer never answers fails its
// handshake with ErrHandshakeTimeout exactly HandshakeTimeout after it
// started, and ends.
func TestHandshakeTimeout(t *testing.T) {
	const timeout = 7 * time.Second
	forEachKind(t, func(t *testing.T, p Protocol, k vkind, vp *vpath) {
		cfg := vcfg(Config{Protocol: p, HandshakeTimeout: timeout})
		var c interface {
			Handshake(context.Context) error
			Done() <-chan struct{}
		}
		if k.name == "stream" {
			c = Client(vp.client, vp.server.LocalAddr(), cfg) // nothing serves vp.server
		} else {
			c = ClientMessages(vp.client, vp.server.LocalAddr(), cfg)
		}
		start := time.Now()
		var err error
		within(t, 10*timeout, func() { err = c.Handshake(context.Background()) })
		require.Equal(t, timeout, time.Since(start))
		requireTimeout(t, err, ErrHandshakeTimeout)
		select {
		case <-c.Done():
		default:
			t.Fatal("the conn failed its handshake and did not end")
		}
		require.Positive(t, len(vp.sentBetween(start.Add(-1), start.Add(timeout), true)), "the client tried")
		require.NoError(t, vp.server.Close())
	})
}

// TestListenerHandshakeTimeout: a listener's new peer that never
// completes its handshake (its answers are lost) is given up exactly
// HandshakeTimeout after its first datagram, freeing its backlog slot.
// (An LLUDP message listener has no handshake to wait for: the circuit is
// open at its first datagram. An Avara one waits for the client's
// acknowledgement of its TOC, at most 4 s.)
func TestListenerHandshakeTimeout(t *testing.T) {
	const timeout = 3100 * time.Millisecond // off the grid of the client's repeats
	forEachKind(t, func(t *testing.T, p Protocol, k vkind, vp *vpath) {
		if p == LLUDP && k.name == "message" {
			t.Skip("an LLUDP message listener has no handshake to time out: the circuit opens at its first datagram")
		}
		cfg := vcfg(Config{Protocol: p, HandshakeTimeout: time.Minute})
		lcfg := vcfg(Config{Protocol: p, HandshakeTimeout: timeout})
		vp.cutWay(false) // the client hears nothing
		var pending func() []any
		var c interface {
			Handshake(context.Context) error
			Close() error
			base() *connBase
		}
		var ln io.Closer
		if k.name == "stream" {
			l := Server(vp.server, lcfg)
			pending = func() []any { return pendingOf(l.listener.q) }
			c, ln = Client(vp.client, l.Addr(), cfg), l
		} else {
			l := ServerMessages(vp.server, lcfg)
			pending = func() []any { return pendingOf(l.listener.q) }
			c, ln = ClientMessages(vp.client, l.Addr(), cfg), l
		}
		t.Cleanup(func() {
			c.Close()
			c.base().a.abandon(errClosed)
			ln.Close()
			time.Sleep(timeout) // a half-open peer the client's last repeat opened ends too
		})
		go func() { _ = c.Handshake(context.Background()) }()
		time.Sleep(vpathDelay)
		synctest.Wait()
		arrived := vp.delivered(true)
		require.Len(t, arrived, 1)
		first := pending()
		require.Len(t, first, 1, "the new peer is half-open")
		time.Sleep(time.Until(arrived[0].Add(timeout)) - 1)
		synctest.Wait()
		require.Contains(t, pending(), first[0], "one nanosecond before its handshake timeout")
		time.Sleep(1)
		synctest.Wait()
		require.NotContains(t, pending(), first[0], "at its handshake timeout")
	})
}

// pendingOf returns a listener's half-open peers.
func pendingOf[T comparable](q *acceptQueue[T]) []any {
	q.mu.Lock()
	defer q.mu.Unlock()
	var ps []any
	for _, c := range q.pending {
		ps = append(ps, c)
	}
	return ps
}

// TestStreamToMessageListener: a stream dialed at a message listener never
// gets the stream handshake: it fails with ErrIncompatible once the
// listener answers the opening it finds in the stream's first datagram
// (LLUDP and Wirefox message listeners do, a round trip after the dial,
// LLUDP's answer after its 2 ms ack delay), else with
// ErrHandshakeTimeout.
func TestStreamToMessageListener(t *testing.T) {
	answered := map[Protocol]time.Duration{LLUDP: 2*vpathDelay + 2*time.Millisecond, Wirefox: 2 * vpathDelay}
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				vp := newVPath(t, 0)
				cfg := vcfg(Config{Protocol: p, HandshakeTimeout: 2 * time.Second})
				ln := ServerMessages(vp.server, cfg)
				defer ln.Close()
				c := Client(vp.client, ln.Addr(), cfg)
				defer c.Close()
				start := time.Now()
				var err error
				within(t, time.Minute, func() { err = c.Handshake(context.Background()) })
				if d, ok := answered[p]; ok {
					require.Equal(t, d, time.Since(start))
					require.ErrorIs(t, err, ErrIncompatible)
					require.ErrorContains(t, err, "accepts "+p.String()+" message conns (ListenMessages), not streams")
					return
				}
				require.Equal(t, cfg.HandshakeTimeout, time.Since(start))
				requireTimeout(t, err, ErrHandshakeTimeout)
			})
		})
	}
}

// TestLinger: a stream closed while its peer reads nothing (so its window
// stays shut and the written bytes cannot all leave) ends exactly Linger
// after Close, with ErrLingerTimeout, and resets the peer; with
// SetLinger(3), exactly 3 s after Close, whatever Config.Linger.
func TestLinger(t *testing.T) {
	for _, setLinger := range []int{-1, 3} {
		for _, p := range Protocols() {
			name := p.String()
			if setLinger >= 0 {
				name += "/SetLinger"
			}
			t.Run(name, func(t *testing.T) { testLinger(t, p, setLinger) })
		}
	}
}

func testLinger(t *testing.T, p Protocol, setLinger int) {
	linger := 4 * time.Second
	synctest.Test(t, func(t *testing.T) {
		vp := newVPath(t, 0)
		cfg := vcfg(Config{Protocol: p, RecvWindow: 64 << 10, SendBuffer: 64 << 10, Linger: linger,
			IdleTimeout: time.Minute, HandshakeTimeout: time.Minute})
		c, s, _ := vp.streams(t, cfg)
		if setLinger >= 0 {
			require.NoError(t, c.SetLinger(setLinger))
			linger = time.Duration(setLinger) * time.Second
		}
		var err error
		within(t, time.Second, func() { _, err = c.Write(make([]byte, 100<<10)) })
		require.NoError(t, err)
		start := time.Now()
		require.NoError(t, c.Close())
		within(t, 10*linger, func() { <-c.Done() })
		require.Equal(t, linger, time.Since(start))
		c.a.mu.Lock()
		require.ErrorIs(t, c.err, ErrLingerTimeout)
		c.a.mu.Unlock()

		time.Sleep(vpathDelay) // the reset reaches the peer
		synctest.Wait()
		require.ErrorIs(t, send(s, p, []byte("x")), ErrReset)
	})
}

// TestLingerMessages: a message conn closed with messages its peer never
// confirms (the path is cut) ends exactly Linger after Close, with
// ErrLingerTimeout. (Wirefox would give up earlier, after its 6 sends,
// with ErrRetransmitLimit: its limit is lifted here.)
func TestLingerMessages(t *testing.T) {
	const linger = 4 * time.Second
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				vp := newVPath(t, 0)
				cfg := vcfg(Config{Protocol: p, Linger: linger, IdleTimeout: time.Minute, HandshakeTimeout: time.Minute})
				if p == Wirefox {
					cfg.ResendLimit = -1
				}
				c, _, _ := vp.messages(t, cfg)
				vp.cutNow()
				require.NoError(t, send(c, p, []byte("lost")))
				start := time.Now()
				require.NoError(t, c.Close())
				within(t, 10*linger, func() { <-c.Done() })
				require.Equal(t, linger, time.Since(start))
				c.a.mu.Lock()
				require.ErrorIs(t, c.a.eng.Err(), ErrLingerTimeout)
				c.a.mu.Unlock()
			})
		})
	}
}

// TestDeadlines: a read deadline ends a blocked Read exactly when it
// passes, with os.ErrDeadlineExceeded in a *net.OpError, and leaves
// Write alone; a write deadline ends a blocked Write exactly when it
// passes and leaves Read alone; and the conn works on afterwards.
func TestDeadlines(t *testing.T) {
	const d = 50 * time.Millisecond
	forEachKind(t, func(t *testing.T, p Protocol, k vkind, vp *vpath) {
		cfg := vcfg(Config{Protocol: p, RecvWindow: 16 << 10, SendBuffer: 16 << 10,
			IdleTimeout: time.Minute, HandshakeTimeout: time.Minute})
		c, s := k.pair(t, vp, cfg)

		// Read: its own deadline, exactly.
		start := time.Now()
		require.NoError(t, c.SetReadDeadline(start.Add(d)))
		var err error
		within(t, time.Second, func() { _, err = recv(c) })
		require.Equal(t, d, time.Since(start))
		requireTimeout(t, err, os.ErrDeadlineExceeded)
		var oe *net.OpError
		require.ErrorAs(t, err, &oe)
		require.Equal(t, "read", oe.Op)
		// A read deadline in the past fails Read at once, and not Write.
		require.NoError(t, send(c, p, []byte("up")))
		var got string
		within(t, time.Second, func() { got, err = recv(s) })
		require.NoError(t, err)
		require.Equal(t, "up", got)

		// Read waits past a write deadline for its data.
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		require.NoError(t, c.SetWriteDeadline(time.Now().Add(-time.Second)))
		go func() {
			time.Sleep(2 * d)
			_ = send(s, p, []byte("down"))
		}()
		start = time.Now()
		within(t, time.Second, func() { got, err = recv(c) })
		require.NoError(t, err)
		require.Equal(t, "down", got)
		require.Equal(t, 2*d+vpathDelay, time.Since(start))
		requireTimeout(t, send(c, p, []byte("late")), os.ErrDeadlineExceeded)

		// Write: blocked (the peer confirms nothing), ends exactly at its
		// own deadline, not at the read deadline.
		vp.cutNow()
		start = time.Now()
		require.NoError(t, c.SetReadDeadline(start.Add(-time.Second)))
		require.NoError(t, c.SetWriteDeadline(start.Add(d)))
		msg := make([]byte, 200)
		msg[0] = 15 // a Wirefox user command
		within(t, time.Second, func() {
			for range 100_000 {
				if err = send(c, p, msg); err != nil {
					return
				}
			}
		})
		require.Equal(t, d, time.Since(start))
		requireTimeout(t, err, os.ErrDeadlineExceeded)
		require.ErrorAs(t, err, &oe)
		require.Equal(t, "write", oe.Op)
	})
}

// TestDeadlineSetDuringRead: a Read blocked on a conn whose deadlines
// were never set (it holds none) ends exactly when a read deadline set
// meanwhile passes; so does one whose deadline was cleared (and dropped)
// while it waited, then set again.
func TestDeadlineSetDuringRead(t *testing.T) {
	const d = 50 * time.Millisecond
	forEachKind(t, func(t *testing.T, p Protocol, k vkind, vp *vpath) {
		cfg := vcfg(Config{Protocol: p, IdleTimeout: time.Minute, HandshakeTimeout: time.Minute})
		c, _ := k.pair(t, vp, cfg)
		for _, set := range []bool{false, true} {
			start := time.Now()
			if set {
				require.NoError(t, c.SetReadDeadline(start.Add(d/2)))
			}
			go func() {
				if set {
					time.Sleep(d / 4)
					_ = c.SetReadDeadline(time.Time{})
				}
				time.Sleep(d)
				_ = c.SetReadDeadline(time.Now().Add(d))
			}()
			var err error
			within(t, time.Second, func() { _, err = recv(c) })
			want := 2 * d
			if set {
				want += d / 4
			}
			require.Equal(t, want, time.Since(start), "deadline set before: %v", set)
			requireTimeout(t, err, os.ErrDeadlineExceeded)
			require.NoError(t, c.SetReadDeadline(time.Time{}))
		}
	})
}

// TestConnHoldsOnlyWhatIsAsked: a conn holds a deadline only while one
// is set (a zero deadline drops it), and no Done channel until Done is
// called (idle streams keep their conns); Done asked after the end is
// closed at once, Done asked before is closed at the end.
func TestConnHoldsOnlyWhatIsAsked(t *testing.T) {
	cfg, err := (&Config{}).resolved()
	require.NoError(t, err)
	raddr := &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1}
	allocs := testing.AllocsPerRun(100, func() {
		c := newConn(cfg, raddr, nil)
		_ = c.SetDeadline(time.Time{})
	})
	require.Equal(t, 1.0, allocs, "the conn")
	c := newConn(cfg, raddr, nil)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Hour)))
	require.NotNil(t, c.rd.p.Load())
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	require.Nil(t, c.rd.p.Load(), "a cleared deadline is dropped")

	for _, early := range []bool{false, true} {
		c := Client(udpSocket(t, nil, 0), raddr, cfg)
		var done <-chan struct{}
		if early {
			done = c.Done()
			select {
			case <-done:
				t.Fatal("Done closed before Close")
			default:
			}
		}
		require.NoError(t, c.Close()) // never used: ends at once
		if !early {
			done = c.Done()
		}
		select {
		case <-done:
		default:
			t.Fatalf("Done (asked early: %v) not closed after Close", early)
		}
	}
}

// TestHandshakeTimeoutText: the handshake-timeout error says what was
// tried, with whom, for how long, and why a peer may stay silent.
func TestHandshakeTimeoutText(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func(vp *vpath) interface{ Handshake(context.Context) error }
		want string
	}{
		{"stream", func(vp *vpath) interface{ Handshake(context.Context) error } {
			return Client(vp.client, vp.server.LocalAddr(), vcfg(Config{Protocol: Airhook, HandshakeTimeout: 300 * time.Millisecond}))
		}, ": handshake timeout: no airhook stream handshake with %s completed within 300ms; the peer may not be listening," +
			" or may speak another protocol, or accept message conns (ListenMessages)"},
		{"message", func(vp *vpath) interface{ Handshake(context.Context) error } {
			return ClientMessages(vp.client, vp.server.LocalAddr(), vcfg(Config{Protocol: POROUS, Channels: 2, HandshakeTimeout: 300 * time.Millisecond}))
		}, ": handshake timeout: no porous message conn handshake (Config.Channels 2) with %s completed within 300ms;" +
			" the peer may not be listening, or may speak another protocol, another channel count, or accept streams (Listen)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				vp := newVPath(t, 0)
				defer vp.server.Close()
				var err error
				within(t, time.Minute, func() { err = tc.dial(vp).Handshake(context.Background()) })
				requireTimeout(t, err, ErrHandshakeTimeout)
				require.ErrorContains(t, err, fmt.Sprintf(tc.want, vp.server.LocalAddr()))
			})
		})
	}
}

// TestStreamCloseBothEnds: a stream whose writer closes, and whose reader
// closes on io.EOF, as rudpcat's send and recv do, has both ends done
// within a few round trips (10 ms each here) plus the TIME-WAIT that
// POROUS and Airhook keep (max(2 RTO, 1 s)), on every protocol: never at
// Linger (10 s). Wirefox's closes cross, and each answers the other's.
func TestStreamCloseBothEnds(t *testing.T) {
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				vp := newVPath(t, 0)
				c, s, _ := vp.streams(t, vcfg(Config{Protocol: p, IdleTimeout: time.Minute, HandshakeTimeout: time.Minute}))
				within(t, time.Second, func() {
					_, err := c.Write([]byte("last words"))
					require.NoError(t, err)
				})
				start := time.Now()
				require.NoError(t, c.Close())
				within(t, time.Second, func() {
					got, err := io.ReadAll(s)
					require.NoError(t, err)
					require.Equal(t, "last words", string(got))
				})
				require.NoError(t, s.Close())
				within(t, time.Minute, func() {
					<-c.Done()
					<-s.Done()
				})
				took := time.Since(start)
				require.Less(t, took, 1500*time.Millisecond, "both ends done after %v", took)
				c.a.mu.Lock()
				require.NoError(t, c.err)
				c.a.mu.Unlock()
			})
		})
	}
}
