package rudp

import (
	"io"
	"testing"

	"github.com/pion/transport/v3/test"
	"github.com/stretchr/testify/require"
)

// TestNoGoroutineLeak: after both ends close, every goroutine and socket
// of the conns and the listener is gone.
func TestNoGoroutineLeak(t *testing.T) {
	defer test.CheckRoutines(t)()
	ln := Server(udpSocket(t, nil, 0), nil)
	c := Client(udpSocket(t, nil, 0), ln.Addr(), nil)
	go func() {
		_, _ = c.Write(randomBytes(256<<10, 4))
		_ = c.Close()
	}()
	bound(t, c)
	s := accept(t, ln)
	bound(t, s)
	n, err := io.Copy(io.Discard, s)
	require.NoError(t, err)
	require.EqualValues(t, 256<<10, n)
	require.NoError(t, s.Close())
	require.NoError(t, ln.Close())
}
