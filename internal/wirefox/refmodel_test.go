package wirefox

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// refModel is a deterministic model of the reference peer
// (iridinite/wirefox 0897fcf) as a server without encryption, one
// connection, channel table testChannels. It runs one worker cycle every
// refTick (PacketQueue::ThreadWorker): congestion bookkeeping
// (CongestionControl::Update, every 20 ms), the read of ONE datagram from
// its socket buffer, then the write of one datagram
// (RemotePeer::GetNextDatagram: an ack-only datagram when more than 10
// IDs are owed or the oldest waited 10 ms, else DatagramBuilder::MakeDatagram).
// Its socket buffer holds sockCap datagrams; one arriving at a full
// buffer is dropped and counted in overflow. Everything that kills the
// reference's connection, trips one of its assertions or ends its worker
// thread is recorded in fault (the test fails on it).
type refModel struct {
	now      time.Time
	nextTick time.Time
	fault    []string
	onRead   func() // the application, after each datagram read

	// Socket.
	sockCap  int
	sock     [][]byte
	overflow int
	out      func(now time.Time, b []byte) // to the session
	oob      [][]byte                      // out-of-band blobs due (the reference's slot 0)

	// Connection.
	peerID      uint64
	connected   bool
	closed      bool      // DISCONNECT_ACK taken, or answered the peer's DISCONNECT_REQUEST
	disconnect  time.Time // after our DISCONNECT_REQUEST: the linger's end
	gotPeerDisc bool

	// CongestionControl and CongestionControlWindow.
	nextDgram, nextPkt uint32
	remoteNext         uint32
	dgSeen, pktSeen    map[uint32]bool
	acks, naks         []uint32
	oldestAck          time.Time
	inflight           int
	outgoing           map[uint32]refFlight
	rtts               []time.Duration
	window, ssthresh   int
	nextUpdate         time.Time

	// Outbox (PacketQueue, DatagramBuilder).
	pkts     []*refPkt
	unsent   minTree        // blob lengths of the packets never sent, by outbox position
	resend   []int          // outbox positions of packets sent and not acknowledged, sorted
	byID     map[uint32]int // outbox position by packet ID
	sentbox  map[uint32][]uint32
	seqOut   [3]uint32
	maxSends int

	// Receiving.
	reasm  map[uint32]*refSplit
	held   map[uint32][]byte // ORDERED channel 1
	rxNext uint32
	got    [][]byte
	// farAhead is the largest distance between the sequences of two
	// messages (or segments) in one data datagram the model sent; spread
	// the largest between a packet ID sent and the oldest packet not yet
	// acknowledged (front, the outbox position before which all are).
	farAhead uint32
	spread   uint32
	front    int
}

type refFlight struct {
	bytes int
	sent  time.Time
}

type refPkt struct {
	id        uint32
	seq       uint32
	blob      []byte
	reliable  bool
	sendCount int
	sendNext  time.Time
	gone      bool // acknowledged, or an unreliable packet sent
}

type refSplit struct {
	blob []byte
	got  map[uint32]bool
	last uint32
}

const refSockCap = 64 // about what Linux's default 208 KiB receive buffer holds of full datagrams

func newRefModel(now time.Time, out func(time.Time, []byte)) *refModel {
	return &refModel{
		now: now, nextTick: now, sockCap: refSockCap, out: out,
		dgSeen: map[uint32]bool{}, pktSeen: map[uint32]bool{}, outgoing: map[uint32]refFlight{},
		window: MTU, ssthresh: refSsthresh, nextUpdate: now,
		byID: map[uint32]int{}, sentbox: map[uint32][]uint32{},
		reasm: map[uint32]*refSplit{}, held: map[uint32][]byte{}, peerID: serverID,
	}
}

func (m *refModel) failf(format string, a ...any) {
	m.fault = append(m.fault, fmt.Sprintf("%v: ", m.now.Sub(t0))+fmt.Sprintf(format, a...))
}

