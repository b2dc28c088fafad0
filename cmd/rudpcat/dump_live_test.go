package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rudpkit/rudp"
)

// recordingPC records the datagrams a PacketConn sends and receives, in
// order.
type recordingPC struct {
	net.PacketConn
	mu  sync.Mutex
	log [][]byte
}

func (c *recordingPC) record(p []byte) {
	c.mu.Lock()
	c.log = append(c.log, bytes.Clone(p))
	c.mu.Unlock()
}

func (c *recordingPC) WriteTo(p []byte, to net.Addr) (int, error) {
	c.record(p)
	return c.PacketConn.WriteTo(p, to)
}

func (c *recordingPC) ReadFrom(p []byte) (int, net.Addr, error) {
	n, from, err := c.PacketConn.ReadFrom(p)
	if err == nil {
		c.record(p[:n])
	}
	return n, from, err
}

// TestDumpLiveCapture: a message conn of every protocol exchanges 20
// messages each way over loopback and closes; every datagram its client
// sent or received, written to a pcap, decodes with dump -p without an
// error, one datagram line each, and each message sent shows as a frame
// with its length.
func TestDumpLiveCapture(t *testing.T) {
	for _, p := range rudp.Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			spc, err := net.ListenPacket("udp", "127.0.0.1:0")
			require.NoError(t, err)
			cpc, err := net.ListenPacket("udp", "127.0.0.1:0")
			require.NoError(t, err)
			rec := &recordingPC{PacketConn: cpc}
			cfg := &rudp.Config{Protocol: p}
			ln := rudp.ServerMessages(spc, cfg)
			defer ln.Close()
			c := rudp.ClientMessages(rec, ln.Addr(), cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			require.NoError(t, c.Handshake(ctx))
			msg := func(i int) rudp.Message {
				m := rudp.Message{Data: fmt.Appendf(nil, "\x0fmessage %02d", i)}
				if p == rudp.LLUDP {
					m.Number = 3
				}
				return m
			}
			require.NoError(t, c.WriteMessage(msg(0)))
			s, err := ln.AcceptMessages()
			require.NoError(t, err)
			require.NoError(t, s.SetDeadline(time.Now().Add(20*time.Second)))
			require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
			for i := range 20 {
				if i > 0 {
					require.NoError(t, c.WriteMessage(msg(i)))
				}
				got, err := s.ReadMessage()
				require.NoError(t, err)
				require.NoError(t, s.WriteMessage(rudp.Message{Data: got.Data, Number: got.Number}))
				_, err = c.ReadMessage()
				require.NoError(t, err)
			}
			require.NoError(t, c.Close())
			<-c.Done()
			s.Close()

			rec.mu.Lock()
			log := rec.log
			rec.mu.Unlock()
			lines := dumpLines(t, "-p", p.String(), writePcap(t, log))
			datagrams := 0
			for _, l := range lines {
				require.NotContains(t, l, "error:", "%v", lines)
				if !strings.HasPrefix(l, "    ") {
					datagrams++
					require.Contains(t, l, " "+p.String()+" ", l)
				}
			}
			require.Equal(t, len(log), datagrams)
			want := fmt.Sprintf("length=%d", len(msg(0).Data))
			frames := 0
			for _, l := range lines {
				if strings.HasPrefix(l, "    ") && strings.Contains(l, want) {
					frames++
				}
			}
			require.GreaterOrEqual(t, frames, 40, "each message each way")
		})
	}
}
