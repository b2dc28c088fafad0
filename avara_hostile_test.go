package rudp

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/avara"
	"github.com/stretchr/testify/require"
)

// spoofedLogin returns a 16-byte Avara Login with an empty password, as an
// unpadded client sends it (serial 0, p3 a seed).
func spoofedLogin() []byte {
	d := avara.Datagram{Ack: avara.NothingReceived, Messages: []avara.Message{{
		Command: avara.CommandLogin, P3: -0x12345678, Data: []byte{0}, Sender: -1, HasSender: true}}}
	return avara.AppendDatagram(nil, &d, DefaultAvaraVersion)
}

// TestAvaraSpoofedLoginAmplification: 20 blind sources each send an
// Avara message listener 1 to 3 copies of a 16-byte Login and read what
// comes back until their logins have timed out. Protection: a login is
// validated (its TOC acknowledged) before it opens, and until then the
// listener sends at most 3 times the bytes it received from the address.
func TestAvaraSpoofedLoginAmplification(t *testing.T) {
	const sources = 20
	login := spoofedLogin()
	require.Len(t, login, 16)
	ln := ServerMessages(udpSocket(t, nil, 0), &Config{Protocol: Avara})
	defer ln.Close()
	a := newAttackers(t, sources)
	sent := make([]int, sources)
	blindFlood(t, &ln.listener, a, login)
	for i, pc := range a {
		sent[i] += len(login)
		for range i % 3 { // copies, once the listener has the first
			_, err := pc.WriteTo(login, ln.Addr())
			require.NoError(t, err)
			sent[i] += len(login)
		}
	}
	// The logins time out 4 s after they arrived
	// (avara.DefaultServerHandshakeTimeout): wait a second more, then
	// read what each source was sent.
	time.Sleep(avara.DefaultServerHandshakeTimeout + time.Second)
	total := 0
	buf := make([]byte, 2048)
	for i, pc := range a {
		got := 0
		require.NoError(t, pc.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				break
			}
			if keyOf(from) == keyOf(ln.Addr()) {
				got += n
			}
		}
		require.LessOrEqual(t, got, 3*sent[i], "source %d sent %d bytes", i, sent[i])
		total += got
	}
	require.Positive(t, total, "the listener answered the logins sent again")
	require.Eventually(t, func() bool {
		ln.listener.q.mu.Lock()
		defer ln.listener.q.mu.Unlock()
		return len(ln.listener.q.pending) == 0
	}, hangGuard, 10*time.Millisecond, "the unvalidated logins ended")
}

// TestAvaraSpoofedLoginsTakeNoSlot: 1,000 blind sources each send an
// Avara message listener a Login, which costs it less than 1 MiB, and
// send it again while 7 real clients join. Protection: a login takes a
// player id and is listed in the table only once it acknowledged its
// TOC; the half-open logins are bounded by the backlog. Every real
// client joins, with ids 1..7, and every client's table lists the 7 real
// clients only.
func TestAvaraSpoofedLoginsTakeNoSlot(t *testing.T) {
	const sources = 1000
	login := spoofedLogin()
	cfg := &Config{Protocol: Avara}
	ln := ServerMessages(udpSocket(t, nil, 0), cfg)
	defer ln.Close()
	a := newAttackers(t, sources)
	before := heapAlloc()
	blindFlood(t, &ln.listener, a, login)
	growth := int64(heapAlloc()) - int64(before)
	t.Logf("heap growth %d bytes after %d spoofed logins", growth, sources)
	require.Less(t, growth, int64(1<<20))

	var wg sync.WaitGroup
	flood := make(chan struct{})
	wg.Go(func() { // the rest of the flood, while the clients join
		defer close(flood)
		for _, pc := range a {
			_, _ = pc.WriteTo(login, ln.Addr())
			time.Sleep(200 * time.Microsecond)
		}
	})
	var clients []*MessageConn
	for range MaxAvaraClients {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		c, err := DialMessages(ctx, "udp", ln.Addr().String(), cfg)
		cancel()
		require.NoError(t, err)
		defer c.Close()
		clients = append(clients, c)
		s := accept(t, ln).(*MessageConn)
		defer s.Close()
		require.Equal(t, c.AvaraClientID(), s.AvaraClientID())
	}
	<-flood
	wg.Wait()
	ids := make([]int8, 0, len(clients))
	for _, c := range clients {
		ids = append(ids, c.AvaraClientID())
	}
	slices.Sort(ids)
	require.Equal(t, []int8{1, 2, 3, 4, 5, 6, 7}, ids)
	waitTables(t, clients)
	for _, p := range clients[0].AvaraPeers() {
		require.True(t, slices.ContainsFunc(clients, func(c *MessageConn) bool { return addrPortOf(c.LocalAddr()) == p.Addr }))
	}
}

// TestAvaraLoginTableListsValidated: the TOC a new client receives lists
// the validated clients and itself, not a login still unvalidated from a
// spoofed address.
func TestAvaraLoginTableListsValidated(t *testing.T) {
	cfg := &Config{Protocol: Avara}
	ln := ServerMessages(udpSocket(t, nil, 0), cfg)
	defer ln.Close()
	spoofer := newAttackers(t, 1)[0]
	_, err := spoofer.WriteTo(spoofedLogin(), ln.Addr())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return admitted(&ln.listener) == 1 }, hangGuard, time.Millisecond)
	c, err := avaraDial(t, ln.Addr(), cfg)
	require.NoError(t, err)
	defer accept(t, ln).Close()
	require.Equal(t, []AvaraPeer{{ID: c.AvaraClientID(), Addr: addrPortOf(c.LocalAddr())}}, c.AvaraPeers())
	require.NotEqual(t, int8(1), c.AvaraClientID(), "the spoofed login holds id 1 provisionally")
}
