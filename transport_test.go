package rudp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/net/nettest"
)

// TestTransportNetConn runs the net.Conn conformance suite on streams
// dialed from a Transport that is also listening for streams, to a
// Transport listening.
func TestTransportNetConn(t *testing.T) {
	t.Parallel() // each pipe's Transport Close waits out its conns' close
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			cfg := &Config{Protocol: p}
			a := &Transport{Conn: udpSocket(t, nil, 0), Config: cfg}
			b := &Transport{Conn: udpSocket(t, nil, 0), Config: cfg}
			t.Cleanup(func() { a.Close(); b.Close() })
			la, err := a.Listen()
			require.NoError(t, err)
			defer la.Close()
			lb, err := b.Listen()
			require.NoError(t, err)
			defer lb.Close()
			var closing sync.WaitGroup
			defer closing.Wait()
			nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
				// Each pair needs an address of its own on one side: a
				// fresh dialing Transport (listening too) per pair.
				d := &Transport{Conn: udpSocket(t, nil, 0), Config: cfg}
				if _, err := d.Listen(); err != nil {
					return nil, nil, nil, err
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				c, err := d.Dial(ctx, lb.Addr())
				if err != nil {
					d.Close()
					return nil, nil, nil, err
				}
				s, err := lb.Accept()
				if err != nil {
					d.Close()
					return nil, nil, nil, err
				}
				// The Transport's Close waits out the conns' close (a
				// second's TIME-WAIT on POROUS): each pipe's runs beside
				// the next pipe, and the test waits for all at its end.
				return c, s, func() { c.Close(); s.Close(); closing.Go(func() { d.Close() }) }, nil
			})
		})
	}
}

// TestTransportBothWays: one Transport accepts a stream and a message
// conn and dials three peers at once, each conn moving its own bytes;
// closing one conn leaves the others working; Close ends all of them
// within their linger and leaves no goroutine.
func TestTransportBothWays(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := &Config{Linger: 2 * time.Second}
	hub := &Transport{Conn: udpSocket(t, nil, 0), Config: cfg}
	streams, err := hub.Listen()
	require.NoError(t, err)
	messages, err := hub.ListenMessages()
	require.NoError(t, err)
	_, err = hub.Listen()
	require.Error(t, err, "one stream listener per Transport")

	// Three peers listening; the hub dials each at once.
	var peers []*Transport
	var peerLn []*Listener
	for range 3 {
		p := &Transport{Conn: udpSocket(t, nil, 0), Config: cfg}
		ln, err := p.Listen()
		require.NoError(t, err)
		peers, peerLn = append(peers, p), append(peerLn, ln)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialed := make([]*Conn, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			c, err := hub.Dial(ctx, peers[i].Addr())
			require.NoError(t, err)
			dialed[i] = c
		})
	}
	wg.Wait()
	accepted := make([]net.Conn, 3)
	for i, ln := range peerLn {
		accepted[i] = accept(t, ln)
	}
	_, err = hub.Dial(ctx, peers[0].Addr())
	require.ErrorContains(t, err, "has a conn on this Transport already")

	// A stream and a message conn dialed to the hub.
	in := &Transport{Conn: udpSocket(t, nil, 0), Config: cfg}
	cs, err := in.Dial(ctx, hub.Addr())
	require.NoError(t, err)
	ss := accept(t, streams)
	inM := &Transport{Conn: udpSocket(t, nil, 0), Config: cfg}
	cm, err := inM.DialMessages(ctx, hub.Addr())
	require.NoError(t, err)
	sm, err := messages.AcceptMessages()
	require.NoError(t, err)

	roundTrip := func(w, r net.Conn, msg string) {
		t.Helper()
		_, err := w.Write([]byte(msg))
		require.NoError(t, err)
		buf := make([]byte, len(msg))
		require.NoError(t, r.SetReadDeadline(time.Now().Add(ioBound)))
		_, err = io.ReadFull(r, buf)
		require.NoError(t, err)
		require.Equal(t, msg, string(buf))
	}
	for i := range 3 {
		roundTrip(dialed[i], accepted[i], "to peer "+string(rune('0'+i)))
		roundTrip(accepted[i], dialed[i], "from peer "+string(rune('0'+i)))
	}
	roundTrip(cs, ss, "stream in")
	roundTrip(ss, cs, "stream out")
	require.NoError(t, cm.WriteMessage(Message{Data: []byte("message in")}))
	m, err := sm.ReadMessage()
	require.NoError(t, err)
	require.Equal(t, "message in", string(m.Data))

	// Closing one conn leaves the others alone.
	require.NoError(t, dialed[0].Close())
	_, err = accepted[0].Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	roundTrip(dialed[1], accepted[1], "still here")
	roundTrip(ss, cs, "still here")

	// Close ends every conn on the hub within its linger.
	start := time.Now()
	big := bytes.Repeat([]byte("x"), 256<<10)
	go func() { _, _ = dialed[2].Write(big) }()
	require.NoError(t, hub.Close())
	require.Less(t, time.Since(start), cfg.Linger+time.Second, "Close within the linger")
	for _, c := range []net.Conn{dialed[1], dialed[2], ss} {
		<-c.(*Conn).Done()
	}
	<-sm.Done()
	require.ErrorIs(t, hub.Close(), net.ErrClosed)
	_, err = hub.Dial(ctx, peers[1].Addr())
	require.True(t, errors.Is(err, net.ErrClosed), "%v", err)

	for _, c := range []net.Conn{cs, cm} {
		c.Close()
	}
	for _, c := range accepted {
		c.Close()
	}
	for _, p := range append(peers, in, inM) {
		require.NoError(t, p.Close())
	}
}

