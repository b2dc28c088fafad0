package rudp

import (
	"context"
	"fmt"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rudpkit/rudp/internal/airhook"
	"github.com/rudpkit/rudp/internal/avara"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/lludp"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/rudpkit/rudp/internal/wirefox"
	"github.com/stretchr/testify/require"
)

// TestMessageEchoFullQueue: an echo server that reads and then writes in
// one goroutine (the README's) echoes 10,000 messages to a client that
// writes and reads at once, both with a receive buffer of 16 short messages, far
// below the 1024 messages a sender may have pending. The server's queue
// fills while it waits in WriteMessage for the acknowledgements that free
// its pending messages: they, and the peer's pings, must still be taken
// while new messages are refused. Avara echoes 1,000: a refused message
// is sent again after the reference's resend time, 2 s until game frames
// have taught it the round trip.
func TestMessageEchoFullQueue(t *testing.T) {
	t.Parallel() // waits on the peers' resend timers, seconds long
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()
			cfg := &Config{Protocol: p, MaxRecvBuffer: 16 * (RecvMessageOverhead + 8)}
			ln := ServerMessages(udpSocket(t, nil, 0), cfg)
			c := ClientMessages(udpSocket(t, nil, 0), ln.Addr(), cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, c.Handshake(ctx))
			s, err := ln.AcceptMessages()
			require.NoError(t, err)
			t.Cleanup(func() {
				c.Close()
				s.Close()
				ln.Close()
			})
			count := 10000
			if p == Avara {
				count = 1000
			}
			// A hang fails at the deadline rather than blocking the run.
			dl := time.Now().Add(2 * time.Minute)
			require.NoError(t, c.SetDeadline(dl))
			require.NoError(t, s.SetDeadline(dl))
			go func() { // the echo server of the README
				for {
					m, err := s.ReadMessage()
					if err != nil {
						return
					}
					if err := s.WriteMessage(Message{Data: m.Data, Number: m.Number}); err != nil {
						return
					}
				}
			}()
			msg := func(i int) []byte { return []byte(fmt.Sprintf("echo %05d", i)) }
			writeErr := make(chan error, 1)
			go func() {
				for i := range count {
					if err := c.WriteMessage(Message{Data: msg(i), Number: testNumber(p)}); err != nil {
						writeErr <- fmt.Errorf("write %d: %w", i, err)
						return
					}
				}
				writeErr <- nil
			}()
			want := make(map[string]int, count)
			for i := range count {
				want[string(msg(i))]++
			}
			for i := range count {
				m, err := c.ReadMessage()
				require.NoError(t, err, "echo %d of %d; stats client %+v server %+v", i, count, c.Stats(), s.Stats())
				want[string(m.Data)]--
				require.GreaterOrEqual(t, want[string(m.Data)], 0, "duplicate %q", m.Data)
			}
			require.NoError(t, <-writeErr)
			for k, v := range want {
				require.Zero(t, v, "missing %q", k)
			}
			if p != Wirefox && p != Avara {
				// Wirefox and Avara message conns send at their
				// reference's pace (a datagram per 5 ms; 12 bytes per
				// ms and 16 messages outstanding), which the echo never
				// falls behind; TestMessageCloseConfirmsNoMore fills
				// their conns' queues instead.
				require.NotZero(t, s.Stats().Refused, "the server's queue never filled")
			}
		})
	}
}

// runRawPeer runs eng, an engine of the conn's protocol, on pc, a bare
// socket: once established it sends count messages, and it reports its
// pending messages when stopped.
func runRawPeer(t *testing.T, pc net.PacketConn, eng engine.Engine, count int, number uint32) (stop func() (pending int)) {
	t.Helper()
	quit, result := make(chan struct{}), make(chan int)
	go func() {
		defer pc.Close()
		buf, out := make([]byte, 2048), make([]byte, maxSend)
		var to net.Addr
		sent := false
		for {
			select {
			case <-quit:
				result <- eng.Pending()
				return
			default:
			}
			_ = pc.SetReadDeadline(time.Now().Add(time.Millisecond))
			n, from, err := pc.ReadFrom(buf)
			now := time.Now()
			if err == nil {
				to = from
				_ = eng.HandleDatagram(now, buf[:n])
				for _, ok := eng.Recv(); ok; _, ok = eng.Recv() {
				}
			}
			if !sent && eng.State() == engine.StateEstablished {
				sent = true
				for i := range count {
					if err := eng.Send([]byte(fmt.Sprintf("raw %03d", i)), engine.SendOptions{MessageNumber: number}); err != nil {
						t.Errorf("send %d: %v", i, err)
					}
				}
			}
			for k := eng.Poll(now, out); k > 0 && to != nil; k = eng.Poll(now, out) {
				_, _ = pc.WriteTo(out[:k], to)
			}
		}
	}()
	return func() int { close(quit); return <-result }
}

// TestMessageCloseConfirmsNoMore: a plain engine of each protocol sends
// 300 messages to a message conn whose receive queue holds 50; the conn
// reads 50, waits until its queue is full again, and closes. The peer
// sees exactly the messages the conn took confirmed (read, or unread at
// Close, which Stats.Unread counts); none that arrives after Close, which
// Stats.Unread counts too. Virtual time (see vpath).
func TestMessageCloseConfirmsNoMore(t *testing.T) {
	const count, read, queue = 300, 50, 50
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				vp := newVPath(t, 0)
				now := time.Now()
				var eng engine.Engine
				var err error
				switch p {
				case Airhook:
					eng, err = airhook.New(now, airhook.Config{})
				case POROUS:
					eng, err = porous.New(now, porous.Config{Accept: true})
				case LLUDP:
					eng, err = lludp.New(now, lludp.Config{Accept: true})
				case Wirefox:
					eng, err = wirefox.New(now, wirefox.Config{Accept: true, SendLimit: -1})
				case Avara:
					eng, err = avara.New(now, avara.Config{Accept: true, ClientID: 1})
				}
				require.NoError(t, err)
				stop := runRawPeer(t, vp.server, eng, count, testNumber(p))
				c := ClientMessages(vp.client, vp.server.LocalAddr(), vcfg(Config{Protocol: p, MaxRecvBuffer: queue * (RecvMessageOverhead + len("raw 000")), Linger: 2 * time.Second}))
				require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
				for range read {
					_, err := c.ReadMessage()
					require.NoError(t, err)
				}
				queued := 0
				require.Eventually(t, func() bool {
					c.a.mu.Lock()
					defer c.a.mu.Unlock()
					full := len(c.queue)-c.head >= queue // refusing: nothing more comes in
					queued = c.unread()                  // with what POROUS holds back
					return full
				}, 10*time.Second, time.Millisecond)
				require.NoError(t, c.Close())
				require.GreaterOrEqual(t, c.Stats().Unread, uint64(queued))
				select {
				case <-c.Done():
				case <-time.After(20 * time.Second):
					t.Fatal("the closed conn never finished")
				}
				require.Equal(t, count-read-queued, stop(), "the peer's messages left unconfirmed")
				if p == Airhook { // no close message: the peer keeps sending until the conn is done
					st := c.Stats()
					require.NotZero(t, st.Refused)
					require.Greater(t, st.Unread, uint64(queued), "messages refused after Close are unread too")
				}
			})
		})
	}
}
