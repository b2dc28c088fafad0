package socket

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSizeBuffers: a socket gets BufferSize bytes of receive buffer
// where the system's maximum allows it, or the process may force it, and
// otherwise the maximum, with one warning per process.
func TestSizeBuffers(t *testing.T) {
	raw, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	require.NoError(t, err)
	rmemMax, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	require.NoError(t, err)

	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	bufferWarning = sync.Once{}
	for range 2 {
		uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		defer uc.Close()
		sizeBuffers(uc, log)
		rc, err := uc.SyscallConn()
		require.NoError(t, err)
		var got int
		var ok bool
		require.NoError(t, rc.Control(func(fd uintptr) { got, ok = recvBuffer(fd) }))
		require.True(t, ok)
		if rmemMax >= BufferSize {
			require.Equal(t, BufferSize, got)
		} else if got != BufferSize { // not forced: no CAP_NET_ADMIN
			require.Equal(t, rmemMax, got)
		}
		warned := strings.Count(logged.String(), "smaller UDP receive buffer")
		if got < BufferSize {
			require.Equal(t, 1, warned, "warned once per process")
		} else {
			require.Zero(t, warned)
		}
	}
}