// TestTransportHardening: a Transport that listens for both kinds of conn
// and has dialed a stream of its own takes a blind flood of both kinds of
// opening as a listener does: no conn reaches Accept, the half-open peers
// stay within each listener's backlog, and its own stream goes on.
func TestTransportHardening(t *testing.T) {
	const sources = 1000
	for _, hp := range hostileProtocols {
		t.Run(hp.String(), func(t *testing.T) {
			cfg := &Config{Protocol: hp.Protocol}
			tr := &Transport{Conn: udpSocket(t, nil, 0), Config: cfg}
			defer tr.Close()
			streams, err := tr.Listen()
			require.NoError(t, err)
			messages, err := tr.ListenMessages()
			require.NoError(t, err)
			peer := &Transport{Conn: udpSocket(t, nil, 0), Config: cfg}
			defer peer.Close()
			pl, err := peer.Listen()
			require.NoError(t, err)
			echoServer(t, pl)
			ctx, cancel := context.WithTimeout(context.Background(), ioBound)
			defer cancel()
			own, err := tr.Dial(ctx, peer.Addr())
			require.NoError(t, err)
			defer own.Close()
			bound(t, own)

			blindFlood(t, &streams.listener, newAttackers(t, sources), firstDatagramOf(t, hp.Protocol, true))
			require.Zero(t, streams.Stats().BacklogDrops, "every opening was taken as one")
			if hp.blind != nil { // see hostileProtocols: an LLUDP circuit opens at its first datagram
				blindFlood(t, &messages.listener, newAttackers(t, sources), firstDatagramOf(t, hp.Protocol, false))
				require.Zero(t, messages.Stats().BacklogDrops, "every opening was taken as one")
			}
			streams.listener.q.mu.Lock()
			require.Empty(t, streams.listener.q.queue, "no blind source is ready for Accept")
			require.LessOrEqual(t, len(streams.listener.q.pending), DefaultBacklog)
			streams.listener.q.mu.Unlock()
			messages.listener.q.mu.Lock()
			require.Empty(t, messages.listener.q.queue, "no blind source is ready for Accept")
			require.LessOrEqual(t, len(messages.listener.q.pending), DefaultBacklog)
			messages.listener.q.mu.Unlock()

			msg := []byte("still here after the flood")
			_, err = own.Write(msg)
			require.NoError(t, err)
			got := make([]byte, len(msg))
			_, err = io.ReadFull(own, got)
			require.NoError(t, err)
			require.Equal(t, msg, got)
		})
	}
}

// TestAcceptContext: every accept's context form returns ctx.Err() when
// its context ends, and the listener goes on accepting after it.
func TestAcceptContext(t *testing.T) {
	ln := Server(udpSocket(t, nil, 0), nil)
	defer ln.Close()
	ml := ServerMessages(udpSocket(t, nil, 0), nil)
	defer ml.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ln.AcceptContext(ctx)
	require.ErrorIs(t, err, context.Canceled)
	_, err = ml.AcceptContext(ctx)
	require.ErrorIs(t, err, context.Canceled)
	dctx, dcancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer dcancel()
	_, err = ln.AcceptContext(dctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	ctx, cancel = context.WithTimeout(context.Background(), ioBound)
	defer cancel()
	d := Dialer{}
	c, err := d.DialStream(ctx, "udp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s, err := ln.AcceptContext(ctx)
	require.NoError(t, err)
	defer s.Close()
	md := MessageDialer{}
	mc, err := md.DialContext(ctx, "udp", ml.Addr().String())
	require.NoError(t, err)
	defer mc.Close()
	ms, err := ml.AcceptContext(ctx)
	require.NoError(t, err)
	defer ms.Close()
}
