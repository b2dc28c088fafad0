package rudp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"

	"github.com/rudpkit/rudp/internal/socket"
	"github.com/stretchr/testify/require"
)

// TestBindGroupPortInUse: a port bound by another socket, alone or in a
// SO_REUSEPORT group of its own, fails the listen with EADDRINUSE, as
// with one socket: the group does not join it.
func TestBindGroupPortInUse(t *testing.T) {
	plain, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer plain.Close()
	other, err := socket.BindGroup(t.Context(), "udp", "127.0.0.1:0", 2, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	for _, pc := range other {
		defer pc.Close()
	}
	for _, addr := range []net.Addr{plain.LocalAddr(), other[0].LocalAddr()} {
		_, err := socket.BindGroup(t.Context(), "udp", addr.String(), 2, slog.New(slog.DiscardHandler))
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
