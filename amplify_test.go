package rudp

import (
	"errors"
	"net"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAmplificationLimit: a source that sends a listener one opening and
// then nothing (a spoofed address, which never sees the answers) is sent
// at most 3 × the opening's bytes (RFC 9000 §8.1) over the listener's
// whole handshake timeout, by every protocol's stream and message
// listener. The handshake timeout is a minute of virtual time, over
// which every engine would send its answer many times: the limit, not
// the engine's resend schedule, is what holds the bytes down, and the
// listener's answer stops at it.
func TestAmplificationLimit(t *testing.T) {
	for _, p := range Protocols() {
		for _, stream := range []bool{true, false} {
			name, open := p.String()+"/stream", openingOf(t, p)
			if !stream {
				name, open = p.String()+"/message", firstDatagramOf(t, p, false)
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					vp := newVPath(t, 0)
					cfg := vcfg(Config{Protocol: p, HandshakeTimeout: time.Minute})
					var closer interface{ Close() error }
					if stream {
						closer = Server(vp.server, cfg)
					} else {
						closer = ServerMessages(vp.server, cfg)
					}
					defer closer.Close()
					src := vp.client
					_, err := src.WriteTo(open, vp.server.LocalAddr())
					require.NoError(t, err)
					time.Sleep(time.Minute + time.Second) // the half-open peer ends
					got := 0
					buf := make([]byte, 2048)
					for {
						require.NoError(t, src.SetReadDeadline(time.Now().Add(time.Millisecond)))
						n, _, err := src.ReadFrom(buf)
						if err != nil {
							var ne net.Error
							require.True(t, errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout(), "%v", err)
							break
						}
						got += n
					}
					require.LessOrEqual(t, got, 3*len(open), "answered %d bytes to a %d-byte opening", got, len(open))
				})
			})
		}
	}
}
