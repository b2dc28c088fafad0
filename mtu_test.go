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
	"github.com/rudpkit/rudp/internal/socket"
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

// cutPair returns a dialed and an accepted stream conn whose sockets drop
// every datagram above 1472 bytes, what a 1500-byte IPv4 path carries
// unfragmented, as a relay on the loopback address in front of such a
// path would, and delay the others by delay; and the dialer's socket.
func cutPair(t *testing.T, cfg *Config, delay time.Duration) (client, server *Conn, cpc *impair.Conn) {
	cut := &impair.Config{MaxDatagram: porous.MaxFrameSize, Delay: delay}
	ln := Server(udpSocket(t, cut, 1), cfg)
	cpc = udpSocket(t, cut, 2).(*impair.Conn)
	client = Client(cpc, ln.Addr(), cfg)
	t.Cleanup(func() { client.Close(); ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, client.Handshake(ctx))
	sc := accept(t, ln)
	t.Cleanup(func() { sc.Close() })
	bound(t, client, sc)
	return client, sc.(*Conn), cpc
}

// TestStreamLargeFramesLost: through a relay on the loopback address in
// front of a 1500-byte MTU, each end of a stream tries large frames,
// which are lost; it gives them up for good and sends what they carried
// again, in frames that fit a 1472-byte datagram with the seal: every
// byte arrives both ways.
func TestStreamLargeFramesLost(t *testing.T) {
	if loopbackMTU() < 2*porous.MaxFrameSize {
		t.Skipf("large frames need a loopback MTU of at least 2 × %d bytes; this host's is %d", porous.MaxFrameSize, loopbackMTU())
	}
	client, server, cpc := cutPair(t, nil, 2*time.Millisecond)
	streamThrough(t, client, server, 1<<20)
	streamThrough(t, server, client, 1<<20)
	require.NotZero(t, cpc.Stats().TooLarge, "large frames tried")
	for _, c := range []*Conn{client, server} {
		require.NotZero(t, c.Stats().Retransmits, "what they carried, sent again")
		c.a.mu.Lock()
		maxFrame := c.a.eng.(*porous.Session).MaxFrame()
		c.a.mu.Unlock()
		require.Equal(t, porous.MaxFrameSize-socket.SealLen, maxFrame, "large frames given up")
	}
}
