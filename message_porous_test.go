package rudp

import (
	"context"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rudpkit/rudp/internal/porous"
	"github.com/stretchr/testify/require"
)

// porousMessage is message i of channel ch: size bytes that name both.
func porousMessage(ch uint8, i, size int) []byte {
	p := make([]byte, size)
	for j := range p {
		p[j] = byte(i*7 + j + int(ch)*31)
	}
	if size >= 5 {
		p[0] = ch
		binary.BigEndian.PutUint32(p[1:], uint32(i))
	}
	return p
}

// TestPOROUSChannels: reliable messages on three channels, one of them low
// priority, sizes from empty to several fragments, arrive exactly once and
// in order within each channel, on a clean and an impaired path.
func TestPOROUSChannels(t *testing.T) {
	for _, l := range links {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			cfg := &Config{Protocol: POROUS, Channels: 3, LowPriorityChannels: []uint8{2}}
			c, s := messagePair(t, cfg, l)
			const count = 600
			size := func(i int) int { return []int{5, 100, 1452, 1453, 5000, 40000}[i%6] }
			go func() {
				for i := range count {
					ch := uint8(i % 3)
					if err := c.WriteMessage(Message{Data: porousMessage(ch, i/3, size(i)), Channel: ch}); err != nil {
						t.Errorf("write %d: %v", i, err)
						return
					}
				}
				if err := c.WriteMessage(Message{Channel: 1}); err != nil { // empty
					t.Errorf("write empty: %v", err)
				}
			}()
			next := [3]int{}
			empty := false
			for range count + 1 {
				m, err := s.ReadMessage()
				require.NoError(t, err)
				ch := m.Channel
				require.Less(t, ch, uint8(3))
				if ch == 1 && next[1] == count/3 { // after the last of channel 1
					require.Empty(t, m.Data)
					empty = true
					continue
				}
				i := next[ch]
				require.Equal(t, porousMessage(ch, i, size(i*3+int(ch))), m.Data, "channel %d message %d", ch, i)
				next[ch]++
			}
			require.True(t, empty, "the empty message")
			require.Equal(t, [3]int{count / 3, count / 3, count / 3}, next)
		})
	}
}

// TestPOROUSDeliveryModes: over the impaired path, unreliable and passive
// messages on their own channels arrive at most once and in order, lost
// ones skipped, while the reliable channel delivers everything in order.
func TestPOROUSDeliveryModes(t *testing.T) {
	cfg := &Config{Protocol: POROUS, Channels: 3}
	c, s := messagePair(t, cfg, links[1])
	const count = 2000
	modes := []Delivery{Reliable, Unreliable, Passive}
	go func() {
		for i := range count {
			ch := uint8(i % 3)
			if err := c.WriteMessage(Message{Data: porousMessage(ch, i/3, 200), Channel: ch, Delivery: modes[ch]}); err != nil {
				t.Errorf("write %d: %v", i, err)
				return
			}
		}
		// A last reliable message on every channel marks its end.
		for ch := range uint8(3) {
			if err := c.WriteMessage(Message{Data: []byte("end"), Channel: ch}); err != nil {
				t.Errorf("write end: %v", err)
			}
		}
	}()
	last := [3]int{-1, -1, -1}
	got := [3]int{}
	ended := 0
	for ended < 3 {
		m, err := s.ReadMessage()
		require.NoError(t, err)
		ch := m.Channel
		if string(m.Data) == "end" {
			ended++
			continue
		}
		i := int(binary.BigEndian.Uint32(m.Data[1:]))
		require.Equal(t, porousMessage(ch, i, 200), m.Data)
		require.Greater(t, i, last[ch], "channel %d: %d after %d", ch, i, last[ch])
		if modes[ch] == Reliable {
			require.Equal(t, last[ch]+1, i, "reliable channel skipped")
		}
		last[ch] = i
		got[ch]++
	}
	t.Logf("delivered of %d per channel: reliable %d, unreliable %d, passive %d", count/3+1, got[0], got[1], got[2])
	require.Equal(t, count/3+1, got[0])
	require.Positive(t, got[1])
	require.Positive(t, got[2])
}

