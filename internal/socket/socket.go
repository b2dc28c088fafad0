// Package socket is rudp's socket layer: one net.PacketConn with batched
// I/O. On a Linux *net.UDPConn it reads with recvmmsg and sends with
// sendmmsg, joins and splits datagrams with UDP GRO and GSO where the
// kernel offers them, and reads ICMP port unreachables from the socket's
// error queue (IP_RECVERR); any other PacketConn, and other systems, go
// through the same interface one ReadFrom or WriteTo per datagram. It
// also owns the seal, the checksum that marks rudp's stream datagrams.
//
// It knows no protocol and no association: the package above (the root)
// demultiplexes what Reader returns by remote address (Key) and hands
// each association's datagrams to Send.
package socket

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/net/ipv4"
)

// Socket is one net.PacketConn with batched I/O. Send may be called from
// several goroutines at once, each with its own Scratch; one goroutine
// reads, through one Reader.
type Socket struct {
	pc        net.PacketConn
	connected bool        // pc is a connected *net.UDPConn: send without address
	batch     batchConn   // batched I/O on pc, or nil
	gso       atomic.Bool // send with UDP segmentation offload
	gro       bool        // receive with UDP receive offload
	recvErr   bool        // pc, not connected, reports ICMP errors (see enableRecvErr)
	sendErr   atomic.Bool // with recvErr: a send took an ICMP error report, which the reader must look up
}

// New wraps pc; connected says that pc is a connected *net.UDPConn, whose
// sends carry no address. On a *net.UDPConn it asks for BufferSize
// bytes of kernel buffer each way (see sizeBuffers: log, if not nil, is
// warned when the kernel grants less) and turns on the offloads and error
// reports the system has.
func New(pc net.PacketConn, connected bool, log *slog.Logger) *Socket {
	if uc, ok := pc.(*net.UDPConn); ok {
		sizeBuffers(uc, log)
	}
	s := &Socket{pc: pc, connected: connected, batch: newBatchConn(pc)}
	if s.batch != nil {
		uc := pc.(*net.UDPConn)
		gso, gro := enableOffload(uc)
		s.gso.Store(gso)
		s.gro = gro
		s.recvErr = !connected && enableRecvErr(uc)
	}
	return s
}

// PacketConn returns the wrapped PacketConn.
func (s *Socket) PacketConn() net.PacketConn { return s.pc }

// Connected reports whether the socket is a connected *net.UDPConn.
func (s *Socket) Connected() bool { return s.connected }

// GSO reports whether sends are segmented by the kernel (UDP GSO).
func (s *Socket) GSO() bool { return s.gso.Load() }

// GRO reports whether reads may join several datagrams (UDP GRO): see
// Received.SegmentSize.
func (s *Socket) GRO() bool { return s.gro }

// refusedSend reports whether a send's error is an ICMP port unreachable
// from a connected socket's peer. On an unconnected socket with
// IP_RECVERR, the report belongs to whichever destination the error
// queue names: the reader is told to look it up.
func (s *Socket) refusedSend(err error) bool {
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	if s.recvErr {
		s.sendErr.Store(true)
	}
	return s.connected
}

// sendErrFlag returns the flag a send raises when it takes an ICMP error
// report (see batchReader.recvmmsg), or nil without IP_RECVERR.
func (s *Socket) sendErrFlag() *atomic.Bool {
	if !s.recvErr {
		return nil
	}
	return &s.sendErr
}

// Send transmits the datagrams bufs to to, using sc for the messages.
// With GSO, each run of equal-size datagrams (the last of a run may be
// shorter) goes as one message. It returns how many datagrams the socket
// refused (a full socket buffer, a vanished route): they count as losses,
// which the engines recover from. refused reports that a connected
// socket failed a send with syscall.ECONNREFUSED: an ICMP port
// unreachable from the peer, reported by this send rather than by the
// next read.
func (s *Socket) Send(sc *Scratch, bufs [][]byte, to net.Addr) (failed uint64, refused bool) {
	runs := [1]Run{{Bufs: bufs, To: to}}
	s.SendRuns(sc, runs[:])
	return runs[0].Failed, runs[0].Refused
}

// Run is a sequence of datagrams to one destination, for SendRuns.
type Run struct {
	Bufs [][]byte
	To   net.Addr // ignored on a connected socket
	// Failed and Refused are Send's results for this run; SendRuns adds
	// to them.
	Failed  uint64
	Refused bool
	// Owner and Tag are the queuer's, for Outbox: see Sender.
	Owner Sender
	Tag   any
}

