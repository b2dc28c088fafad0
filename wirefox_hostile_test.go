package rudp

// Hostile tests of Wirefox conns: blind sources that complete the
// handshake, a spoofed restart of a live message conn, and the replay of
// an old session from a live client's address. Real loopback sockets;
// every wait bounded by hangGuard.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/wirefox"
	"github.com/stretchr/testify/require"
)

// blindSources is a listener's PacketConn on which one attacker socket
// stands for many blind sources: each datagram from the attacker starts
// with a 4-byte source number, stripped, and reads as coming from that
// source's address (10.x.y.z:9); what the listener sends to those
// addresses is counted and goes nowhere. Other datagrams pass unchanged.
type blindSources struct {
	net.PacketConn
	attacker net.Addr

	mu       sync.Mutex
	received map[int]int // bytes the listener read from each source
	sent     map[int]int // bytes the listener sent each source
}

func sourceAddr(i int) *net.UDPAddr {
	return &net.UDPAddr{IP: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)), Port: 9}
}

func sourceOf(a net.Addr) (int, bool) {
	u, ok := a.(*net.UDPAddr)
	if !ok || u.Port != 9 || u.IP.To4() == nil || u.IP.To4()[0] != 10 {
		return 0, false
	}
	ip := u.IP.To4()
	return int(ip[1])<<16 | int(ip[2])<<8 | int(ip[3]), true
}

func (c *blindSources) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, from, err := c.PacketConn.ReadFrom(p)
		if err != nil || keyOf(from) != keyOf(c.attacker) {
			return n, from, err
		}
		if n < 4 {
			continue
		}
		i := int(binary.BigEndian.Uint32(p))
		copy(p, p[4:n])
		c.mu.Lock()
		c.received[i] += n - 4
		c.mu.Unlock()
		return n - 4, sourceAddr(i), nil
	}
}

func (c *blindSources) WriteTo(p []byte, to net.Addr) (int, error) {
	if i, ok := sourceOf(to); ok {
		c.mu.Lock()
		c.sent[i] += len(p)
		c.mu.Unlock()
		return len(p), nil
	}
	return c.PacketConn.WriteTo(p, to)
}

// wirefoxHello is an out-of-band CONNECT_ATTEMPT of op from peer.
func wirefoxHello(peer uint64, op uint8, data ...byte) []byte {
	h := wirefox.Handshake{Version: wirefox.Version, PeerID: peer, Op: op, Data: data}
	return wirefox.AppendOOB(nil, 0, wirefox.AppendHandshake(nil, &h))
}

