package rudp

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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
	require.Len(t, login, 16)
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
