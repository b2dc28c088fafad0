package rudp

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/impair"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/stretchr/testify/require"
)

// streamThrough writes n random bytes from c, then closes c for writing,
// and requires that s reads exactly them.
func streamThrough(t *testing.T, c *Conn, s net.Conn, n int) {
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	errc := make(chan error, 1)
	writeThenCloseWrite(c, data, errc)
	got, err := io.ReadAll(s)
	require.NoError(t, err)
	require.True(t, bytes.Equal(data, got), "read %d bytes of %d, not the same", len(got), n)
	require.NoError(t, <-errc)
}

// TestStreamFitsIPv4Path: both ends' sockets drop every datagram above
// 1472 bytes, what a 1500-byte IPv4 path carries unfragmented, as a relay
// on the loopback address in front of such a path would. A POROUS
// stream's datagrams, seal included, fit; its first large frames (see
// largeFrame) do not, so it gives them up and sends what they carried
// again: every byte arrives both ways.
func TestStreamFitsIPv4Path(t *testing.T) {
	cut := &impair.Config{MaxDatagram: porous.MaxFrameSize}
	ln := Server(udpSocket(t, cut, 1), nil)
	cpc := udpSocket(t, cut, 2)
	client := Client(cpc, ln.Addr(), nil)
	t.Cleanup(func() { client.Close(); ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, client.Handshake(ctx))
	sc := accept(t, ln)
	t.Cleanup(func() { sc.Close() })
	bound(t, client, sc)
	streamThrough(t, client, sc, 1<<20)
	streamThrough(t, sc.(*Conn), client, 1<<20)
	if largeFrame(ln.Addr(), loopbackMTU()) > 0 {
		require.NotZero(t, cpc.(*impair.Conn).Stats().TooLarge, "large frames tried")
		require.NotZero(t, client.Stats().Retransmits, "what they carried, sent again")
	}
}