// arrive puts a datagram into the socket buffer, or drops it.
func (m *refModel) arrive(b []byte) {
	if len(m.sock) >= m.sockCap {
		m.overflow++
		return
	}
	m.sock = append(m.sock, b)
}

// send queues blob (command byte first) as the reference's
// PacketQueue::EnqueueOutgoing does: split into 1200-byte segments, each
// with its own packet ID after the container's, every segment reliable.
func (m *refModel) send(blob []byte, ch uint8, reliable bool) {
	if !m.disconnect.IsZero() {
		return
	}
	var seq uint32
	if ch != 0 {
		seq = m.seqOut[ch]
		m.seqOut[ch]++
	}
	nseg := (len(blob)-1)/SegmentSize + 1
	container := m.nextPkt
	m.nextPkt++
	opts := byte(0)
	if reliable {
		opts = OptReliable
	}
	for i := range nseg {
		p := Packet{ID: container, Options: opts, Channel: ch, Seq: seq}
		if nseg > 1 {
			p.ID = m.nextPkt
			m.nextPkt++
		}
		if i < nseg-1 {
			p.Flags |= PacketSEG
		}
		if len(blob)-1 >= bigThreshold {
			p.Flags |= PacketBIG
		}
		off := i * SegmentSize
		p.Offset = uint32(off)
		p.Container, p.Index = container, uint32(i)
		p.Body = blob[off:min(off+SegmentSize, len(blob))]
		enc := AppendPacket(nil, &p)
		m.byID[p.ID] = len(m.pkts)
		m.unsent.set(len(m.pkts), len(enc))
		m.pkts = append(m.pkts, &refPkt{id: p.ID, seq: seq, blob: enc, reliable: reliable || nseg > 1, sendNext: m.now})
	}
}

// disconnectPeer is Peer::Disconnect with the default linger.
func (m *refModel) disconnectPeer() {
	m.send([]byte{CmdDisconnectRequest}, 0, true)
	m.disconnect = m.now.Add(refLinger)
}

// tick runs one worker cycle at now.
func (m *refModel) tick(now time.Time) {
	m.now = now
	m.nextTick = now.Add(refTick)
	if !m.closed {
		m.update()
		if !m.disconnect.IsZero() && !now.Before(m.disconnect) {
			m.failf("linger ran out: the reference's worker thread returns")
			m.closed = true
		}
	}
	if len(m.sock) > 0 && !m.closed {
		b := m.sock[0]
		m.sock = m.sock[1:]
		m.read(b)
		if m.onRead != nil {
			m.onRead()
		}
	}
	if len(m.oob) > 0 { // the out-of-band slot has its own write cycle
		blob := m.oob[0]
		m.oob = m.oob[1:]
		m.out(now, AppendOOB(nil, 0, blob))
	}
	if m.connected && !m.closed {
		m.write()
	}
}

// update is CongestionControl::Update.
func (m *refModel) update() {
	if m.now.Before(m.nextUpdate) {
		return
	}
	m.nextUpdate = m.now.Add(20 * time.Millisecond)
	exp := 16 * m.avg()
	for id, f := range m.outgoing {
		if !m.now.Before(f.sent.Add(exp)) {
			m.inflight -= f.bytes
			delete(m.outgoing, id)
		}
	}
}

func (m *refModel) avg() time.Duration {
	if len(m.rtts) == 0 {
		return 0
	}
	var sum time.Duration
	for _, r := range m.rtts {
		sum += r
	}
	return sum / time.Duration(len(m.rtts))
}

// rto is CongestionControlWindow::GetRetransmissionRTO(retries).
func (m *refModel) rto(retries int) time.Duration {
	if len(m.rtts) < 2 {
		return 105 * time.Millisecond
	}
	lo, hi := slices.Min(m.rtts), slices.Max(m.rtts)
	return (2*m.avg() + 4*(hi-lo) + refTick) * time.Duration(retries+1)
}