// TestPOROUSMessageErrors: options and sizes POROUS cannot carry are refused
// with the documented errors.
func TestPOROUSMessageErrors(t *testing.T) {
	c, s := messagePair(t, &Config{Protocol: POROUS, Channels: 2, MaxMessage: 10000}, links[0])
	require.Equal(t, 10000, c.MaxMessage())
	require.ErrorIs(t, c.WriteMessage(Message{Data: make([]byte, 10001)}), ErrMessageTooLarge)
	require.ErrorIs(t, c.WriteMessage(Message{Data: []byte("x"), Channel: 2}), ErrUnsupported)
	require.ErrorIs(t, c.WriteMessage(Message{Data: []byte("x"), Number: 1}), ErrUnsupported)
	require.NoError(t, c.WriteMessage(Message{Data: make([]byte, 10000)}))
	m, err := s.ReadMessage()
	require.NoError(t, err)
	require.Len(t, m.Data, 10000)

	_, err = (&Config{Protocol: POROUS, Channels: 257}).resolved()
	require.Error(t, err)
	_, err = (&Config{Protocol: POROUS, Channels: 2, LowPriorityChannels: []uint8{2}}).resolved()
	require.Error(t, err)
	_, err = (&Config{Protocol: POROUS, MaxMessage: MaxMessagePOROUS + 1}).resolved()
	require.Error(t, err)
}

// TestPOROUSCloseIsEOF: a message conn's Close delivers what was written,
// then disconnects; the peer reads every message, then io.EOF.
func TestPOROUSCloseIsEOF(t *testing.T) {
	c, s := messagePair(t, &Config{Protocol: POROUS}, links[1])
	for i := range 100 {
		require.NoError(t, c.WriteMessage(Message{Data: porousMessage(0, i, 3000)}))
	}
	require.NoError(t, c.Close())
	for i := range 100 {
		m, err := s.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, porousMessage(0, i, 3000), m.Data)
	}
	requireClosedByPeer(t, s, c)
}

// TestPOROUSChannelMismatch: a listener refuses a peer configured with
// another channel count, and tells it so with its own Connect: the
// dialer fails with ErrIncompatible at once, long before its handshake
// timeout, and the listener logs the refusal at Debug.
func TestPOROUSChannelMismatch(t *testing.T) {
	var logs logBuffer
	ln := ServerMessages(udpSocket(t, nil, 0), &Config{Protocol: POROUS, Channels: 3, Logger: logs.logger()})
	defer ln.Close()
	c := ClientMessages(udpSocket(t, nil, 0), ln.Addr(),
		&Config{Protocol: POROUS, Channels: 2, HandshakeTimeout: 30 * time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // fail fast without the answer
	defer cancel()
	err := c.Handshake(ctx)
	require.ErrorIs(t, err, ErrIncompatible)
	require.NotErrorIs(t, err, ErrHandshakeTimeout)
	require.ErrorContains(t, err, "porous: peer speaks version 0 with 3 channels, we version 0 with 2")
	require.Contains(t, logs.String(), `level=DEBUG msg="rudp: handshake refused" peer=`+c.LocalAddr().String()+
		` err="datagram rejected: porous: first datagram of an accepted session is not a compatible Connect:`+
		` peer parameters incompatible: porous: peer speaks version 0 with 2 channels, we version 0 with 3"`)
	require.Equal(t, uint64(1), ln.Stats().UnknownDrops)
}

// TestPOROUSWire: a peer that is nothing but a UDP socket sending the
// reference's frames is answered as the reference would: ConnectAck with
// its nonce, then our own Connect; after our ConnectAck, a Ping; its Data
// frame (numbered with our nonce) is acknowledged with a DataAck and
// delivered.
func TestPOROUSWire(t *testing.T) {
	ln := ServerMessages(udpSocket(t, nil, 0), &Config{Protocol: POROUS})
	defer ln.Close()
	raw := newRawPeer(t, ln.Addr())
	send, recv := raw.send, raw.recv
	// Connect: version 0, 1 channel, 100,000,000 B/s, nonce d430804d.
	send([]byte{0x00, 0x00, 0x00, 0x05, 0xf5, 0xe1, 0x00, 0xd4, 0x30, 0x80, 0x4d})
	var theirs []byte // the listener's Connect
	for i, acked := 0, false; !acked || theirs == nil; i++ {
		require.Less(t, i, 100, "no ConnectAck and Connect in 100 frames")
		f := recv()
		switch f[0] {
		case 1:
			require.Equal(t, []byte{0x01, 0xd4, 0x30, 0x80, 0x4d}, f)
			acked = true
		case 0:
			require.Len(t, f, 11)
			require.Equal(t, []byte{0x00, 0x00, 0x00}, f[:3], "version 0, 1 channel")
			theirs = f
		default:
			t.Fatalf("unexpected frame % x", f)
		}
	}
	nonce := theirs[7:11]
	send(append([]byte{0x01}, nonce...)) // ConnectAck
	mc := accept(t, ln).(*MessageConn)
	defer mc.Close()
	bound(t, mc)

	// Data: frame seq = the listener's nonce, one fragment "hello" on
	// channel 0, packet 0.
	data := append([]byte{0x06}, nonce...)
	data = append(data, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05)
	data = append(data, "hello"...)
	send(data)
	m, err := mc.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, "hello", string(m.Data))
	for i := 0; ; i++ {
		require.Less(t, i, 100, "no DataAck in 100 frames")
		f := recv()
		if f[0] == 7 {
			require.Equal(t, append([]byte{0x07, 0x00, 0x01}, nonce...), f, "DataAck of our frame")
			break
		}
		require.Contains(t, []byte{0, 4}, f[0], "only Connect repeats and Pings before the DataAck: % x", f)
	}
}

// TestPOROUSPeerCloseReadInOneRTT: on a virtual network (one-way delay
// vpathDelay, virtual time), the reader learns of the peer's close one
// round trip after the peer's Disconnect arrived: the Disconnect is
// challenged with a Ping, which the closing rudp peer answers with the
// proof of its close. The association still lingers in TIME-WAIT
// (porous.MinTimeWait) to answer repeats of the Disconnect.
func TestPOROUSPeerCloseReadInOneRTT(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vp := newVPath(t, 0)
		spc, cpc := vp.server, vp.client
		cfg := &Config{Protocol: POROUS, Rand: rand.NewChaCha8([32]byte{})}
		ln := ServerMessages(spc, cfg)
		c := ClientMessages(cpc, spc.LocalAddr(), cfg)
		defer func() { // let every goroutine of the bubble end
			_ = ln.Close()
			_ = c.Close()
			<-c.Done()
		}()
		require.NoError(t, c.WriteMessage(Message{Data: []byte("last")}))
		s, err := ln.AcceptMessages()
		require.NoError(t, err)
		m, err := s.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, "last", string(m.Data))
		for i := 0; c.Stats().BytesInFlight > 0; i++ { // the DataAck is on its way
			require.Less(t, i, 100)
			time.Sleep(vpathDelay)
		}

		closed := time.Now()
		require.NoError(t, c.Close()) // the Disconnect leaves at once
		_, err = s.ReadMessage()
		require.ErrorIs(t, err, io.EOF)
		require.Equal(t, 3*vpathDelay, time.Since(closed), "Disconnect, challenge Ping, proof")
		select {
		case <-s.Done():
			t.Fatal("the association ended before the reader was told")
		default:
		}
		<-s.Done()
		<-c.Done()
		require.Equal(t, 3*vpathDelay+porous.MinTimeWait, time.Since(closed), "TIME-WAIT")
	})
}

