package rudp

import (
	"context"
	"encoding/binary"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestLLUDPMessages: messages with numbers of every frequency and bodies
// full of zeros (so zerocoded on the wire) cross an impaired path: the
// reliable ones exactly once, the unreliable ones at most once, each with
// its number and delivery mode. The listener learns the client's circuit.
// Virtual time (see vpath).
func TestLLUDPMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		circuit := Circuit{Code: 0x01020304, SessionID: [16]byte{1, 2, 3}, AgentID: [16]byte{15: 9}}
		c, s := messagePairOn(t, Config{Protocol: LLUDP, Circuit: circuit}, links[1])
		got, ok := s.Circuit()
		require.True(t, ok)
		require.Equal(t, circuit, got)
		got, ok = c.Circuit()
		require.True(t, ok)
		require.Equal(t, circuit, got)

		numbers := []uint32{5, 0xFF05, 0xFFFF0001, 0xFFFF01AF, StreamMessageNumber}
		const count = 1500
		body := func(i int) []byte { // 4 to 1190 bytes, mostly zeros
			b := make([]byte, 4+i*37%1187)
			binary.BigEndian.PutUint32(b, uint32(i))
			return b
		}
		go func() {
			for i := range count {
				d := Reliable
				if i%4 == 3 {
					d = Unreliable
				}
				if err := c.WriteMessage(Message{Data: body(i), Number: numbers[i%len(numbers)], Delivery: d}); err != nil {
					t.Errorf("write %d: %v", i, err)
					return
				}
			}
			if err := c.WriteMessage(Message{Data: []byte("end"), Number: 0xFFFF0001}); err != nil {
				t.Errorf("write end: %v", err)
			}
		}()
		seen := make(map[int]bool)
		reliable, ended := 0, false
		for !ended || reliable < count-count/4 { // LLUDP does not order: "end" may overtake
			m, err := s.ReadMessage()
			require.NoError(t, err)
			if string(m.Data) == "end" {
				ended = true
				continue
			}
			require.GreaterOrEqual(t, len(m.Data), 4)
			i := int(binary.BigEndian.Uint32(m.Data))
			require.False(t, seen[i], "message %d twice", i)
			seen[i] = true
			require.Equal(t, body(i), m.Data)
			require.Equal(t, numbers[i%len(numbers)], m.Number)
			if i%4 == 3 {
				require.Equal(t, Unreliable, m.Delivery)
			} else {
				require.Equal(t, Reliable, m.Delivery)
				reliable++
			}
		}
		require.Equal(t, count-count/4, reliable, "every reliable message")
		t.Logf("unreliable delivered: %d of %d", len(seen)-reliable, count/4)
	})
}

// TestLLUDPMessageErrors: numbers and options LLUDP cannot carry are
// refused with the documented errors.
func TestLLUDPMessageErrors(t *testing.T) {
	c, _ := messagePair(t, &Config{Protocol: LLUDP}, links[0])
	require.Equal(t, 1190, c.MaxMessage())
	require.ErrorIs(t, c.WriteMessage(Message{Data: make([]byte, 1191), Number: 5}), ErrMessageTooLarge)
	for _, n := range []uint32{0, 1, 2, 0xFFFF0003, 0xFFFFFFFB, 0xFFFFFFFC, 0xFFFFFFFD, 0xFFFF0000, 0x1FF} {
		require.ErrorIs(t, c.WriteMessage(Message{Data: []byte("x"), Number: n}), ErrUnsupported, "number %#x", n)
	}
	require.ErrorIs(t, c.WriteMessage(Message{Data: []byte("x"), Number: 5, Delivery: Passive}), ErrUnsupported)
	require.ErrorIs(t, c.WriteMessage(Message{Data: []byte("x"), Number: 5, Channel: 1}), ErrUnsupported)
	require.NoError(t, c.WriteMessage(Message{Number: 5}), "a message number alone")
}

// TestLLUDPCloseIsEOF: Close delivers what was written, then closes the
// circuit; the peer reads every message, then io.EOF.
func TestLLUDPCloseIsEOF(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := messagePairOn(t, Config{Protocol: LLUDP}, links[0])
		for i := range 50 {
			require.NoError(t, c.WriteMessage(Message{Data: []byte{byte(i)}, Number: 7}))
		}
		require.NoError(t, c.Close())
		seen := make(map[byte]bool)
		for range 50 {
			m, err := s.ReadMessage()
			require.NoError(t, err)
			seen[m.Data[0]] = true
		}
		require.Len(t, seen, 50)
		requireClosedByPeer(t, s, c)
	})
}

