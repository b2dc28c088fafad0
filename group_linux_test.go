package rudp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBindGroupSpreads: bindGroup binds four sockets to one port, and the
// kernel hands each of 32 sources' datagrams to one of them, in order,
// and the sources to more than one (all to one of four: probability
// 4 × 4⁻³²).
func TestBindGroupSpreads(t *testing.T) {
	pcs, err := bindGroup(t.Context(), "udp", "127.0.0.1:0", 4, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Len(t, pcs, 4)
	for _, pc := range pcs {
		defer pc.Close()
		require.Equal(t, pcs[0].LocalAddr().String(), pc.LocalAddr().String())
	}
	const sources, each = 32, 3
	for range sources {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		require.NoError(t, err)
		defer c.Close()
		for n := range each {
			_, err := c.WriteTo(fmt.Appendf(nil, "%s %d", c.LocalAddr(), n), pcs[0].LocalAddr())
			require.NoError(t, err)
		}
	}
	at := map[string]int{}       // the socket each source reached
	got := map[string][]string{} // each source's datagrams
	used := 0
	for i, pc := range pcs {
		n := 0
		buf := make([]byte, 100)
		for {
			require.NoError(t, pc.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
			k, from, err := pc.ReadFrom(buf)
			if err != nil {
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
				break
			}
			src := from.String()
			if j, ok := at[src]; ok {
				require.Equal(t, j, i, "%v reached two sockets", src)
			}
			at[src] = i
			got[src] = append(got[src], string(buf[:k]))
			n++
		}
		if n > 0 {
			used++
		}
	}
	require.Len(t, got, sources)
	for src, ds := range got {
		require.Equal(t, []string{src + " 0", src + " 1", src + " 2"}, ds)
	}
	require.Greater(t, used, 1, "sources spread over the sockets")
}

// TestBindGroupPortInUse: a port bound by another socket, alone or in a
// SO_REUSEPORT group of its own, fails the listen with EADDRINUSE, as
// with one socket: the group does not join it.
func TestBindGroupPortInUse(t *testing.T) {
	plain, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer plain.Close()
	other, err := bindGroup(t.Context(), "udp", "127.0.0.1:0", 2, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	for _, pc := range other {
		defer pc.Close()
	}
	for _, addr := range []net.Addr{plain.LocalAddr(), other[0].LocalAddr()} {
		_, err := bindGroup(t.Context(), "udp", addr.String(), 2, slog.New(slog.DiscardHandler))
		require.ErrorIs(t, err, syscall.EADDRINUSE, "%v", addr)
		lc := ListenConfig{Sockets: 2}
		_, err = lc.ListenStreams(t.Context(), "udp", addr.String())
		require.ErrorIs(t, err, syscall.EADDRINUSE, "%v", addr)
	}
}

// TestListenSockets: a listener reading a group of three sockets accepts
// 12 streams, each echoing 64 KiB; ListenConfig.Sockets beyond
// MaxListenSockets, or negative, fails the listen.
func TestListenSockets(t *testing.T) {
	lc := ListenConfig{Sockets: 3}
	ln, err := lc.ListenStreams(t.Context(), "udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	const streams = 12
	errc := make(chan error, streams)
	for i := range streams {
		go func() {
			errc <- func() error {
				ctx, cancel := context.WithTimeout(context.Background(), ioBound)
				defer cancel()
				var d Dialer
				c, err := d.DialStream(ctx, "udp", ln.Addr().String())
				if err != nil {
					return err
				}
				defer c.Close()
				msg := bytes.Repeat([]byte{byte(i)}, 64<<10)
				go func() {
					_, _ = c.Write(msg)
					_ = c.CloseWrite()
				}()
				got, err := io.ReadAll(c)
				if err != nil {
					return err
				}
				if !bytes.Equal(msg, got) {
					return fmt.Errorf("stream %d: echo of %d bytes differs", i, len(got))
				}
				return nil
			}()
		}()
	}
	for range streams {
		require.NoError(t, <-errc)
	}
	for _, n := range []int{-1, MaxListenSockets + 1} {
		lc := ListenConfig{Sockets: n}
		_, err := lc.ListenStreams(t.Context(), "udp", "127.0.0.1:0")
		require.ErrorContains(t, err, "ListenConfig.Sockets", "Sockets %d", n)
	}
}