// TestPOROUSTooLarge: a message above Config.MaxMessage (2,000,000 bytes
// from a peer allowing that, against the default 1 MiB) is dropped, but
// not silently: counted in Stats.TooLarge and logged at Debug with the
// peer's address. The message after it arrives.
func TestPOROUSTooLarge(t *testing.T) {
	var logs logBuffer
	ln := ServerMessages(udpSocket(t, nil, 0), &Config{Protocol: POROUS, Logger: logs.logger()})
	defer ln.Close()
	c := ClientMessages(udpSocket(t, nil, 0), ln.Addr(), &Config{Protocol: POROUS, MaxMessage: 2_000_000})
	defer c.Close()
	require.NoError(t, c.WriteMessage(Message{Data: make([]byte, 2_000_000)}))
	require.NoError(t, c.WriteMessage(Message{Data: []byte("after")}))
	s, err := ln.AcceptMessages()
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.SetReadDeadline(time.Now().Add(10*time.Second)))
	m, err := s.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, "after", string(m.Data))
	require.Equal(t, uint64(1), s.Stats().TooLarge)
	require.Contains(t, logs.String(), `level=DEBUG msg="porous: incoming packet larger than MaxPacket dropped" peer=`+
		c.LocalAddr().String()+` channel=0 packet=0 fragments=1378 min_size=1999405 max_packet=1048576`)
}

// TestPOROUSListenerLogsOtherProtocol: an Airhook opening at a POROUS
// listener opens nothing and gets no answer (it may be spoofed), but the
// listener logs it at Debug.
func TestPOROUSListenerLogsOtherProtocol(t *testing.T) {
	var logs logBuffer
	ln := ServerMessages(udpSocket(t, nil, 0), &Config{Protocol: POROUS, Logger: logs.logger()})
	defer ln.Close()
	raw := newRawPeer(t, ln.Addr())
	raw.send([]byte{0x08, 0x00, 0x00, 0x01, 0x0a, 0x0a, 0x0a, 0x0a})
	want := `level=DEBUG msg="rudp: datagram from an unknown address dropped: not an opening of the protocol" peer=` +
		raw.pc.LocalAddr().String() + ` protocol=porous size=8`
	for i := 0; !strings.Contains(logs.String(), want); i++ {
		require.Less(t, i, 500, "no log line; got %q", logs.String())
		time.Sleep(10 * time.Millisecond)
	}
	require.Equal(t, uint64(1), ln.Stats().UnknownDrops)
}