// TestLLUDPWire: a peer that is nothing but a UDP socket sending the
// viewer's bytes opens a circuit with UseCircuitCode, has its reliable
// message acknowledged and delivered, and its StartPingCheck answered.
func TestLLUDPWire(t *testing.T) {
	ln := ServerMessages(udpSocket(t, nil, 0), &Config{Protocol: LLUDP})
	defer ln.Close()
	raw := newRawPeer(t, ln.Addr())
	send := raw.send
	// recv returns the next datagram's message (from byte 6) and its
	// appended acks.
	recv := func() (msg []byte, acks []uint32) {
		p := raw.recv()
		n := len(p)
		require.GreaterOrEqual(t, n, 7)
		require.Zero(t, p[0]&0x80, "nothing here is worth zerocoding")
		require.Zero(t, p[5], "no extra header")
		if p[0]&0x10 != 0 {
			k := int(p[n-1])
			for i := range k {
				acks = append(acks, binary.BigEndian.Uint32(p[n-1-4*k+4*i:]))
			}
			p = p[:n-1-4*k]
		}
		return append([]byte{}, p[6:]...), acks
	}
	// acked waits until seq is acknowledged, appended or by PacketAck.
	acked := func(seq uint32) {
		t.Helper()
		for range 100 {
			msg, acks := recv()
			if len(msg) >= 5 && binary.BigEndian.Uint32(msg) == 0xFFFFFFFB {
				for i := range int(msg[4]) {
					acks = append(acks, binary.LittleEndian.Uint32(msg[5+4*i:]))
				}
			}
			for _, a := range acks {
				if a == seq {
					return
				}
			}
		}
		t.Fatalf("no ack of %d in 100 datagrams", seq)
	}

	use := []byte{0x40, 0, 0, 0, 1, 0, 0xFF, 0xFF, 0x00, 0x03, 0x2A, 0, 0, 0}
	use = append(use, make([]byte, 32)...)
	use[14] = 0x11 // SessionID[0]
	send(use)
	acked(1)
	mc := accept(t, ln).(*MessageConn)
	defer mc.Close()
	bound(t, mc)
	circuit, ok := mc.Circuit()
	require.True(t, ok)
	require.Equal(t, Circuit{Code: 42, SessionID: [16]byte{0x11}}, circuit)

	// A reliable TestMessage, zerocoded: FF FF 00 01 → FF FF 00 01 01,
	// then body 07 00 00 00 → 07 00 03.
	send([]byte{0xC0, 0, 0, 0, 2, 0, 0xFF, 0xFF, 0x00, 0x01, 0x01, 0x07, 0x00, 0x03})
	m, err := mc.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, Message{Data: []byte{7, 0, 0, 0}, Number: 0xFFFF0001}, m)
	acked(2)

	// StartPingCheck PingID 7, OldestUnacked 3.
	send([]byte{0x00, 0, 0, 0, 3, 0, 0x01, 0x07, 0x03, 0, 0, 0})
	for i := 0; ; i++ {
		require.Less(t, i, 100, "no CompletePingCheck in 100 datagrams")
		msg, _ := recv()
		if msg[0] == 0x02 {
			require.Equal(t, []byte{0x02, 0x07}, msg, "CompletePingCheck with the same PingID")
			break
		}
	}
}

// TestLLUDPReadWriteTemplateForm: as a net.Conn, an LLUDP message conn
// writes and reads messages in their template form, the message number's
// wire bytes followed by the body.
func TestLLUDPReadWriteTemplateForm(t *testing.T) {
	c, s := messagePair(t, &Config{Protocol: LLUDP}, links[0])
	for _, p := range [][]byte{{0x05, 1, 2}, {0xFF, 0x07, 0}, {0xFF, 0xFF, 0x00, 0x01, 9, 0, 0, 9}, {0x05}} {
		n, err := c.Write(p)
		require.NoError(t, err)
		require.Equal(t, len(p), n)
		buf := make([]byte, 64)
		n, err = s.Read(buf)
		require.NoError(t, err)
		require.Equal(t, p, buf[:n])
	}
	_, err := c.Write([]byte{0xFF, 0xFF, 0x00})
	require.ErrorIs(t, err, ErrUnsupported, "no room for a Low number")
	_, err = c.Write([]byte{0x01, 0, 0, 0, 0, 0})
	require.ErrorIs(t, err, ErrUnsupported, "StartPingCheck belongs to the transport")
	require.NoError(t, c.WriteMessage(Message{Number: 0xFFFF0001, Data: []byte{1, 2, 3}}))
	_, err = s.Read(make([]byte, 6))
	require.ErrorIs(t, err, io.ErrShortBuffer, "4-byte number + 3 bytes")
	buf := make([]byte, 7)
	n, err := s.Read(buf)
	require.NoError(t, err)
	require.Equal(t, []byte{0xFF, 0xFF, 0x00, 0x01, 1, 2, 3}, buf[:n])
}

// TestAcceptCircuit: an LLUDP message listener with Config.AcceptCircuit
// accepts only the circuits it approves; a refused one never reaches
// Accept and its peer reads io.EOF (CloseCircuit). Virtual time (see
// vpath).
func TestAcceptCircuit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vp := newVPath(t, 0)
		ln := ServerMessages(vp.server, vcfg(Config{Protocol: LLUDP,
			AcceptCircuit: func(c Circuit) bool { return c.Code != 13 }}))
		defer ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()

		bad := ClientMessages(vp.client, ln.Addr(), vcfg(Config{Protocol: LLUDP, Circuit: Circuit{Code: 13}}))
		defer endNow(bad)
		require.NoError(t, bad.Handshake(ctx), "the circuit opens, then is closed")
		_ = bad.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := bad.ReadMessage()
		require.ErrorIs(t, err, io.EOF)

		good := ClientMessages(vp.socket(t, 4001), ln.Addr(), vcfg(Config{Protocol: LLUDP, Circuit: Circuit{Code: 14}}))
		defer endNow(good)
		require.NoError(t, good.Handshake(ctx))
		s := accept(t, ln).(*MessageConn)
		defer endNow(s)
		c, ok := s.Circuit()
		require.True(t, ok)
		require.Equal(t, uint32(14), c.Code, "the refused circuit was never accepted")
	})
}
