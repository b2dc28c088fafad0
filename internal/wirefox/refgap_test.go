package wirefox

import (
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestReferenceDataGap: with ReferencePeer, a datagram carrying packets
// leaves at least refDataGap (7.5 ms) after the session's previous
// datagram of any kind, off the 5 ms beat of the reference's worker timer,
// whose ack-only datagram would otherwise race the reference's socket
// thread over its ACK list; other datagrams keep the 5 ms cadence. A bulk
// of messages still flows.
func TestReferenceDataGap(t *testing.T) {
	cfg := Config{ReferencePeer: true}
	p := newPair(t, cfg, cfg, 0, 0, 1)
	connect(t, p)
	a, b := p.A, p.B
	for i := range 200 {
		require.NoError(t, a.Send(append([]byte{CmdUser}, make([]byte, 1000+i)...), engine.SendOptions{Channel: 1}))
	}
	buf, out := make([]byte, MTU), make([]byte, MTU)
	now := p.Now
	var last time.Time
	data := 0
	for end := now.Add(5 * time.Second); now.Before(end) && a.Pending() > 0; now = now.Add(100 * time.Microsecond) {
		for n := a.Poll(now, buf); n > 0; n = a.Poll(now, buf) {
			var d Datagram
			require.NoError(t, ParseDatagram(buf[:n], &d))
			if !last.IsZero() {
				gap := now.Sub(last)
				require.GreaterOrEqual(t, gap, refTick, "datagram %d", d.ID)
				if d.Flags&FlagDAT != 0 && len(d.Data) >= minPacket {
					require.GreaterOrEqual(t, gap, refDataGap, "data datagram %d", d.ID)
					data++
				}
			}
			last = now
			require.NoError(t, b.HandleDatagram(now, buf[:n]))
		}
		for n := b.Poll(now, out); n > 0; n = b.Poll(now, out) {
			require.NoError(t, a.HandleDatagram(now, out[:n]))
		}
		drain(b)
	}
	require.Zero(t, a.Pending(), "all acknowledged")
	require.Greater(t, data, 100)
}