// read is PacketQueue::OnReadFinished for one datagram.
func (m *refModel) read(b []byte) {
	if len(b) > MTU {
		m.failf("datagram of %d bytes truncated to %d: connection killed", len(b), MTU)
		return
	}
	var d Datagram
	if err := ParseDatagram(b, &d); err != nil {
		m.failf("corrupt datagram %x: connection killed", b)
		return
	}
	lists := d.HeaderLen()
	if d.Flags&FlagDAT != 0 {
		lists -= 2
		// DatagramHeader::Deserialize wants 4 bytes before reading the
		// 2-byte data length, then the data length's bytes.
		if len(b)-lists < 4 || int(d.DataLen) > len(d.Data) {
			m.failf("incomplete DAT datagram %x: connection killed", b)
			return
		}
		if int(d.DataLen)+lists+2 > MTU {
			m.failf("data section too big: connection killed")
			return
		}
	}
	if d.Flags&FlagLNK == 0 {
		m.readOOB(&d)
		return
	}
	if !m.connected {
		m.failf("connected datagram before the handshake: connection killed")
		return
	}
	if m.dgSeen[d.ID] {
		return
	}
	m.dgSeen[d.ID] = true
	if len(m.acks)+len(m.naks) == 0 {
		m.oldestAck = m.now
	}
	if int32(d.ID-m.remoteNext) > 0 {
		for x := m.remoteNext; x != d.ID; x++ {
			m.naks = append(m.naks, x)
		}
	}
	m.remoteNext = d.ID + 1
	if d.Flags&FlagDAT != 0 {
		m.acks = append(m.acks, d.ID)
	}
	for _, id := range d.Acks {
		m.ack(id)
	}
	if len(d.Naks) > 0 {
		for _, id := range d.Naks {
			for _, pid := range m.sentbox[id] {
				if i, ok := m.byID[pid]; ok && !m.pkts[i].gone {
					m.pkts[i].sendNext = m.now
				}
			}
			delete(m.sentbox, id)
		}
		m.ssthresh = max(m.window/2, 2*MTU)
		m.window = MTU
	}
	for rest := d.Data; len(rest) >= 7; { // PacketHeader::Deserialize wants 7 bytes
		var p Packet
		n, err := ParsePacket(rest, &p)
		if err != nil {
			m.failf("truncated packet %x", rest)
			return
		}
		if len(p.Body) >= int(d.DataLen) {
			m.failf("assert(packetHeader.length < datagramHeader.dataLength)")
		}
		rest = rest[n:]
		if m.pktSeen[p.ID] {
			continue
		}
		m.pktSeen[p.ID] = true
		if p.Split() {
			m.reassemble(&p)
			continue
		}
		m.take(p.Channel, p.Seq, append([]byte(nil), p.Body...))
	}
}

// ack is RemotePeer::HandleAcknowledgements for one ID.
func (m *refModel) ack(id uint32) {
	for _, pid := range m.sentbox[id] {
		if i, ok := m.byID[pid]; ok && !m.pkts[i].gone {
			m.pkts[i].gone = true
			m.dropResend(i)
		}
	}
	delete(m.sentbox, id)
	if f, ok := m.outgoing[id]; ok {
		m.rtts = append(m.rtts, m.now.Sub(f.sent))
		if len(m.rtts) > rttSamples {
			m.rtts = m.rtts[1:]
		}
		m.inflight -= f.bytes
		delete(m.outgoing, id)
	}
	if m.window <= m.ssthresh {
		m.window += MTU
	} else {
		m.window += MTU*MTU/m.window + MTU/8
	}
}

func (m *refModel) reassemble(p *Packet) {
	r := m.reasm[p.Container]
	if r == nil {
		r = &refSplit{got: map[uint32]bool{}}
		m.reasm[p.Container] = r
	}
	if end := int(p.Offset) + len(p.Body); end > len(r.blob) {
		r.blob = append(r.blob, make([]byte, end-len(r.blob))...)
	}
	copy(r.blob[p.Offset:], p.Body)
	r.got[p.Index] = true
	if p.Flags&PacketSEG == 0 {
		r.last = p.Index
	}
	if r.last == 0 || len(r.got) != int(r.last)+1 {
		return
	}
	delete(m.reasm, p.Container)
	m.take(p.Channel, p.Seq, r.blob)
}

