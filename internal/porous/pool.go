package porous

import "sync"

// Buffer pools. The packets a session sends and the reassembly buffers of
// the packets it receives come from pools shared by all the sessions of
// the process, so that a session with nothing in flight holds no buffer
// and a busy process reuses the buffers of one session in another: the
// memory follows the bytes in flight, not the number of sessions.

// packetClasses are the capacities, in bytes, of the pooled packet
// buffers, smallest first: 256 bytes for small packets, FragmentSize for
// packets of one fragment (a stream's frames, and the reassembly buffers
// of the packets of one fragment received), then 2 to 64 fragments'
// worth, doubling. A packet gets the smallest class that holds it, so its
// buffer is at most twice its size (or 256 bytes); a larger packet gets a
// buffer of its own size, which is not pooled.
var packetClasses = [...]int{
	256,
	FragmentSize,
	2 * FragmentSize,
	4 * FragmentSize,
	8 * FragmentSize,
	16 * FragmentSize,
	32 * FragmentSize,
	64 * FragmentSize,
}

// fragmentClass is the index of FragmentSize in packetClasses.
const fragmentClass = 1

// packetPools holds, for each class of packetClasses (same index),
// packets not in use (*outPacket, every field zero but data) whose data
// buffer has exactly that capacity. Shared by all the sessions of the
// process. A packet is put there only once nothing refers to it: see
// Session.release for packets sent, Session.Recycle for reassembly
// buffers, Session.Trim for the buffer of MessageBuffer.
var packetPools [len(packetClasses)]sync.Pool

// emptyPackets holds packets without a buffer (*outPacket, all fields
// zero), which carry the reassembly buffers handed back by Recycle into
// packetPools[fragmentClass] and are left over when recvBuffer takes a
// buffer out of it. Shared by all the sessions of the process.
var emptyPackets sync.Pool

// packetClass returns the index in packetClasses of the smallest class
// that holds n bytes, or -1 if none does.
func packetClass(n int) int {
	for i, c := range packetClasses {
		if n <= c {
			return i
		}
	}
	return -1
}

// newPacket returns a packet, every field zero, with an n-byte data
// buffer, taken from packetPools when its class has one.
func newPacket(n int) *outPacket {
	i := packetClass(n)
	if i < 0 {
		return &outPacket{data: make([]byte, n)}
	}
	if p, ok := packetPools[i].Get().(*outPacket); ok {
		p.data = p.data[:n]
		return p
	}
	return &outPacket{data: make([]byte, n, packetClasses[i])}
}

// classCap returns the capacity of the buffer newPacket gives n bytes:
// that of n's class, or n when no class holds it.
func classCap(n int) int {
	if i := packetClass(n); i >= 0 {
		return packetClasses[i]
	}
	return n
}

// freePacket puts p, which nothing refers to any more, back in the pool
// of its buffer's class; a buffer of no class is left to the collector.
func freePacket(p *outPacket) {
	data := p.data
	*p = outPacket{}
	if i := packetClass(cap(data)); i >= 0 && cap(data) == packetClasses[i] {
		p.data = data[:0]
		packetPools[i].Put(p)
	}
}

// fragmentBuffer returns a buffer of n bytes, at most FragmentSize, and
// capacity FragmentSize from the pool of that class, or a new one.
func fragmentBuffer(n int) []byte {
	p, ok := packetPools[fragmentClass].Get().(*outPacket)
	if !ok {
		return make([]byte, n, FragmentSize)
	}
	b := p.data[:n]
	p.data = nil
	emptyPackets.Put(p)
	return b
}

// freeFragmentBuffer puts b, of capacity FragmentSize, which nothing
// refers to any more, in the pool of that class.
func freeFragmentBuffer(b []byte) {
	p, ok := emptyPackets.Get().(*outPacket)
	if !ok {
		p = new(outPacket)
	}
	p.data = b[:0]
	packetPools[fragmentClass].Put(p)
}
