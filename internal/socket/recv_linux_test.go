package socket

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBatchReaderSenders reads datagrams from IPv4 and IPv6 loopback peers
// with the batch reader: each comes with its bytes, the key its peer's
// association has, and the peer's address.
func TestBatchReaderSenders(t *testing.T) {
	for _, network := range []string{"udp4", "udp6"} {
		t.Run(network, func(t *testing.T) {
			host := map[string]string{"udp4": "127.0.0.1:0", "udp6": "[::1]:0"}[network]
			rx, err := net.ListenPacket(network, host)
			if err != nil {
				t.Skipf("no %s loopback: %v", network, err)
			}
			defer rx.Close()
			tx, err := net.ListenPacket(network, host)
			require.NoError(t, err)
			defer tx.Close()
			for i := range 3 {
				_, err := tx.WriteTo([]byte{byte(i), 1, 2}, rx.LocalAddr())
				require.NoError(t, err)
			}
			r := newBatchReader(rx.(*net.UDPConn), readBatch, MaxDatagram+1, nil, MaxDatagram)
			require.NoError(t, rx.SetReadDeadline(time.Now().Add(ioBound)))
			for got := 0; got < 3; {
				ms, err := r.Read()
				require.NoError(t, err)
				for i := range ms {
					m := &ms[i]
					require.Equal(t, []byte{byte(got), 1, 2}, m.Data())
					require.Equal(t, KeyOf(tx.LocalAddr()), m.Key())
					require.Equal(t, tx.LocalAddr().String(), m.Sender().String())
					got++
				}
			}
		})
	}
}