// SendRuns transmits the datagrams of runs, each run's to its
// destination, in order, with as few system calls as sc's messages allow:
// a sendmmsg may carry datagrams to several destinations. Each run's
// Failed and Refused are set as Send returns them; its Bufs is emptied.
func (s *Socket) SendRuns(sc *Scratch, runs []Run) {
	for len(runs) > 0 {
		r := &runs[0]
		if len(r.Bufs) == 0 {
			runs = runs[1:]
			continue
		}
		if s.batch == nil {
			var err error
			if s.connected {
				_, err = s.pc.(*net.UDPConn).Write(r.Bufs[0])
			} else {
				_, err = s.pc.WriteTo(r.Bufs[0], r.To)
			}
			if err != nil {
				r.Failed++
				r.Refused = r.Refused || s.refusedSend(err)
			}
			r.Bufs = r.Bufs[1:]
			continue
		}
		gso := s.gso.Load()
		ms := sc.layout(runs, s.connected, gso)
		n, err := s.batch.WriteBatch(ms, sc)
		n = max(n, 0)
		if err == nil && n < len(ms) {
			err = io.ErrShortWrite // never spin on a call that sent nothing
		}
		for k, m := range ms[:n] {
			o := &runs[sc.owner[k]]
			o.Bufs = o.Bufs[len(m.Buffers):]
		}
		if err == nil || n == len(ms) {
			continue
		}
		if gso && len(ms[n].Buffers) > 1 && (errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EINVAL)) {
			s.gso.Store(false) // the path cannot segment: send one by one from now on
			continue
		}
		o := &runs[sc.owner[n]]
		o.Failed += uint64(len(ms[n].Buffers))
		o.Refused = o.Refused || s.refusedSend(err)
		o.Bufs = o.Bufs[len(ms[n].Buffers):]
	}
}

// GSO bounds: one segmented message carries at most maxSegments
// datagrams (64, the kernel's UDP_MAX_SEGMENTS wherever UDP GSO exists;
// recent kernels take more) and at most maxGSOBytes of
// UDP payload, what one IPv4 packet holds (65535 less the IPv4 and UDP
// headers). A longer run is split into several messages: the kernel
// would fail the whole message with EMSGSIZE.
const (
	maxSegments = 64
	maxGSOBytes = 65535 - 20 - 8
)

// Scratch holds a sender's messages for Send, so that sending allocates
// nothing.
type Scratch struct {
	ms    []ipv4.Message
	owner []int // the run of each of ms, for SendRuns
	oobs  [][]byte
	sys   mmsgScratch // the system's layout of ms
}

// NewScratch returns the scratch of a sender of up to n messages per
// system call.
func NewScratch(n int) Scratch {
	sc := Scratch{ms: make([]ipv4.Message, n), owner: make([]int, n), oobs: make([][]byte, n)}
	for i := range sc.oobs {
		sc.oobs[i] = make([]byte, oobSize)
	}
	return sc
}

// layout lays the datagrams of runs out as messages, as many as sc
// holds, each run's to its destination (none on a connected socket),
// grouping runs of equal-size datagrams for GSO.
func (sc *Scratch) layout(runs []Run, connected, gso bool) []ipv4.Message {
	k := 0
	for ri := 0; ri < len(runs) && k < len(sc.ms); ri++ {
		bufs, to := runs[ri].Bufs, runs[ri].To
		if connected {
			to = nil
		}
		for i := 0; i < len(bufs) && k < len(sc.ms); k++ {
			size, j := len(bufs[i]), i+1
			most := min(maxSegments, maxGSOBytes/max(size, 1))
			for gso && j < len(bufs) && j-i < most && len(bufs[j-1]) == size && len(bufs[j]) <= size {
				j++
			}
			m := &sc.ms[k]
			m.Buffers, m.Addr, m.OOB = bufs[i:j], to, nil
			if j-i > 1 {
				m.OOB = putSegmentSize(sc.oobs[k], size)
			}
			sc.owner[k] = ri
			i = j
		}
	}
	return sc.ms[:k]
}

// Key identifies a remote address: UDP addresses by value, without
// allocating, other address types by their string.
type Key struct {
	ap netip.AddrPort
	s  string
}

// compare orders Keys: by address and port, then by name.
func (k Key) compare(o Key) int {
	if c := k.ap.Compare(o.ap); c != 0 {
		return c
	}
	return strings.Compare(k.s, o.s)
}

// KeyOf returns a's Key.
func KeyOf(a net.Addr) Key {
	if ua, ok := a.(*net.UDPAddr); ok {
		ap := ua.AddrPort()
		return Key{ap: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())}
	}
	return Key{s: a.String()}
}