// take handles a whole message: Peer::OnSystemPacket for a command
// below 15, else the channel's buffer.
func (m *refModel) take(ch uint8, seq uint32, blob []byte) {
	switch {
	case blob[0] == CmdDisconnectRequest:
		m.gotPeerDisc = true
		m.oob = append(m.oob, []byte{CmdDisconnectAck})
		m.closed = true
		return
	case blob[0] == CmdRPCSignal:
		return
	case blob[0] < CmdUser:
		m.failf("assert(false && \"unexpected system packet received\"): command %d", blob[0])
		return
	}
	if ch != 1 {
		m.got = append(m.got, blob)
		return
	}
	if int32(seq-m.rxNext) > 0 {
		m.held[seq] = blob
		return
	}
	m.got = append(m.got, blob)
	for m.rxNext++; m.held[m.rxNext] != nil; m.rxNext++ {
		m.got = append(m.got, m.held[m.rxNext])
		delete(m.held, m.rxNext)
	}
}

// readOOB handles the handshake (HandshakerThreeWay, as a server) and
// DISCONNECT_ACK.
func (m *refModel) readOOB(d *Datagram) {
	blob, err := ParseOOB(d)
	if err != nil {
		m.failf("bad out-of-band datagram")
		return
	}
	switch blob[0] {
	case CmdDisconnectAck:
		m.closed = true
	case CmdConnectAttempt:
		var h Handshake
		if ParseHandshake(blob, &h) != nil {
			m.failf("bad handshake")
			return
		}
		switch h.Op {
		case OpInitialClient:
			m.oob = append(m.oob, AppendHandshake(nil, &Handshake{PeerID: m.peerID, Op: OpInitialServer, Data: []byte{0}}))
		case OpUnencryptedAck:
			m.connected = true
		}
	}
}

// write is RemotePeer::GetNextDatagram and PacketQueue::DoWriteCycle.
func (m *refModel) write() {
	if n := len(m.acks) + len(m.naks); n > 0 && (n > ackThreshold || !m.now.Before(m.oldestAck.Add(ackDelay))) {
		if len(m.acks) > MaxList || len(m.naks) > MaxList {
			m.failf("ack list of %d, NAK list of %d: mis-encoded", len(m.acks), len(m.naks))
		}
		d := Datagram{Flags: FlagLNK, ID: m.nextDgram, Acks: m.acks[:min(len(m.acks), MaxList)], Naks: m.naks[:min(len(m.naks), MaxList)]}
		m.emit(AppendDatagram(nil, &d), d.ID)
		m.acks, m.naks = m.acks[:0], m.naks[:0]
		return
	}
	m.makeDatagram()
}

// emit sends a connected datagram and counts it in flight
// (CongestionControl::NotifySendingBytes).
func (m *refModel) emit(b []byte, id uint32) {
	m.nextDgram++
	m.inflight += len(b)
	m.outgoing[id] = refFlight{bytes: len(b), sent: m.now}
	m.out(m.now, b)
}