// TestWirefoxBlindSourcesNotAccepted: 20,000 blind sources each complete
// a Wirefox message listener's handshake as far as a blind source can:
// INITIAL_CLIENT, UNENCRYPTED_ACK, then a connected datagram with a
// message, acknowledging the datagram IDs a guess would try. Protection:
// a conn opens only once the client acknowledged a probe sent to its
// address (internal/wirefox, the server's proof). None reaches Accept,
// each source is sent at most 3 times what it sent, and a real client
// connects and exchanges messages during the flood.
func TestWirefoxBlindSourcesNotAccepted(t *testing.T) {
	const sources = 20000
	attacker := udpSocket(t, nil, 0)
	defer attacker.Close()
	pc := &blindSources{PacketConn: udpSocket(t, nil, 0), attacker: attacker.LocalAddr(),
		received: map[int]int{}, sent: map[int]int{}}
	cfg := &Config{Protocol: Wirefox}
	ln := ServerMessages(pc, cfg)
	defer ln.Close()

	accepted := make(chan *MessageConn, 1) // the real client's
	var blindAccepted atomic.Int64
	go func() {
		for {
			c, err := ln.AcceptMessages()
			if err != nil {
				return
			}
			if _, blind := sourceOf(c.RemoteAddr()); blind {
				blindAccepted.Add(1)
				c.Close()
				continue
			}
			accepted <- c
		}
	}()

	guesses := []uint32{0, 1, 2, 1<<31 + 1, 1<<31 + 2, 1<<32 - 1}
	flood := func(i int) {
		peer := uint64(i)<<8 | 1
		d := wirefox.Datagram{Flags: wirefox.FlagDAT | wirefox.FlagLNK, ID: 0, Acks: guesses}
		d.Data = wirefox.AppendPacket(nil, &wirefox.Packet{Options: wirefox.OptReliable, Body: []byte{wirefox.CmdUser, 'x'}})
		d.DataLen = uint16(len(d.Data))
		for _, b := range [][]byte{wirefoxHello(peer, wirefox.OpInitialClient, 0), wirefoxHello(peer, wirefox.OpUnencryptedAck), wirefox.AppendDatagram(nil, &d)} {
			_, err := attacker.WriteTo(append(binary.BigEndian.AppendUint32(nil, uint32(i)), b...), pc.LocalAddr())
			require.NoError(t, err)
		}
	}
	var wg sync.WaitGroup
	half := make(chan struct{})
	wg.Go(func() {
		for i := range sources {
			flood(i)
			if i == sources/2 {
				close(half)
			}
			if i%10 == 9 {
				// About 2,000 sources a second: the backlog (128) turns
				// over in 64 ms, time for the real client's two round
				// trips (the handshake, then the proof) on a busy host.
				time.Sleep(5 * time.Millisecond)
			}
		}
	})

	<-half
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	c, err := DialMessages(ctx, "udp", ln.Addr().String(), cfg)
	require.NoError(t, err)
	defer c.Close()
	var s *MessageConn
	select {
	case s = <-accepted:
	case <-time.After(hangGuard):
		t.Fatalf("the real client was not accepted (%d blind sources were)", blindAccepted.Load())
	}
	require.Equal(t, keyOf(c.LocalAddr()), keyOf(s.RemoteAddr()))
	require.NoError(t, c.SetDeadline(time.Now().Add(hangGuard)))
	require.NoError(t, s.SetDeadline(time.Now().Add(hangGuard)))
	for i := range 10 {
		m := []byte(fmt.Sprintf("\x0fping %d", i))
		require.NoError(t, c.WriteMessage(Message{Data: m}))
		got, err := s.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, m, got.Data)
		require.NoError(t, s.WriteMessage(Message{Data: append(m, '!')}))
		got, err = c.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, append(m, '!'), got.Data)
	}
	wg.Wait()

	// Every half-open conn ends (the proof's 2 s); none was accepted.
	require.Eventually(t, func() bool {
		ln.listener.q.mu.Lock()
		defer ln.listener.q.mu.Unlock()
		return len(ln.listener.q.pending) == 0
	}, hangGuard, 10*time.Millisecond, "the blind sources' conns ended")
	require.Zero(t, blindAccepted.Load(), "blind sources accepted")
	pc.mu.Lock()
	defer pc.mu.Unlock()
	answered := 0
	for i := range sources {
		require.LessOrEqual(t, pc.sent[i], 3*pc.received[i], "source %d", i)
		if pc.sent[i] > 0 {
			answered++
		}
	}
	t.Logf("%d of %d sources answered; listener stats %+v", answered, sources, ln.Stats())
	require.Positive(t, answered)
}

// wirefoxMessagePair returns a Wirefox message conn pair whose listener
// takes the datagrams of the returned attacker socket as the client's,
// and the listener's address.
func wirefoxMessagePair(t *testing.T) (c, s *MessageConn, attacker net.PacketConn, target net.Addr) {
	t.Helper()
	attacker = udpSocket(t, nil, 0)
	t.Cleanup(func() { attacker.Close() })
	cfg := &Config{Protocol: Wirefox}
	cpc := udpSocket(t, nil, 2)
	spc := &spoofConn{PacketConn: udpSocket(t, nil, 1), attacker: attacker.LocalAddr(), victim: cpc.LocalAddr()}
	ln := ServerMessages(spc, cfg)
	c = ClientMessages(cpc, ln.Addr(), cfg)
	require.NoError(t, c.SetDeadline(time.Now().Add(hangGuard)))
	require.NoError(t, c.WriteMessage(Message{Data: []byte("\x0fhello")}))
	s, err := ln.AcceptMessages()
	require.NoError(t, err)
	require.NoError(t, s.SetDeadline(time.Now().Add(hangGuard)))
	m, err := s.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, []byte("\x0fhello"), m.Data)
	t.Cleanup(func() {
		c.Close()
		s.Close()
		ln.Close()
	})
	return c, s, attacker, spc.LocalAddr()
}

