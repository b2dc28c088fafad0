package rudp

import (
	"net"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/socket"
)

// BenchmarkRejectUnknown: what a datagram from an unknown address that is
// not an opening of the listener's protocol costs the listener: it must
// be dropped without building anything (ns/op and allocs/op per
// datagram).
func BenchmarkRejectUnknown(b *testing.B) {
	garbage := randomBytes(100, 2)
	garbage[0] = 0xff // no protocol's opening
	from := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 9}
	m := socket.ReceivedFrom(from)
	for _, p := range Protocols() {
		for _, kind := range []string{"stream", "message"} {
			b.Run(p.String()+"/"+kind, func(b *testing.B) {
				pc := udpSocket(b, nil, 0)
				var ep *socket.Endpoint
				if kind == "stream" {
					ln := Server(pc, &Config{Protocol: p})
					defer ln.Close()
					ep = ln.listener.ep
				} else {
					ln := ServerMessages(pc, &Config{Protocol: p})
					defer ln.Close()
					ep = ln.listener.ep
				}
				now := time.Now()
				before, _ := ep.Counts()
				b.ReportAllocs()
				for b.Loop() {
					ep.Dispatch(garbage, len(garbage), m, now)
				}
				if got, _ := ep.Counts(); got-before != uint64(b.N) {
					b.Fatalf("%d of %d datagrams counted as unknown drops", got-before, b.N)
				}
			})
		}
	}
}
