package rudp

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

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
	server = accept(t, ln).(*MessageConn)
	t.Cleanup(func() {
		client.Close()
		server.Close()
		ln.Close()
	})
	bound(t, client, server)
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

// TestMessagesExactlyOnce: for every protocol, 3000 (Avara: 500) reliable messages of
// 1..256 bytes arrive exactly once each, whole, on a clean and an impaired
// path, in virtual time (see vpath).
func TestMessagesExactlyOnce(t *testing.T) {
	for _, p := range Protocols() {
		for _, l := range links {
			t.Run(p.String()+"/"+l.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					c, s := messagePairOn(t, Config{Protocol: p}, l)
					count := 3000
					if p == Avara {
						// The reference's resend timing (a few hundred ms at
						// least, no RACK) makes each loss cost that much on
						// an ordered stream of messages.
						count = 500
					}
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
// MaxRecvBuffer (8 messages' worth) plus one datagram's worth; messages wait at the
// sender, none is lost.
func TestMessageBackpressure(t *testing.T) {
	const count, size = 500, 200
	cfg := &Config{MaxRecvBuffer: 8 * (size + RecvMessageOverhead)}
	c, s := messagePair(t, cfg, links[0])
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

// fill is an io.Reader of endless copies of one byte.
type fill byte

func (b fill) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// TestMessageConnAnswersAirhookReference: a raw UDP socket replays what
// the Airhook reference's endpoint A sent in scenario 1 of the captured
// vectors (internal/airhook/testdata/airhook.json, from wtanaka/airhook at
// f5a18bd) to a listener whose session ID is the capture's B. The
// MessageConn answers byte for byte what the reference's B answered and
// delivers A's messages, so nothing rudp-specific is on the wire.
func TestMessageConnAnswersAirhookReference(t *testing.T) {
	b, err := os.ReadFile("internal/airhook/testdata/airhook.json")
	require.NoError(t, err)
	var vec struct {
		Packets []struct{ ID, Hex string }
	}
	require.NoError(t, json.Unmarshal(b, &vec))
	captured := map[string]string{}
	for _, p := range vec.Packets {
		captured[p.ID] = p.Hex
	}

	raw := udpSocket(t, nil, 0)
	defer raw.Close()
	ln := ServerMessages(udpSocket(t, nil, 0), &Config{Protocol: Airhook, Rand: fill(0x0b)})
	defer ln.Close()
	buf := make([]byte, 2048)
	var last string
	send := func(h string) {
		t.Helper()
		d, err := hex.DecodeString(h)
		require.NoError(t, err)
		_, err = raw.WriteTo(d, ln.Addr())
		require.NoError(t, err)
	}
	// recv returns the next datagram from the listener that is not a
	// repeat of the previous one (a timer may repeat a header).
	recv := func() string {
		t.Helper()
		for {
			require.NoError(t, raw.SetReadDeadline(time.Now().Add(10*time.Second)))
			n, _, err := raw.ReadFrom(buf)
			require.NoError(t, err)
			if h := hex.EncodeToString(buf[:n]); h != last {
				last = h
				return h
			}
		}
	}
	send(captured["P1"]) // A: its session ID
	require.Equal(t, captured["P2"], recv(), "B: O+S, the session push")
	send(captured["P3"]) // A: O+S and two messages
	require.Equal(t, captured["P4"], recv(), "B: confirms A's packet 2")

	c, err := ln.AcceptMessages()
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	for _, want := range []string{"hello", "world"} {
		m, err := c.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, want, string(m.Data))
	}
	// The other way: seq 4, observed 2, E 0 omitted, message 'x'.
	require.NoError(t, c.WriteMessage(Message{Data: []byte("x")}))
	require.Equal(t, "000200040078", recv())
	send("0204000302") // A confirms it: seq 3, observed 4, E 2
}

// TestAirhookDialToSilentPeer: a peer playing the reference (airhook-2)
// answers the opening with its session push, which echoes our session ID,
// and then stays silent, as the reference does until it has data to send.
// The dial succeeds on that answer.
func TestAirhookDialToSilentPeer(t *testing.T) {
	raw := newRawPeer(t, nil)
	got := make(chan []byte, 2) // the opening, then our session push
	go func() {
		_ = raw.pc.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 2048)
		for i := range 2 {
			n, from, err := raw.pc.ReadFrom(buf)
			if err != nil {
				close(got)
				return
			}
			got <- append([]byte{}, buf[:n]...)
			if i == 0 && n == 8 {
				// O = the dialer's session, S = 0x0c0c0c0c; nothing after this.
				answer := append([]byte{0x18, 0x01, 0x00, 0x02}, buf[4:8]...)
				answer = append(answer, 0x0c, 0x0c, 0x0c, 0x0c)
				_, _ = raw.pc.WriteTo(answer, from)
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DialMessages(ctx, "udp", raw.pc.LocalAddr().String(),
		&Config{Protocol: Airhook, HandshakeTimeout: 3 * time.Second})
	require.NoError(t, err)
	defer c.Close()
	opening, push := <-got, <-got
	require.Len(t, opening, 8)
	require.Equal(t, "08000001", fmt.Sprintf("%x", opening[:4]))
	require.Equal(t, fmt.Sprintf("180200020c0c0c0c%x", opening[4:8]), fmt.Sprintf("%x", push),
		"our session push: O = the peer's session, S = ours")
}

// TestMessageErrorsAfterPeerClose: once the peer has closed, a read
// returns io.EOF and a write fails with ErrPeerClosed, never with
// net.ErrClosed (which means this end closed), on every protocol that
// carries a close; both before the association ends (POROUS lingers to
// answer the peer's repeats) and after. Airhook has no close on the wire:
// its conn learns of the peer's silence at IdleTimeout. Virtual time (see
// vpath).
func TestMessageErrorsAfterPeerClose(t *testing.T) {
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, s := messagePairOn(t, Config{Protocol: p, IdleTimeout: 3 * time.Second}, links[0])
				require.NoError(t, c.WriteMessage(Message{Data: []byte("last"), Number: testNumber(p)}))
				m, err := s.ReadMessage()
				require.NoError(t, err)
				require.Equal(t, "last", string(m.Data))
				require.NoError(t, s.Close())
				require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
				check := func(err error) {
					t.Helper()
					require.Error(t, err)
					require.False(t, errors.Is(err, net.ErrClosed), "%v", err)
					if p == Airhook {
						require.ErrorIs(t, err, ErrIdleTimeout)
					} else {
						require.ErrorIs(t, err, ErrPeerClosed)
					}
				}
				_, err = c.ReadMessage()
				if p == Airhook {
					check(err)
				} else {
					require.Equal(t, io.EOF, err)
				}
				check(c.WriteMessage(Message{Data: []byte("after"), Number: testNumber(p)}))
				<-c.Done()
				check(c.WriteMessage(Message{Data: []byte("after"), Number: testNumber(p)}))
				require.NoError(t, c.Close())
				require.ErrorIs(t, c.WriteMessage(Message{Data: []byte("closed"), Number: testNumber(p)}), net.ErrClosed)
			})
		})
	}
}

// TestErrorsNameTheOption: a message refused for an option or a size says
// which option, or which limit, while still matching the sentinel.
func TestErrorsNameTheOption(t *testing.T) {
	cases := []struct {
		p    Protocol
		m    Message
		is   error
		text string
	}{
		{POROUS, Message{Data: []byte("x"), Channel: 3}, ErrUnsupported, "porous: channel 3 (only channel 0)"},
		{POROUS, Message{Data: make([]byte, DefaultMaxMessage+1)}, ErrMessageTooLarge, fmt.Sprintf("porous: %d bytes, at most %d", DefaultMaxMessage+1, DefaultMaxMessage)},
		{Airhook, Message{Data: make([]byte, 257)}, ErrMessageTooLarge, "airhook: 257 bytes, at most 256"},
		{Airhook, Message{Data: []byte("x"), Delivery: Unreliable}, ErrUnsupported, "airhook: unreliable delivery (only reliable)"},
		{LLUDP, Message{Data: []byte("x"), Number: 0xFFFF0003}, ErrUnsupported, "lludp: message number 0xffff0003"},
		{LLUDP, Message{Data: []byte("x"), Number: testNumber(LLUDP), Delivery: Passive}, ErrUnsupported, "lludp: passive delivery"},
		{Wirefox, Message{Data: []byte{3, 'x'}}, ErrUnsupported, "wirefox: command 3 (commands below 15 are the protocol's own)"},
		{Wirefox, Message{Data: []byte{15, 'x'}, Delivery: Passive}, ErrUnsupported, "wirefox: passive delivery"},
		{Wirefox, Message{Data: []byte{15, 'x'}, Channel: 2}, ErrUnsupported, "wirefox: channel 2 (channels 0 to 0"},
		{Avara, Message{Data: []byte("x"), Command: -5}, ErrUnsupported, "avara: command -5 (negative commands are the transport's)"},
		{Avara, Message{Data: make([]byte, 985)}, ErrMessageTooLarge, "avara: 985 bytes, at most 984"},
	}
	pairs := map[Protocol]*MessageConn{}
	for _, tc := range cases {
		c := pairs[tc.p]
		if c == nil {
			c, _ = messagePair(t, &Config{Protocol: tc.p}, links[0])
			pairs[tc.p] = c
		}
		err := c.WriteMessage(tc.m)
		require.ErrorIs(t, err, tc.is, "%v", tc.p)
		require.ErrorContains(t, err, tc.text)
	}
	c := pairs[Avara]
	_, err := c.Write([]byte{1, 2, 3})
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorContains(t, err, "Avara Write of 3 bytes, shorter than its 8-byte header")
}

// TestDeliveryRoundTrips: on the protocols whose wire marks a message
// reliable or not (LLUDP, Wirefox), the reader sees the mode the writer
// chose; on POROUS, whose wire does not carry it, every message reads as
// Reliable. (On a clean loopback path the unreliable message arrives.)
func TestDeliveryRoundTrips(t *testing.T) {
	for _, p := range []Protocol{LLUDP, Wirefox, POROUS} {
		t.Run(p.String(), func(t *testing.T) {
			c, s := messagePair(t, &Config{Protocol: p}, links[0])
			require.NoError(t, s.SetReadDeadline(time.Now().Add(10*time.Second)))
			for _, d := range []Delivery{Unreliable, Reliable} {
				require.NoError(t, c.WriteMessage(Message{Data: []byte{15, byte(d)}, Delivery: d, Number: testNumber(p)}))
				m, err := s.ReadMessage()
				require.NoError(t, err)
				require.Equal(t, []byte{15, byte(d)}, m.Data)
				if p == POROUS {
					require.Equal(t, Reliable, m.Delivery)
				} else {
					require.Equal(t, d, m.Delivery)
				}
			}
		})
	}
}
