package rudp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/airhook"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/lludp"
	"github.com/stretchr/testify/require"
)

func messagePair(t testing.TB, cfg *Config, l link) (client, server *MessageConn) {
	t.Helper()
	ln := ServerMessages(udpSocket(t, l.imp, 11), cfg)
	client = ClientMessages(udpSocket(t, l.imp, 12), ln.Addr(), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, client.Handshake(ctx))
	server, err := ln.AcceptMessages()
	require.NoError(t, err)
	t.Cleanup(func() {
		client.Close()
		server.Close()
		ln.Close()
	})
	return client, server
}

// testNumber is the message number test messages carry: LLUDP needs one
// (its TestMessage), the other protocols have none.
func testNumber(p Protocol) uint32 {
	if p == LLUDP {
		return lludp.TestMessage
	}
	return 0
}

// TestMessagesExactlyOnce: for every protocol, 3000 reliable messages of
// 1..256 bytes arrive exactly once each, whole, on a clean and an impaired
// path.
func TestMessagesExactlyOnce(t *testing.T) {
	for _, p := range Protocols() {
		for _, l := range links {
			t.Run(p.String()+"/"+l.name, func(t *testing.T) {
				t.Parallel()
				c, s := messagePair(t, &Config{Protocol: p}, l)
				const count = 3000
				msg := func(i int) []byte {
					m := []byte(fmt.Sprintf("%05d:", i))
					for len(m) < 1+i%256 {
						m = append(m, byte(i))
					}
					return m[:1+i%256]
				}
				go func() {
					for i := range count {
						if err := c.WriteMessage(Message{Data: msg(i), Number: testNumber(p)}); err != nil {
							t.Errorf("write %d: %v", i, err)
							return
						}
					}
				}()
				want := make(map[string]int, count)
				for i := range count {
					want[string(msg(i))]++
				}
				for range count {
					m, err := s.ReadMessage()
					require.NoError(t, err)
					require.Equal(t, Reliable, m.Delivery)
					require.Equal(t, testNumber(p), m.Number)
					want[string(m.Data)]--
					require.GreaterOrEqual(t, want[string(m.Data)], 0, "duplicate %q", m.Data)
				}
				for k, v := range want {
					require.Zero(t, v, "missing %q", k)
				}
			})
		}
	}
}

// TestMessageLimits: sizes and options Airhook cannot carry are refused
// with the documented errors, and a short read buffer keeps the message.
func TestMessageLimits(t *testing.T) {
	c, s := messagePair(t, &Config{Protocol: Airhook}, links[0])
	require.Equal(t, 256, c.MaxMessage())
	require.ErrorIs(t, c.WriteMessage(Message{Data: make([]byte, 257)}), ErrMessageTooLarge)
	_, err := c.Write(nil)
	require.ErrorIs(t, err, ErrEmptyMessage)
	require.ErrorIs(t, c.WriteMessage(Message{Data: []byte("x"), Delivery: Unreliable}), ErrUnsupported)
	require.ErrorIs(t, c.WriteMessage(Message{Data: []byte("x"), Channel: 1}), ErrUnsupported)

	big := make([]byte, 256)
	big[255] = 7
	n, err := c.Write(big)
	require.NoError(t, err)
	require.Equal(t, 256, n)
	short := make([]byte, 100)
	n, err = s.Read(short)
	require.ErrorIs(t, err, io.ErrShortBuffer)
	require.Zero(t, n)
	full := make([]byte, 300)
	n, err = s.Read(full)
	require.NoError(t, err)
	require.Equal(t, big, full[:n])
}

// TestMessageBackpressure: a reader slower than the writer holds at most
// MaxRecvQueue messages plus one datagram's worth; messages wait at the
// sender, none is lost.
func TestMessageBackpressure(t *testing.T) {
	cfg := &Config{MaxRecvQueue: 8}
	c, s := messagePair(t, cfg, links[0])
	const count, size = 500, 200
	go func() {
		for i := range count {
			m := make([]byte, size)
			copy(m, fmt.Sprint(i))
			if err := c.WriteMessage(Message{Data: m}); err != nil {
				t.Errorf("write: %v", err)
				return
			}
		}
	}()
	require.Eventually(t, func() bool { return s.Stats().Refused > 0 }, 10*time.Second, time.Millisecond)
	s.a.mu.Lock()
	queued := len(s.queue) - s.head
	s.a.mu.Unlock()
	require.LessOrEqual(t, queued, 8+DefaultMTU/(size+1))
	seen := make(map[string]bool)
	for range count {
		m, err := s.ReadMessage()
		require.NoError(t, err)
		require.False(t, seen[string(m.Data)])
		seen[string(m.Data)] = true
	}
	require.Len(t, seen, count)
}

// TestMessageConnSpeaksPlainAirhook: a peer that is nothing but an Airhook
// engine on a raw UDP socket exchanges messages with a MessageConn, so
// nothing rudp-specific is on the wire.
func TestMessageConnSpeaksPlainAirhook(t *testing.T) {
	raw, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer raw.Close()
	peer, err := airhook.New(time.Now(), airhook.Config{Session: 0x0d0d0d0d})
	require.NoError(t, err)
	require.NoError(t, peer.Send([]byte("from the reference"), engine.SendOptions{}))

	delivered := make(chan string, 8)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the plain Airhook peer, driven by hand
		buf, out := make([]byte, 2048), make([]byte, 1500)
		var addr net.Addr
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = raw.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			n, from, err := raw.ReadFrom(buf)
			now := time.Now()
			if err == nil {
				addr = from
				_ = peer.HandleDatagram(now, buf[:n])
				for m, ok := peer.Recv(); ok; m, ok = peer.Recv() {
					delivered <- string(m.Data)
				}
			} else if !errors.Is(err, errTimeout) {
				return
			}
			for k := peer.Poll(now, out); k > 0 && addr != nil; k = peer.Poll(now, out) {
				_, _ = raw.WriteTo(out[:k], addr)
			}
		}
	}()

	c := ClientMessages(udpSocket(t, nil, 0), raw.LocalAddr(), &Config{Protocol: Airhook})
	defer c.Close()
	require.NoError(t, c.WriteMessage(Message{Data: []byte("to the reference")}))
	m, err := c.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, "from the reference", string(m.Data))
	select {
	case got := <-delivered:
		require.Equal(t, "to the reference", got)
	case <-time.After(10 * time.Second):
		t.Fatal("the Airhook peer got nothing")
	}
}
