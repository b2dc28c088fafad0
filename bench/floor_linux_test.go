//go:build linux

package bench

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// floor is the udp-floor sub-benchmark of BenchmarkStream (Linux).
var floor = floorPair

// The udp-floor flow: datagrams of floorDatagram bytes, floorBatch of them
// per GSO send, at most floorWindow bytes unacknowledged. These are the
// sizes a POROUS stream uses on a real path (its 1472-byte frames, 16
// datagrams per sendmmsg, a congestion window of a few hundred KiB); over
// loopback it sends large frames instead.
const (
	floorDatagram = 1472
	floorBatch    = 16
	floorWindow   = 256 << 10
)

// floorPair is a bound rather than a transport: what the kernel's UDP path
// moves on this machine with the I/O rudp uses. One connected socket sends
// the bytes written as 1472-byte datagrams, 16 per sendmsg with GSO, the
// kernel copying straight from the caller's buffer; the receiving socket
// joins them with GRO, and after each read the receiver sends back an
// 8-byte count of what it has, on which the sender holds at most 256 KiB
// unacknowledged. There is nothing else: no resends, no checksum, no
// framing, no copy in user space. Any protocol of 1472-byte datagrams
// moves less; what a rudp stream loses against it is rudp's own work.
func floorPair(b *testing.B) pair {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rx.Close() })
	tx, err := net.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tx.Close() })
	for _, c := range []*net.UDPConn{rx, tx} {
		if err := c.SetReadBuffer(4 << 20); err != nil {
			b.Fatal(err)
		}
		if err := c.SetWriteBuffer(4 << 20); err != nil {
			b.Fatal(err)
		}
		if err := c.SetDeadline(time.Now().Add(safety)); err != nil {
			b.Fatal(err)
		}
	}
	rc, err := rx.SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1)
	}); err != nil || serr != nil {
		b.Fatalf("UDP_GRO: %v %v", err, serr)
	}
	f := &floorFlow{rx: rx, tx: tx, wake: make(chan struct{}, 1)}
	f.oob = make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&f.oob[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	binary.NativeEndian.PutUint16(f.oob[unix.CmsgLen(0):], floorDatagram)
	go f.readAcks()
	return pair{W: f, End: f.end, Drain: f.drain}
}

// floorFlow is the two ends of the udp-floor flow.
type floorFlow struct {
	rx, tx *net.UDPConn
	oob    []byte // the GSO control message
	sent   int64
	acked  atomic.Int64  // what the receiver last reported having
	wake   chan struct{} // an acknowledgement came; closed when none can
	total  atomic.Int64  // the bytes written, once the writer has ended
}

// Write sends p in GSO sends of up to floorBatch datagrams, each when the
// window has room for it.
func (f *floorFlow) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := min(len(p)-n, floorBatch*floorDatagram)
		for f.sent+int64(k)-f.acked.Load() > floorWindow {
			if _, ok := <-f.wake; !ok {
				return n, net.ErrClosed // the receiver's socket failed: no more acknowledgements
			}
		}
		var oob []byte
		if k > floorDatagram {
			oob = f.oob
		}
		if _, _, err := f.tx.WriteMsgUDPAddrPort(p[n:n+k], oob, netip.AddrPort{}); err != nil {
			return n, err
		}
		n += k
		f.sent += int64(k)
	}
	return n, nil
}

// readAcks keeps acked up to date until the socket closes or fails,
// then closes wake.
func (f *floorFlow) readAcks() {
	defer close(f.wake)
	buf := make([]byte, 8)
	for {
		n, err := f.tx.Read(buf)
		if err != nil {
			return
		}
		if n == len(buf) {
			f.acked.Store(int64(binary.BigEndian.Uint64(buf)))
			select {
			case f.wake <- struct{}{}:
			default:
			}
		}
	}
}

// end records how much was written and sends an empty datagram, so that
// a receiver already holding everything wakes to see it.
func (f *floorFlow) end(sent int64) error {
	f.total.Store(sent)
	_, err := f.tx.Write(nil)
	return err
}

// drain receives until it has every byte written, acknowledging each read.
func (f *floorFlow) drain() (int64, error) {
	buf := make([]byte, 64<<10)
	ack := make([]byte, 8)
	var got int64
	for {
		n, from, err := f.rx.ReadFromUDPAddrPort(buf)
		if err != nil {
			return got, err
		}
		got += int64(n)
		if t := f.total.Load(); t > 0 && got >= t {
			return got, nil
		}
		if n > 0 {
			binary.BigEndian.PutUint64(ack, uint64(got))
			if _, err := f.rx.WriteToUDPAddrPort(ack, from); err != nil {
				return got, err
			}
		}
	}
}