// exchangeMessages sends n messages each way between c and s and checks
// each end reads exactly the other's, in order (one at a time).
func exchangeMessages(t *testing.T, c, s *MessageConn, n int, tag string) {
	t.Helper()
	for i := range n {
		m := []byte(fmt.Sprintf("\x0f%s %d", tag, i))
		require.NoError(t, c.WriteMessage(Message{Data: m}))
		got, err := s.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, string(m), string(got.Data))
		require.NoError(t, s.WriteMessage(Message{Data: append(m, '!')}))
		got, err = c.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, string(append(m, '!')), string(got.Data))
	}
}

// messageConnStats returns s's engine counters.
func messageConnStats(s *MessageConn) (challenges, refused uint64) {
	s.a.mu.Lock()
	defer s.a.mu.Unlock()
	st := s.a.eng.Stats()
	return st.Challenges, st.SpoofsRefused
}

// TestWirefoxSpoofedRestartMessageConn: while a Wirefox message conn
// carries messages, a blind attacker sends the listener, from the
// client's address, INITIAL_CLIENT with a new PeerID every 5 ms.
// Protection: the restart is challenged (the live client acknowledges a
// keepalive probe). The conn keeps working and counts refused spoofs.
func TestWirefoxSpoofedRestartMessageConn(t *testing.T) {
	c, s, attacker, target := wirefoxMessagePair(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			_, _ = attacker.WriteTo(wirefoxHello(0x5b00f, wirefox.OpInitialClient, 0), target)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	deadline := time.Now().Add(hangGuard)
	for {
		exchangeMessages(t, c, s, 10, "live")
		if _, refused := messageConnStats(s); refused >= 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no spoof refused")
	}
	close(stop)
	wg.Wait()
	exchangeMessages(t, c, s, 10, "after")
}

// recordingConn records every datagram written through it.
type recordingConn struct {
	net.PacketConn
	mu  sync.Mutex
	log [][]byte
}

func (c *recordingConn) WriteTo(p []byte, to net.Addr) (int, error) {
	c.mu.Lock()
	c.log = append(c.log, bytes.Clone(p))
	c.mu.Unlock()
	return c.PacketConn.WriteTo(p, to)
}

// TestWirefoxReplayedOldSession: an attacker opens a session of its own
// with the listener, exchanges messages (or stream data) and closes it,
// recording everything it sent; it then replays all of it, again and
// again, from the address of a live client. Protection: datagram IDs
// start at random, so the old session's datagrams fall outside the live
// one's history, and restarts are challenged. The live message conn, and
// the live stream, keep working and take nothing of the replay.
func TestWirefoxReplayedOldSession(t *testing.T) {
	t.Run("message", func(t *testing.T) {
		c, s, attacker, target := wirefoxMessagePair(t)
		rec := &recordingConn{PacketConn: udpSocket(t, nil, 3)}
		old := ClientMessages(rec, target, &Config{Protocol: Wirefox})
		require.NoError(t, old.SetDeadline(time.Now().Add(hangGuard)))
		for i := range 100 { // about a datagram each
			m := append([]byte(fmt.Sprintf("\x0fold %d ", i)), make([]byte, 1000)...)
			require.NoError(t, old.WriteMessage(Message{Data: m}))
		}
		require.NoError(t, old.Close())
		<-old.Done()
		rec.mu.Lock()
		replay := rec.log
		rec.mu.Unlock()
		require.Greater(t, len(replay), 100)
		exchangeMessages(t, c, s, 5, "before")
		for range 3 {
			for _, b := range replay {
				_, _ = attacker.WriteTo(b, target)
			}
			exchangeMessages(t, c, s, 5, "live")
		}
		select {
		case <-s.Done():
			t.Fatalf("the live conn ended: %v", s.failure())
		default:
		}
	})
	t.Run("stream", func(t *testing.T) {
		c, s, attacker, target := spoofedPair(t, Wirefox, true)
		rec := &recordingConn{PacketConn: udpSocket(t, nil, 3)}
		old := Client(rec, target, &Config{Protocol: Wirefox})
		require.NoError(t, old.SetDeadline(time.Now().Add(hangGuard)))
		_, err := old.Write(randomBytes(64<<10, 5))
		require.NoError(t, err)
		require.NoError(t, old.Close())
		rec.mu.Lock()
		replay := rec.log
		rec.mu.Unlock()
		require.Greater(t, len(replay), 3)
		transferUnder(t, c, s, func(stop <-chan struct{}) {
			for {
				for _, b := range replay {
					_, _ = attacker.WriteTo(b, target)
				}
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	})
}
