package rudp

import (
	"net"
	"net/netip"
)

// received is one receive buffer and, after a read, what it holds.
type received struct {
	buf   []byte // the buffer; the read bytes are buf[:n]
	oob   []byte // room for control messages; the read ones are oob[:nn]
	n, nn int
	flags int            // the receive flags, such as syscall.MSG_TRUNC
	key   addrKey        // the sender, as associations are keyed
	from  netip.AddrPort // the sender, as the socket gave it, when addr is nil
	addr  net.Addr       // the sender; made from from when first needed
}

// sender returns the sender's address, making it once: a datagram from a
// known peer needs none, so that receiving allocates nothing.
func (m *received) sender() net.Addr {
	if m.addr == nil {
		m.addr = net.UDPAddrFromAddrPort(m.from)
	}
	return m.addr
}

// reader reads datagrams from an endpoint's PacketConn.
type reader interface {
	// read blocks until at least one datagram arrives and returns the
	// messages holding them, valid until the next read. It fails with an
	// error matching syscall.ECONNREFUSED when the socket reports an ICMP
	// port unreachable: on a connected socket, from its one peer; on
	// another, from the destinations unreachable lists.
	read() ([]received, error)
	// unreachable returns the destinations that answered port unreachable
	// since the last call (only where the socket tells them, see
	// enableRecvErr), valid until the next read.
	unreachable() []addrKey
}

// newReader returns the reader of ep: batched reads on a Linux
// *net.UDPConn (with room for what GRO joins), one ReadFrom per datagram
// otherwise.
func newReader(ep *endpoint) reader {
	if uc, ok := ep.pc.(*net.UDPConn); ok && ep.batch != nil {
		switch {
		case ep.gro && ep.connected:
			return newBatchReader(uc, groBatchConnected, 1<<16, nil)
		case ep.gro:
			return newBatchReader(uc, groBatch, 1<<16, ep.sendErrFlag())
		}
		return newBatchReader(uc, readBatch, maxDatagram+1, ep.sendErrFlag())
	}
	return &pcReader{pc: ep.pc, ms: newReceived(1, maxLarge+1)}
}

// newReceived returns n receive messages with buffers of size bytes and
// room for a control message.
func newReceived(n, size int) []received {
	ms := make([]received, n)
	for i := range ms {
		ms[i].buf = make([]byte, size)
		ms[i].oob = make([]byte, oobSize)
	}
	return ms
}

// pcReader reads one datagram per ReadFrom.
type pcReader struct {
	pc net.PacketConn
	ms []received
}

// unreachable returns nil: a ReadFrom does not say which peer an ICMP
// error is about.
func (r *pcReader) unreachable() []addrKey { return nil }

func (r *pcReader) read() ([]received, error) {
	m := &r.ms[0]
	n, from, err := r.pc.ReadFrom(m.buf)
	if err != nil {
		return nil, err
	}
	m.n, m.nn, m.flags, m.addr, m.key = n, 0, 0, from, keyOf(from)
	return r.ms, nil
}
