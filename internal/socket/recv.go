package socket

import (
	"net"
	"net/netip"
	"syscall"
)

// Received is one receive buffer and, after a read, what it holds.
type Received struct {
	buf   []byte // the buffer; the read bytes are buf[:n]
	oob   []byte // room for control messages; the read ones are oob[:nn]
	n, nn int
	flags int            // the receive flags, such as syscall.MSG_TRUNC
	key   Key            // the sender, as associations are keyed
	from  netip.AddrPort // the sender, as the socket gave it, when addr is nil
	addr  net.Addr       // the sender; made from from when first needed
}

// Data returns the bytes read: one datagram, or with GRO several of
// SegmentSize bytes each (the last may be shorter).
func (m *Received) Data() []byte { return m.buf[:m.n] }

// Key returns the sender's Key.
func (m *Received) Key() Key { return m.key }

// Truncated reports whether the datagram was longer than the buffer.
func (m *Received) Truncated() bool { return m.flags&syscall.MSG_TRUNC != 0 }

// SegmentSize returns the size of the datagrams GRO joined into Data, 0
// when it joined none.
func (m *Received) SegmentSize() int { return segmentSize(m.oob[:m.nn]) }

// Sender returns the sender's address, making it once: a datagram from a
// known peer needs none, so that receiving allocates nothing.
func (m *Received) Sender() net.Addr {
	if m.addr == nil {
		m.addr = net.UDPAddrFromAddrPort(m.from)
	}
	return m.addr
}

// Reader reads datagrams from a Socket.
type Reader interface {
	// Read blocks until at least one datagram arrives and returns the
	// messages holding them, valid until the next read. It fails with an
	// error matching syscall.ECONNREFUSED when the socket reports an ICMP
	// port unreachable: on a connected socket, from its one peer; on
	// another, from the destinations unreachable lists.
	Read() ([]Received, error)
	// Unreachable returns the destinations that answered port unreachable
	// since the last call (only where the socket tells them, see
	// enableRecvErr), valid until the next read.
	Unreachable() []Key
}

// NewReader returns the reader of s: batched reads on a Linux
// *net.UDPConn (with room for what GRO joins), one ReadFrom per datagram
// otherwise; largest is the largest datagram the package above takes
// (MaxDatagram unless some association takes larger ones), which a
// reader of one datagram at a time has room for.
func (s *Socket) NewReader(largest int) Reader {
	if uc, ok := s.pc.(*net.UDPConn); ok && s.batch != nil {
		switch {
		case s.gro && s.connected:
			return newBatchReader(uc, groBatchConnected, 1<<16, nil, largest)
		case s.gro:
			return newBatchReader(uc, groBatch, 1<<16, s.sendErrFlag(), largest)
		}
		return newBatchReader(uc, readBatch, MaxDatagram+1, s.sendErrFlag(), largest)
	}
	return &pcReader{pc: s.pc, ms: newReceived(1, largest+1)}
}

// newReceived returns n receive messages with buffers of size bytes and
// room for a control message.
func newReceived(n, size int) []Received {
	ms := make([]Received, n)
	for i := range ms {
		ms[i].buf = make([]byte, size)
		ms[i].oob = make([]byte, oobSize)
	}
	return ms
}

// pcReader reads one datagram per ReadFrom.
type pcReader struct {
	pc net.PacketConn
	ms []Received
}

// Unreachable returns nil: a ReadFrom does not say which peer an ICMP
// error is about.
func (r *pcReader) Unreachable() []Key { return nil }

// Read implements Reader.
func (r *pcReader) Read() ([]Received, error) {
	m := &r.ms[0]
	n, from, err := r.pc.ReadFrom(m.buf)
	if err != nil {
		return nil, err
	}
	m.n, m.nn, m.flags, m.addr, m.key = n, 0, 0, from, KeyOf(from)
	return r.ms, nil
}

// ReceivedFrom returns a Received that holds no data, from a: for
// datagrams handed on without a read (replays, benchmarks).
func ReceivedFrom(a net.Addr) *Received { return &Received{addr: a, key: KeyOf(a)} }