// makeDatagram is DatagramBuilder::MakeDatagram.
func (m *refModel) makeDatagram() {
	resendBudget := min(m.inflight, MTU)
	sendBudget := min(max(m.window-m.inflight, 0), MTU-resendBudget)
	if resendBudget == 0 && sendBudget == 0 {
		return
	}
	var queue []int
	if resendBudget > 0 {
		for _, i := range m.resend {
			p := m.pkts[i]
			if len(p.blob) <= resendBudget && !m.now.Before(p.sendNext) {
				p.sendNext = m.now.Add(m.rto(p.sendCount))
				queue = append(queue, i)
				break
			}
		}
	}
	for sendBudget > 0 {
		i := m.unsent.first(sendBudget)
		if i < 0 {
			break
		}
		p := m.pkts[i]
		m.unsent.set(i, maxInt)
		p.sendNext = m.now.Add(m.rto(p.sendCount))
		queue = append(queue, i)
		sendBudget -= len(p.blob)
	}
	if len(queue) == 0 {
		return
	}
	id := m.nextDgram
	var data []byte
	var ids []uint32
	lo, hi := uint32(1<<32-1), uint32(0)
	for _, i := range queue {
		p := m.pkts[i]
		p.sendCount++
		if p.sendCount > DefaultSendLimit {
			m.failf("packet %d has timed out: connection dropped", p.id)
			m.closed = true
			return
		}
		m.maxSends = max(m.maxSends, p.sendCount)
		if p.sendCount == 1 && p.reliable {
			m.addResend(i)
		}
		data = append(data, p.blob...)
		ids = append(ids, p.id)
		lo, hi = min(lo, p.seq), max(hi, p.seq)
	}
	m.farAhead = max(m.farAhead, hi-lo)
	for m.front < len(m.pkts) && m.pkts[m.front].gone {
		m.front++
	}
	if m.front < len(m.pkts) {
		m.spread = max(m.spread, slices.Max(ids)-m.pkts[m.front].id)
	}
	for _, i := range queue {
		if !m.pkts[i].reliable {
			m.pkts[i].gone = true
		}
	}
	m.sentbox[id] = ids
	d := Datagram{Flags: FlagDAT | FlagLNK, ID: id, DataLen: uint16(len(data)), Data: data}
	m.emit(AppendDatagram(nil, &d), id)
}

func (m *refModel) addResend(i int) {
	j, _ := slices.BinarySearch(m.resend, i)
	m.resend = slices.Insert(m.resend, j, i)
}

func (m *refModel) dropResend(i int) {
	if j, ok := slices.BinarySearch(m.resend, i); ok {
		m.resend = slices.Delete(m.resend, j, j+1)
	}
}

// idle reports whether the model has nothing left to send or acknowledge.
func (m *refModel) idle() bool {
	return len(m.resend) == 0 && m.unsent.first(maxInt-1) < 0 && len(m.acks)+len(m.naks) == 0
}

const maxInt = int(^uint(0) >> 1)

// minTree is a segment tree of ints that finds the first position whose
// value is at most a limit (the reference's linear search of its outbox
// for the first packet that fits, in logarithmic time).
type minTree struct {
	n int
	v []int
}

func (t *minTree) set(i, x int) {
	if i >= t.n {
		n := max(1024, t.n)
		for n <= i {
			n *= 2
		}
		old := *t
		t.n, t.v = n, make([]int, 2*n)
		for j := range t.v {
			t.v[j] = maxInt
		}
		for j := range old.n {
			t.v[n+j] = old.v[old.n+j]
		}
		for j := n - 1; j > 0; j-- {
			t.v[j] = min(t.v[2*j], t.v[2*j+1])
		}
	}
	j := t.n + i
	t.v[j] = x
	for j /= 2; j > 0; j /= 2 {
		t.v[j] = min(t.v[2*j], t.v[2*j+1])
	}
}

func (t *minTree) first(limit int) int {
	if t.n == 0 || t.v[1] > limit {
		return -1
	}
	j := 1
	for j < t.n {
		if t.v[2*j] <= limit {
			j = 2 * j
		} else {
			j = 2*j + 1
		}
	}
	return j - t.n
}

// refLink carries datagrams one way with a fixed delay and seeded loss.
type refLink struct {
	delay time.Duration
	loss  float64
	rng   *rand.Rand
	q     []refDgram
}

type refDgram struct {
	at time.Time
	b  []byte
}

func (l *refLink) send(now time.Time, b []byte) {
	if l.loss > 0 && l.rng.Float64() < l.loss {
		return
	}
	l.q = append(l.q, refDgram{now.Add(l.delay), b})
}

// msgBlob is message i of a test flow: n bytes, the command byte, i, and
// bytes drawn from rng.
func msgBlob(rng *rand.Rand, i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(rng.Uint32())
	}
	b[0] = CmdUser
	if n >= 5 {
		binary.BigEndian.PutUint32(b[1:], uint32(i))
	}
	return b
}
