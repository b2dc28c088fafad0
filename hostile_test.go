package rudp

// Hostile tests: floods, spoofing, sweeps, replays, injection and
// mutation. hostileProtocols says, for each protocol, what an attacker
// sends its conns; every test takes its protocols from there, so that a
// protocol joins every hostile test by being added to it. Attackers are
// plain UDP sockets; sending from many ports of 127.0.0.1 stands in for
// many addresses, and a PacketConn wrapper that relabels an attacker's
// datagrams stands in for a datagram sent from another host's address.
// Tests that wait for timers (handshake timeouts, the answers a spoofed
// source is sent over them) run on a virtual network in virtual time
// (see vpath). They assert counts and bytes, never timings; every wait
// has a bound, so that a stall fails instead of hanging.
// bench/cmd/hostile runs the floods of streams at full size.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rudpkit/rudp/internal/airhook"
	"github.com/rudpkit/rudp/internal/avara"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/impair"
	"github.com/rudpkit/rudp/internal/lludp"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/rudpkit/rudp/internal/wirefox"
	"github.com/stretchr/testify/require"
)

// kinds is a set of conn kinds: streams, message conns or both.
type kinds uint8

const (
	streams kinds = 1 << iota
	messageConns
	bothKinds = streams | messageConns
)

// has reports whether k holds streams (stream) or message conns.
func (k kinds) has(stream bool) bool {
	if stream {
		return k&streams != 0
	}
	return k&messageConns != 0
}

// kindName names a conn kind in subtest names.
func kindName(stream bool) string {
	if stream {
		return "stream"
	}
	return "message"
}

// hostileProtocol is what the hostile tests send to attack one protocol's
// conns. A nil or empty field is an attack the protocol's conns are not
// open to, or that has no case; its entry in hostileProtocols says why.
type hostileProtocol struct {
	Protocol
	// announces announce the peer's restart or close from the peer's
	// address, as a blind attacker would: the conn challenges each and
	// refuses it, the live peer answering the challenge's probes.
	announces []announce
	// sweeps are blind sweeps of forged datagrams sent to a stream's
	// listener from its client's address in the middle of a transfer.
	sweeps []sweep
	// replay is the conn kinds tested against a replay, from the
	// client's address, of an earlier session's datagrams.
	replay kinds
	// blind returns what the i-th of many blind sources sends a message
	// listener to get as far as a source can that never sees the
	// answers: none is accepted, and none is sent more than 3 times what
	// it sent.
	blind func(i int) [][]byte
	// refused returns an opening a listener of the kind refuses for its
	// parameters, answering at once without keeping state for the
	// source (see Config.refusal), unsealed.
	refused func(stream bool) []byte
}

// announce is a datagram that announces the peer's restart or close,
// unsealed (a stream's is sealed when sent).
type announce struct {
	name string
	b    []byte
	on   kinds // the conn kinds that challenge it
	// toClient: a client takes it from its listener's address too, not
	// only a listener's conn from its client's.
	toClient bool
	// underLoss: TestHostileSpoofsUnderLoss sends it to a stream's
	// listener at 2 % loss.
	underLoss bool
}

// sweep is a blind sweep of n forged datagrams, the i-th datagram(i),
// unsealed. check, if not nil, checks the listener's stream after it.
type sweep struct {
	name     string
	n        int
	datagram func(i int) []byte
	check    func(t *testing.T, s *Conn)
}

// wirefoxHello is an out-of-band CONNECT_ATTEMPT of op from peer.
func wirefoxHello(peer uint64, op uint8, data ...byte) []byte {
	h := wirefox.Handshake{Version: wirefox.Version, PeerID: peer, Op: op, Data: data}
	return wirefox.AppendOOB(nil, 0, wirefox.AppendHandshake(nil, &h))
}

// wirefoxData is a connected Wirefox datagram numbered id carrying p.
func wirefoxData(id uint32, p wirefox.Packet) []byte {
	d := wirefox.Datagram{Flags: wirefox.FlagDAT | wirefox.FlagLNK, ID: id}
	d.Data = wirefox.AppendPacket(nil, &p)
	d.DataLen = uint16(len(d.Data))
	return wirefox.AppendDatagram(nil, &d)
}

// wirefoxSweepID is the datagram ID of the i-th datagram of a Wirefox
// sweep: every 2^18th ID for the first 2^14, then the IDs 2^15 past
// those, and so on, so that 2^17 of them step every 2^15th ID once.
func wirefoxSweepID(i int) uint32 { return uint32(i)<<18 | uint32(i>>14&7)<<15 }

// avaraStreamDatagram is an Avara datagram of one message, checked as
// the default network version: what a blind attacker, who cannot know
// the client's seed that a stream's checksums mix in, sends.
func avaraStreamDatagram(m avara.Message) []byte {
	d := avara.Datagram{Ack: avara.NothingReceived, Messages: []avara.Message{m}}
	return avara.AppendDatagram(make([]byte, 0, 64), &d, DefaultAvaraVersion)
}

// spoofedLogin returns a 16-byte Avara Login with an empty password, as an
// unpadded client sends it (serial 0, p3 a seed).
func spoofedLogin() []byte {
	return avaraStreamDatagram(avara.Message{Command: avara.CommandLogin, P3: -0x12345678, Data: []byte{0},
		Sender: -1, HasSender: true})
}

// hostileProtocols holds one entry per protocol.
var hostileProtocols = []hostileProtocol{
	{
		Protocol: POROUS,
		announces: []announce{
			{name: "connect", b: (&porous.Frame{Type: porous.FrameConnect, Channels: 1, Nonce: 0x5900f}).AppendTo(nil),
				on: bothKinds, toClient: true},
			{name: "disconnect", b: (&porous.Frame{Type: porous.FrameDisconnect}).AppendTo(nil),
				on: bothKinds, toClient: true, underLoss: true},
		},
		// A Data frame's only field a blind attacker cannot know is its
		// frame_seq, numbered from the peer's random 32-bit nonce; a
		// stream takes a frame at most porous.RxAhead (8192) numbers past
		// its oldest one not delivered. Every 2^20th number: a sweep
		// lands a frame once in 128 runs, whose packet (far ahead of the
		// stream's) then waits unused; internal/porous TestSpoofedSweep
		// sweeps every 2^15th number, where frames land each time.
		// Frames past the 4,096th fill in between, 2^15 apart: 2^17 of
		// them (BenchmarkBlindSweep) step every 2^15th number once.
		sweeps: []sweep{{name: "data", n: 1 << 12, datagram: func(i int) []byte {
			seq := uint32(i)<<20 | uint32(i>>12&31)<<15
			f := porous.Frame{Type: porous.FrameData, Seq: seq, Messages: []porous.Message{{
				Type: porous.MsgFragment, PacketSeq: 50_000, Data: []byte("forged stream frame")}}}
			return f.AppendTo(nil)
		}}},
		replay: bothKinds,
		// A Connect with the source's nonce. Protection: a listener's
		// conn opens once the client acknowledged the listener's nonce
		// (see MessageConn.pump).
		blind: func(i int) [][]byte {
			return [][]byte{(&porous.Frame{Type: porous.FrameConnect, Channels: 1, MaxRxBandwidth: porous.NoBandwidthLimit,
				Nonce: uint32(i) + 1}).AppendTo(nil)}
		},
		// A Connect carries the channel count: one the listener does not
		// serve is refused with a Connect and a Disconnect of its own
		// (porous.Refusal).
		refused: func(stream bool) []byte {
			return (&porous.Frame{Type: porous.FrameConnect, Channels: 3, Nonce: 0x5900f}).AppendTo(nil)
		},
	},
	{
		Protocol: Airhook,
		announces: []announce{
			{name: "session", b: (&airhook.Packet{Session: 0x5900f, Seq: 1}).AppendTo(nil),
				on: bothKinds, toClient: true, underLoss: true},
		},
		// Once the handshake is over an Airhook packet carries no session
		// ID (docs/protocols/airhook.md §3.2), and the engine takes a
		// forged one if its 16-bit sequence number is not among the 256
		// before the newest and its observed octet is among this end's
		// packets not yet confirmed (§3.3), 8 bits to guess: one that
		// lands would move the sequence window past the peer's. The sweep
		// covers every sequence number twice, at every observed octet.
		// Protection on a stream: the keyed seal (socket.SealKey), 32
		// bits to guess per datagram.
		sweeps: []sweep{{name: "packets", n: 1 << 12, datagram: func(i int) []byte {
			return (&airhook.Packet{Seq: uint16(i*0x9e37 + 1), ObservedSeq: uint8(i >> 9),
				Next: 1, Messages: [][]byte{[]byte("forged")}}).AppendTo(nil)
		}, check: func(t *testing.T, s *Conn) {
			require.GreaterOrEqual(t, badSeals(s), uint64(1<<12), "every forged packet dropped for its seal")
		}}},
		// A message conn has no such protection: the replayed packets
		// without session ID that pass the checks above are taken as the
		// live peer's, and it delivers their messages, as the reference
		// would. A stream drops them for the keyed seal: another session's
		// key.
		replay: streams,
		// A packet with the source's session ID. Protection: a
		// listener's conn opens once the client echoed the listener's
		// session ID (see MessageConn.pump).
		blind: func(i int) [][]byte {
			return [][]byte{(&airhook.Packet{Seq: 1, Session: uint32(i) + 1}).AppendTo(nil)}
		},
		refused: nil, // only a POROUS listener refuses an opening without keeping state (Config.refusal)
	},
	{
		Protocol: LLUDP,
		announces: []announce{
			{name: "usecircuitcode", b: lludp.AppendPacket(nil, &lludp.Packet{Flags: lludp.FlagReliable, Seq: 1,
				Message: lludp.UseCircuitCode, Body: append(binary.LittleEndian.AppendUint32(nil, 0x5900f), make([]byte, 32)...)}),
				on: bothKinds}, // only a listener takes a UseCircuitCode
			{name: "closecircuit", b: lludp.AppendPacket(nil, &lludp.Packet{Seq: 2, Message: lludp.CloseCircuit}),
				on: bothKinds, toClient: true, underLoss: true},
		},
		// Stream DATA frames at guessed sequence numbers and stream
		// offsets (small ones and random 64-bit ones). Protection: the
		// random 64-bit stream offsets, and streams' delivery of LLUDP
		// duplicates (lludp Config.DeliverDuplicates), so that a forged
		// sequence number cannot shadow the genuine datagram: the forged
		// frames reach the stream, which drops them.
		sweeps: []sweep{{name: "stream-frames", n: 2000, datagram: func(i int) []byte {
			rng := rand.New(rand.NewPCG(11, uint64(i)))
			p := lludp.Packet{Flags: lludp.FlagReliable, Seq: rng.Uint32N(lludp.SeqWrap), Message: lludp.StreamMessage,
				Body: forgedDataFrame(i)}
			return lludp.AppendPacket(nil, &p)
		}, check: requireIgnored}},
		// A message conn numbers its packets from 1 and keeps no session
		// in them, as the viewer does: a replayed session's messages
		// beyond the live one's sequence numbers are delivered.
		replay: streams,
		// No case: an LLUDP message listener opens the circuit at its
		// first UseCircuitCode, as a Second Life region does: the
		// protocol has no proof of the address (Config.AcceptCircuit
		// decides).
		blind:   nil,
		refused: nil, // only a POROUS listener refuses an opening without keeping state (Config.refusal)
	},
	{
		Protocol: Wirefox,
		// A blind DISCONNECT_REQUEST has no case: a connected datagram
		// whose ID falls outside the session's history is dropped before
		// its packets are read, and a stream's datagram IDs start at
		// random (see sweeps); a message conn, which may talk to the
		// reference, takes one that lands as the reference does.
		announces: []announce{
			{name: "initial-client", b: wirefoxHello(0x5900f, wirefox.OpInitialClient, 0), on: bothKinds},
		},
		// Sealed connected datagrams at every 2^18th datagram ID (a
		// stream numbers its datagrams from a random ID), each carrying a
		// reliable PONG numbered 2^30, or a segment with an empty body:
		// one falls among the IDs a stream takes, up to 32,768 past the
		// newest, in about one run of 8, and its packet is read.
		// Protection: a datagram or packet ID more than 32,768 past the
		// newest is rejected without moving the duplicate histories
		// (internal/wirefox TestSpoofFarAhead), and empty segments count
		// against MaxRecvBuffer (TestEmptySegmentsCount). Datagrams past
		// the 16,384th fill in between (wirefoxSweepID): 2^17 of them
		// (BenchmarkBlindSweep) step every 2^15th ID, so that any 32,768
		// IDs in a row (those a stream takes past its newest) hold one.
		sweeps: []sweep{
			{name: "pong", n: 1 << 14, datagram: func(i int) []byte {
				return wirefoxData(wirefoxSweepID(i), wirefox.Packet{ID: 1 << 30, Options: wirefox.OptReliable,
					Body: []byte{wirefox.CmdPong}})
			}},
			{name: "empty-segments", n: 1 << 14, datagram: func(i int) []byte {
				return wirefoxData(wirefoxSweepID(i), wirefox.Packet{Flags: wirefox.PacketSEG, ID: uint32(i),
					Options: wirefox.OptReliable, Container: uint32(i), Index: 1, Offset: wirefox.SegmentSize})
			}},
		},
		replay: bothKinds,
		// INITIAL_CLIENT, UNENCRYPTED_ACK, then a connected datagram with
		// a message, acknowledging the datagram IDs a guess would try.
		// Protection: a conn opens only once the client acknowledged a
		// probe sent to its address (internal/wirefox, the server's
		// proof).
		blind: func(i int) [][]byte {
			peer := uint64(i)<<8 | 1
			d := wirefox.Datagram{Flags: wirefox.FlagDAT | wirefox.FlagLNK, ID: 0, Acks: []uint32{0, 1, 2, 1<<31 + 1, 1<<31 + 2, 1<<32 - 1}}
			d.Data = wirefox.AppendPacket(nil, &wirefox.Packet{Options: wirefox.OptReliable, Body: []byte{wirefox.CmdUser, 'x'}})
			d.DataLen = uint16(len(d.Data))
			return [][]byte{wirefoxHello(peer, wirefox.OpInitialClient, 0), wirefoxHello(peer, wirefox.OpUnencryptedAck),
				wirefox.AppendDatagram(nil, &d)}
		},
		refused: nil, // only a POROUS listener refuses an opening without keeping state (Config.refusal)
	},
	{
		Protocol: Avara,
		// No case: a stream's datagrams after the Login are checked with
		// the network version mixed with the client's seed
		// (avara.Config.ReliablePeer), so a blind Logout fails its
		// checksum before any challenge (see sweeps); a message conn,
		// which may talk to the reference, does not challenge a Logout
		// (avara.Config.ChallengeClose is for streams), as the reference
		// does not.
		announces: nil,
		// Stream messages, and Logouts, at serials 2048 apart (some land
		// in any window), 32 at each of 64 offsets. Protection
		// (avara.Config.ReliablePeer): such datagrams fail the session's
		// checksum; one that passed it would end the stream with an error
		// (two copies of one serial), never stall or corrupt it. Past
		// the 2,048th the offsets go on: 2^17 datagrams
		// (BenchmarkBlindSweep) try every even serial 4 times.
		sweeps: []sweep{
			{name: "serials", n: 1 << 11, datagram: func(i int) []byte {
				return avaraStreamDatagram(avara.Message{Serial: uint16(i%32)*2048 + uint16(i/32)*2,
					Command: avara.StreamCommand, Data: []byte("forged stream frame")})
			}},
			{name: "logout", n: 1 << 11, datagram: func(i int) []byte {
				return avaraStreamDatagram(avara.Message{Serial: uint16(i%32)*2048 + uint16(i/32)*2,
					Command: avara.CommandLogout, P1: avaraStreamClientID})
			}},
		},
		// A message conn may talk to the reference, whose checksums are
		// not keyed by the session: a replayed session's messages are
		// duplicates or land as the reference takes them.
		replay: streams,
		// A Login is validated (its TOC acknowledged) before it opens,
		// and until then the listener sends at most 3 times the bytes it
		// received from the address. 1 to 3 copies: the listener answers
		// those sent again.
		blind: func(i int) [][]byte {
			return slices.Repeat([][]byte{spoofedLogin()}, 1+i%3)
		},
		refused: nil, // only a POROUS listener refuses an opening without keeping state (Config.refusal)
	},
}

// forgedDataFrame is the i-th of the stream DATA frames a blind attacker
// injects, at a guessed stream offset, half of them near a stream's
// start of 0, the others random 64-bit ones: 64 bytes of "EVIL".
func forgedDataFrame(i int) []byte {
	rng := rand.New(rand.NewPCG(12, uint64(i)))
	off := rng.Uint64()
	if i%2 == 0 {
		off = uint64(rng.IntN(1 << 21))
	}
	return append(binary.AppendUvarint([]byte{0x02}, off), bytes.Repeat([]byte("EVIL"), 16)...)
}

// requireIgnored checks that forged frames reached the stream s, which
// dropped them.
func requireIgnored(t *testing.T, s *Conn) {
	s.a.mu.Lock()
	ignored := s.st.Ignored()
	s.a.mu.Unlock()
	require.Positive(t, ignored+badSeals(s), "injected frames dropped, by the stream or for their seal")
}

// badSeals returns the datagrams conn c dropped for their seal: with no
// seal that matched, or with the plain seal after the key.
func badSeals(c net.Conn) uint64 {
	a := c.(*Conn).a
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.badSeals + a.lateSeals
}

// lateSeals returns the datagrams conn c dropped for carrying the plain
// seal after the key.
func lateSeals(c net.Conn) uint64 {
	a := c.(*Conn).a
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lateSeals
}

// TestHostileProtocolsCover: hostileProtocols has one entry per protocol,
// in Protocols' order.
func TestHostileProtocolsCover(t *testing.T) {
	var ps []Protocol
	for _, hp := range hostileProtocols {
		ps = append(ps, hp.Protocol)
	}
	require.Equal(t, Protocols(), ps)
}

// hangGuard bounds every wait of these tests: far beyond what any of them
// needs, so that only a stall reaches it.
const hangGuard = 60 * time.Second

// heapAlloc returns the live heap after garbage collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// openingOf returns the first datagram a stream client of protocol p
// sends: the opening a blind attacker replays (for Airhook it carries the
// stream HELLO; POROUS's Connect and LLUDP's UseCircuitCode carry none).
func openingOf(t testing.TB, p Protocol) []byte { return firstDatagramOf(t, p, true) }

// firstDatagramOf returns the first datagram a client of protocol p
// sends, a stream's if stream, else a message conn's.
func firstDatagramOf(t testing.TB, p Protocol, stream bool) []byte {
	t.Helper()
	sink := udpSocket(t, nil, 0)
	defer sink.Close()
	var c interface {
		Handshake(context.Context) error
		Close() error
	}
	if stream {
		c = Client(udpSocket(t, nil, 0), sink.LocalAddr(), &Config{Protocol: p})
	} else {
		c = ClientMessages(udpSocket(t, nil, 0), sink.LocalAddr(), &Config{Protocol: p})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Handshake(ctx); close(done) }()
	defer func() { cancel(); <-done; c.Close() }()
	buf := make([]byte, 2048)
	require.NoError(t, sink.SetReadDeadline(time.Now().Add(hangGuard)))
	n, _, err := sink.ReadFrom(buf)
	require.NoError(t, err)
	return bytes.Clone(buf[:n])
}

// listenKind returns a stream listener (stream) or a message listener on pc.
func listenKind(pc net.PacketConn, cfg *Config, stream bool) net.Listener {
	if stream {
		return Server(pc, cfg)
	}
	return ServerMessages(pc, cfg)
}

// dialKind returns a stream (stream) or a message conn on pc to raddr.
func dialKind(pc net.PacketConn, raddr net.Addr, cfg *Config, stream bool) interface {
	net.Conn
	Handshake(context.Context) error
	Done() <-chan struct{}
} {
	if stream {
		return Client(pc, raddr, cfg)
	}
	return ClientMessages(pc, raddr, cfg)
}

// engineStats returns the counters of c's engine.
func engineStats(c net.Conn) engine.Stats {
	a := c.(interface{ base() *connBase }).base().a
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.eng.Stats()
}

// attackers are UDP sockets on 127.0.0.1, each a distinct source address.
type attackers []net.PacketConn

func newAttackers(t testing.TB, n int) attackers {
	t.Helper()
	a := make(attackers, n)
	for i := range a {
		a[i] = udpSocket(t, nil, 0)
	}
	t.Cleanup(func() {
		for _, pc := range a {
			pc.Close()
		}
	})
	return a
}

// admitted counts the openings a listener has dealt with: admitted
// (then evicted or still half-open), refused or dropped.
func admitted[T acceptable](l *listener[T]) int {
	st := l.Stats()
	l.q.mu.Lock()
	defer l.q.mu.Unlock()
	return int(st.Evicted+st.UnknownDrops+st.BacklogDrops) + len(l.q.pending) + len(l.q.queue)
}

// blindFlood sends open from each of the attackers once, never reading,
// in batches that the listener l has dealt with before the next one, so
// that the socket buffer drops none.
func blindFlood[T acceptable](t testing.TB, l *listener[T], a attackers, open []byte) {
	t.Helper()
	const batch = 100
	for i, pc := range a {
		_, err := pc.WriteTo(open, l.Addr())
		require.NoError(t, err)
		if (i+1)%batch == 0 || i == len(a)-1 {
			require.Eventually(t, func() bool { return admitted(l) >= i+1 }, hangGuard, time.Millisecond)
		}
	}
}

// TestHostileBlindFlood: 2,000 blind sources each send a valid opening and
// never read. Protections: the opening check, the backlog with eviction of
// the oldest half-open peer, and validation before Accept. No conn is
// accepted, the half-open peers stay within the backlog, and the heap
// grows by less than the 32 MiB-per-20,000-sources target scaled down.
func TestHostileBlindFlood(t *testing.T) {
	const sources = 2000
	for _, hp := range hostileProtocols {
		t.Run(hp.String(), func(t *testing.T) {
			open := openingOf(t, hp.Protocol)
			a := newAttackers(t, sources)
			ln := Server(udpSocket(t, nil, 0), &Config{Protocol: hp.Protocol})
			defer ln.Close()
			before := heapAlloc()
			blindFlood(t, &ln.listener, a, open)
			growth := int64(heapAlloc()) - int64(before)
			t.Logf("%v: heap growth %d bytes after %d blind openings", hp, growth, sources)
			require.Less(t, growth, int64(32<<20)*sources/20000)

			st := ln.Stats()
			require.Zero(t, st.UnknownDrops+st.BacklogDrops, "every opening was taken as one")
			require.Equal(t, uint64(sources-DefaultBacklog), st.Evicted)
			ln.listener.q.mu.Lock()
			defer ln.listener.q.mu.Unlock()
			require.Empty(t, ln.listener.q.queue, "no blind source is ever ready for Accept")
			require.Len(t, ln.listener.q.pending, DefaultBacklog)
		})
	}
}

// echoServer accepts one conn on ln and echoes it back until EOF.
func echoServer(t testing.TB, ln net.Listener) <-chan error {
	errc := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(hangGuard))
			_, err = io.Copy(c, c)
			if err == nil {
				err = c.(*Conn).CloseWrite()
			}
			c.Close()
		}
		errc <- err
	}()
	return errc
}

// echo writes data to c, closes its writing side and checks that exactly
// data comes back.
func echo(t testing.TB, c *Conn, data []byte) {
	t.Helper()
	require.NoError(t, c.SetDeadline(time.Now().Add(hangGuard)))
	werr := make(chan error, 1)
	writeThenCloseWrite(c, data, werr)
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	require.NoError(t, <-werr)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "echoed %d of %d bytes", len(got), len(data))
}

// TestHostileFloodLegitDial: while blind sources keep sending openings, a
// legitimate client dials and echoes 256 KiB. Protection: eviction of the
// oldest half-open peer (a flood cannot lock a peer out) and validation
// before Accept (the flood never reaches Accept).
func TestHostileFloodLegitDial(t *testing.T) {
	const sources = 1000
	for _, hp := range hostileProtocols {
		t.Run(hp.String(), func(t *testing.T) {
			open := openingOf(t, hp.Protocol)
			a := newAttackers(t, sources)
			cfg := &Config{Protocol: hp.Protocol, HandshakeTimeout: hangGuard}
			ln := Server(udpSocket(t, nil, 0), cfg)
			defer ln.Close()
			errc := echoServer(t, ln)
			blindFlood(t, &ln.listener, a[:2*DefaultBacklog], open) // the backlog is full
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { // about 1,000 openings a second, round the sources
				defer wg.Done()
				tick := time.NewTicker(time.Millisecond)
				defer tick.Stop()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-tick.C:
						_, _ = a[i%len(a)].WriteTo(open, ln.Addr())
					}
				}
			}()
			c := Client(udpSocket(t, nil, 0), ln.Addr(), cfg)
			defer c.Close()
			echo(t, c, randomBytes(256<<10, 7))
			close(stop)
			wg.Wait()
			require.NoError(t, <-errc)
			require.GreaterOrEqual(t, ln.Stats().Evicted, uint64(DefaultBacklog), "the flood filled the backlog")
		})
	}
}

// drainReads reads pc until nothing more is waiting and returns the bytes
// read. In a synctest bubble, where a read deadline 1 ms away passes only
// once every goroutine is blocked, that is everything sent to pc.
func drainReads(t *testing.T, pc net.PacketConn) int {
	t.Helper()
	got := 0
	buf := make([]byte, 2048)
	for {
		require.NoError(t, pc.SetReadDeadline(time.Now().Add(time.Millisecond)))
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			var ne net.Error
			require.True(t, errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout(), "%v", err)
			return got
		}
		got += n
	}
}

// TestAmplificationLimit: 20 sources each send a listener 1 to 3
// copies of an opening and then only read, as spoofed addresses would
// (they never answer): the listener sends each at most 3 times the bytes
// it sent (RFC 9000 §8.1), retransmissions, the handshake's end and
// everything else included, counted at the source, over the listener's
// whole handshake timeout. Every protocol's stream and message listener,
// each sent its own kind's opening (an association not yet validated),
// the other kind's (which it drops, or answers as incompatible) and, where
// the protocol has one, an opening it refuses for its parameters (an
// answer without an association). The handshake timeout is two minutes
// of virtual time and the bytes are counted over 130 s, beyond the 120 s
// an Avara reference resends to a login: every engine would send its
// answer many times over it:
// the limit, not the engine's resend schedule, is what holds the bytes
// down, and the listener's answer stops at it.
func TestAmplificationLimit(t *testing.T) {
	const sources = 20
	for _, hp := range hostileProtocols {
		for _, stream := range []bool{true, false} {
			type opening struct {
				name     string
				b        []byte
				answered bool // the listener answers it
			}
			openings := []opening{
				{"own", firstDatagramOf(t, hp.Protocol, stream), true},
				{"other", firstDatagramOf(t, hp.Protocol, !stream), false},
			}
			if hp.refused != nil {
				b := hp.refused(stream)
				if stream {
					b = seal(b)
				}
				openings = append(openings, opening{"refused", b, true})
			}
			for _, o := range openings {
				t.Run(hp.String()+"/"+kindName(stream)+"/"+o.name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						vp := newVPath(t, 0)
						// 130 s, beyond the 120 s an Avara reference keeps
						// resending to a login (its dead timeout), with half-open
						// peers kept until 2 minutes.
						ln := listenKind(vp.server, vcfg(Config{Protocol: hp.Protocol, HandshakeTimeout: 2 * time.Minute}), stream)
						defer ln.Close()
						a := make([]net.PacketConn, sources)
						sent := make([]int, sources)
						for i := range a {
							a[i] = vp.socket(t, 5000+i)
							for range 1 + i%3 {
								_, err := a[i].WriteTo(o.b, ln.Addr())
								require.NoError(t, err)
								sent[i] += len(o.b)
							}
						}
						time.Sleep(130 * time.Second) // every half-open peer ends
						total := 0
						for i, pc := range a {
							got := drainReads(t, pc)
							require.LessOrEqual(t, got, 3*sent[i], "source %d sent %d bytes", i, sent[i])
							total += got
						}
						t.Logf("answered %d bytes to %d sources", total, sources)
						if o.answered {
							require.Positive(t, total, "the listener answered")
						}
					})
				})
			}
		}
	}
}

// spoofConn relabels the datagrams that reach it from the attacker's
// address as coming from victim: what a host able to send from victim's
// address, but unable to see the traffic, can do.
type spoofConn struct {
	net.PacketConn
	attacker, victim net.Addr
}

func (c *spoofConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, from, err := c.PacketConn.ReadFrom(p)
	if err == nil && keyOf(from) == keyOf(c.attacker) {
		from = c.victim
	}
	return n, from, err
}

// spoofed is a connected pair of one kind whose listener's socket takes
// the attacker's datagrams as the client's (toServer), or whose client's
// socket takes them as the listener's.
type spoofed struct {
	p        Protocol
	stream   bool
	c, s     net.Conn // the client and the listener's conn
	ln       net.Listener
	attacker net.PacketConn
	target   net.Addr // where the attacker sends: the victim's socket
	victim   net.Conn // the end that takes the attacker's datagrams
}

// newSpoofed connects a spoofed pair of protocol p, streams or message
// conns; imp, if not nil, impairs what the client and the listener send.
// Everything is closed at the end of the test.
func newSpoofed(t *testing.T, p Protocol, stream, toServer bool, imp *impair.Config) *spoofed {
	t.Helper()
	x := &spoofed{p: p, stream: stream, attacker: udpSocket(t, nil, 0)}
	t.Cleanup(func() { x.attacker.Close() })
	cfg := &Config{Protocol: p}
	spc, cpc := udpSocket(t, imp, 1), udpSocket(t, imp, 2)
	if toServer {
		spc = &spoofConn{PacketConn: spc, attacker: x.attacker.LocalAddr(), victim: cpc.LocalAddr()}
		x.target = spc.LocalAddr()
	} else {
		cpc = &spoofConn{PacketConn: cpc, attacker: x.attacker.LocalAddr(), victim: spc.LocalAddr()}
		x.target = cpc.LocalAddr()
	}
	x.ln = listenKind(spc, cfg, stream)
	c := dialKind(cpc, x.ln.Addr(), cfg, stream)
	x.c = c
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	require.NoError(t, c.Handshake(ctx))
	x.s = accept(t, x.ln)
	t.Cleanup(func() {
		x.c.Close()
		x.s.Close()
		x.ln.Close()
	})
	x.victim = x.c
	if toServer {
		x.victim = x.s
	}
	require.NoError(t, x.c.SetDeadline(time.Now().Add(hangGuard)))
	require.NoError(t, x.s.SetDeadline(time.Now().Add(hangGuard)))
	return x
}

// send sends b from the attacker to the victim, sealed if the pair are
// streams.
func (x *spoofed) send(b []byte) {
	if x.stream {
		b = seal(bytes.Clone(b))
	}
	_, _ = x.attacker.WriteTo(b, x.target)
}

// repeat runs send(b) every interval in the background until the returned
// stop is called, which waits for it to return.
func (x *spoofed) repeat(every time.Duration, send func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			send()
			select {
			case <-done:
				return
			case <-time.After(every):
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// transfer sends 1 MiB from the client to the listener's stream and
// checks that every byte arrives, in order, then EOF; mid, if not nil,
// runs once the first half has arrived, before the rest is sent.
func (x *spoofed) transfer(t *testing.T, mid func()) {
	t.Helper()
	c, s := x.c.(*Conn), x.s.(*Conn)
	data := randomBytes(1<<20, 9)
	half := len(data) / 2
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data[:half])
		werr <- err
	}()
	got := make([]byte, half, len(data))
	_, err := io.ReadFull(s, got)
	require.NoError(t, err)
	require.NoError(t, <-werr)
	if mid != nil {
		mid()
	}
	writeThenCloseWrite(c, data[half:], werr)
	rest, err := io.ReadAll(s)
	require.NoError(t, err)
	require.NoError(t, <-werr)
	got = append(got, rest...)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "got %d of %d bytes", len(got), len(data))
}

// exchange sends n messages each way between the client and the
// listener's message conn and checks that each end reads exactly the
// other's, in order (one at a time).
func (x *spoofed) exchange(t *testing.T, n int, tag string) {
	t.Helper()
	exchangeMessages(t, x.p, x.c.(*MessageConn), x.s.(*MessageConn), n, tag)
}

// exchangeMessages sends n messages each way between c and s, of
// protocol p, and checks that each end reads exactly the other's, in
// order (one at a time).
func exchangeMessages(t *testing.T, p Protocol, c, s *MessageConn, n int, tag string) {
	t.Helper()
	for i := range n {
		m := []byte(fmt.Sprintf("\x0f%s %05d", tag, i))
		require.NoError(t, c.WriteMessage(Message{Data: m, Number: testNumber(p)}))
		got, err := s.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, string(m), string(got.Data))
		require.NoError(t, s.WriteMessage(Message{Data: append(m, '!'), Number: testNumber(p)}))
		got, err = c.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, string(append(m, '!')), string(got.Data))
	}
}

// TestHostileSpoofedRestartAndClose: while a stream carries 1 MiB, or a
// message conn carries messages, a blind attacker sends, every 5 ms, from
// the address of one end's peer, what announces a restarted peer or a
// close (hostileProtocol.announces). Protection: the challenge of such
// announcements (the live peer answers it). The transfer completes
// intact, the messages go on both ways, and the victim counts refused
// spoofs, no restart.
func TestHostileSpoofedRestartAndClose(t *testing.T) {
	for _, hp := range hostileProtocols {
		for _, a := range hp.announces {
			for _, stream := range []bool{true, false} {
				for _, toServer := range []bool{true, false} {
					if !a.on.has(stream) || !toServer && !a.toClient {
						continue
					}
					name := hp.String() + "/" + kindName(stream) + "/" + a.name + "-to-client"
					if toServer {
						name = hp.String() + "/" + kindName(stream) + "/" + a.name + "-to-server"
					}
					t.Run(name, func(t *testing.T) {
						x := newSpoofed(t, hp.Protocol, stream, toServer, nil)
						stop := x.repeat(5*time.Millisecond, func() { x.send(a.b) })
						if stream {
							x.transfer(t, nil)
							stop()
							// An opening reaches the engine, which
							// challenges it; anything else is dropped for
							// its seal once the stream is keyed.
							require.Eventually(t, func() bool {
								st := engineStats(x.victim)
								return st.Challenges > 0 && st.SpoofsRefused > 0 || badSeals(x.victim) > 0
							}, hangGuard, time.Millisecond, "spoofs were challenged and refused, or dropped for their seal")
						} else {
							deadline := time.Now().Add(hangGuard)
							for engineStats(x.victim).SpoofsRefused < 2 {
								x.exchange(t, 10, "live")
								require.True(t, time.Now().Before(deadline), "no spoof refused")
							}
							stop()
							x.exchange(t, 10, "after")
						}
						require.Zero(t, engineStats(x.victim).PeerRestarts)
					})
				}
			}
		}
	}
}

// TestHostileSpoofsUnderLoss: at 2 % loss each way, a blind attacker
// announces the client's close or restart to a message listener from the
// client's address until the listener has challenged it 100 times. Each
// challenge probes the live client four times (engine.ChallengeProbes),
// so a lost probe or answer does not let a spoof through: every
// challenge is refused, and the conn still carries messages both ways.
// With one probe per challenge, about 4 % of challenges would pass. (A
// message conn has nothing but the challenge; a stream drops such a
// datagram for its keyed seal before its engine sees it, unless it is an
// opening, see TestHostileSpoofedRestartAndClose.)
func TestHostileSpoofsUnderLoss(t *testing.T) {
	const challenges = 100
	for _, hp := range hostileProtocols {
		for _, a := range hp.announces {
			if !a.underLoss {
				continue
			}
			t.Run(hp.String()+"/"+a.name, func(t *testing.T) {
				x := newSpoofed(t, hp.Protocol, false, true, &impair.Config{Loss: 0.02})
				deadline := time.Now().Add(hangGuard)
				for {
					st := engineStats(x.s)
					n, refused := st.Challenges, st.SpoofsRefused
					if n >= challenges && refused == n {
						break
					}
					require.True(t, time.Now().Before(deadline), "%d challenges, %d refused", n, refused)
					select {
					case <-doneOf(x.s):
						t.Fatalf("a spoof was taken after %d challenges, %d refused", n, refused)
					default:
					}
					if n < challenges {
						x.send(a.b)
					}
					time.Sleep(2 * time.Millisecond)
				}
				st := engineStats(x.s)
				require.Equal(t, st.Challenges, st.SpoofsRefused, "every challenge refused")
				require.Zero(t, st.PeerRestarts)
				x.exchange(t, 20, "after")
			})
		}
	}
}

// echoBothWays writes n bytes each way between a and b at once and checks
// that each end reads exactly what the other wrote.
func echoBothWays(t *testing.T, a, b *Conn, n int) {
	t.Helper()
	require.NoError(t, a.SetDeadline(time.Now().Add(hangGuard)))
	require.NoError(t, b.SetDeadline(time.Now().Add(hangGuard)))
	data := randomBytes(n, 3)
	errs := make(chan error, 2)
	for _, w := range []*Conn{a, b} {
		go func() { _, err := w.Write(data); errs <- err }()
	}
	for _, r := range []*Conn{a, b} {
		got := make([]byte, n)
		_, err := io.ReadFull(r, got)
		require.NoError(t, err)
		require.Equal(t, data, got)
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
}

// TestHostileBlindSweep: in the middle of a 1 MiB transfer, a blind
// attacker sends the listener, from the client's address, a sweep of
// forged datagrams (hostileProtocol.sweeps), 50 at a time within the
// socket buffer. Nothing forged is delivered (the transfer's bytes are
// exact) and the stream does not stall.
func TestHostileBlindSweep(t *testing.T) {
	for _, hp := range hostileProtocols {
		for _, sw := range hp.sweeps {
			t.Run(hp.String()+"/"+sw.name, func(t *testing.T) {
				x := newSpoofed(t, hp.Protocol, true, true, nil)
				x.transfer(t, func() {
					for i := range sw.n {
						x.send(sw.datagram(i))
						if i%50 == 49 {
							time.Sleep(time.Millisecond) // within the socket buffer
						}
					}
				})
				if sw.check != nil {
					sw.check(t, x.s.(*Conn))
				}
			})
		}
	}
}

// recordingConn records every datagram written through it.
type recordingConn struct {
	net.PacketConn
	mu  sync.Mutex
	log [][]byte
}

func (c *recordingConn) WriteTo(p []byte, to net.Addr) (int, error) {
	c.mu.Lock()
	c.log = append(c.log, bytes.Clone(p))
	c.mu.Unlock()
	return c.PacketConn.WriteTo(p, to)
}

// TestHostileReplay: an attacker opens a session of its own with the
// listener, sends 64 KiB on a stream (or 100 messages of up to 1000
// bytes) and closes it, recording every datagram it sent; it then
// replays all of it, again and again, from the address of a live client
// (hostileProtocol.replay). Protections: each protocol's numbering of a
// session from random values (its nonce, session ID, sequence numbers,
// datagram IDs or checksum seed), so that the old session's datagrams
// fall outside the live one's, and the challenge of restarts and closes.
// The live stream's transfer completes intact; the live message conn
// keeps exchanging messages and does not end.
func TestHostileReplay(t *testing.T) {
	for _, hp := range hostileProtocols {
		for _, stream := range []bool{true, false} {
			if !hp.replay.has(stream) {
				continue
			}
			t.Run(hp.String()+"/"+kindName(stream), func(t *testing.T) {
				x := newSpoofed(t, hp.Protocol, stream, true, nil)
				replay := x.oldSession(t)
				if stream {
					stop := x.repeat(20*time.Millisecond, func() {
						for _, b := range replay {
							_, _ = x.attacker.WriteTo(b, x.target)
						}
					})
					defer stop()
					x.transfer(t, nil)
					return
				}
				x.exchange(t, 5, "before")
				for range 3 {
					for _, b := range replay {
						_, _ = x.attacker.WriteTo(b, x.target)
					}
					x.exchange(t, 5, "live")
				}
				select {
				case <-doneOf(x.s):
					t.Fatalf("the live conn ended: %v", x.s.(*MessageConn).failure())
				default:
				}
			})
		}
	}
}

// oldSession opens a session of the pair's kind with the pair's
// listener, from another socket, sends 64 KiB (streams) or 100 messages of
// up to 1000 bytes (message conns), closes it, waits for its end (the
// listener accepts and reads it) and returns every datagram it sent,
// having checked that they hold at least the bytes written (streams) or
// every message.
func (x *spoofed) oldSession(t *testing.T) [][]byte {
	t.Helper()
	rec := &recordingConn{PacketConn: udpSocket(t, nil, 3)}
	old := dialKind(rec, x.target, &Config{Protocol: x.p}, x.stream)
	require.NoError(t, old.SetDeadline(time.Now().Add(hangGuard)))
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	require.NoError(t, old.Handshake(ctx))
	const messages = 100
	read := make(chan error, 1)
	go func() {
		s, err := x.ln.Accept()
		if err == nil {
			defer s.Close()
			_ = s.SetDeadline(time.Now().Add(hangGuard))
			if x.stream {
				_, err = io.Copy(io.Discard, s)
			}
			for i := 0; i < messages && err == nil && !x.stream; i++ {
				_, err = s.(*MessageConn).ReadMessage()
			}
		}
		read <- err
	}()
	const streamBytes = 64 << 10
	if x.stream {
		_, err := old.Write(randomBytes(streamBytes, 3))
		require.NoError(t, err)
	} else {
		mc := old.(*MessageConn)
		for i := range messages { // about a datagram each
			m := append([]byte(fmt.Sprintf("\x0fold %d ", i)), make([]byte, 1000)...)
			require.NoError(t, mc.WriteMessage(Message{Data: m[:min(len(m), mc.MaxMessage())], Number: testNumber(x.p)}))
		}
	}
	require.NoError(t, old.Close())
	select {
	case <-old.Done():
	case <-time.After(hangGuard):
		t.Fatal("the earlier session did not end")
	}
	require.NoError(t, <-read)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	all := bytes.Join(rec.log, nil)
	if x.stream {
		require.GreaterOrEqual(t, len(all), streamBytes, "%d datagrams", len(rec.log))
	}
	for i := 0; i < messages && !x.stream; i++ {
		require.True(t, bytes.Contains(all, []byte(fmt.Sprintf("\x0fold %d ", i))), "message %d recorded", i)
	}
	return rec.log
}

// blindSources is a listener's PacketConn on which one attacker socket
// stands for many blind sources: each datagram from the attacker starts
// with a 4-byte source number, stripped, and reads as coming from that
// source's address (10.x.y.z:9); what the listener sends to those
// addresses is counted and goes nowhere. Other datagrams pass unchanged.
type blindSources struct {
	net.PacketConn
	attacker net.Addr

	mu       sync.Mutex
	received map[int]int // bytes the listener read from each source
	sent     map[int]int // bytes the listener sent each source
}

func sourceAddr(i int) *net.UDPAddr {
	return &net.UDPAddr{IP: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)), Port: 9}
}

func sourceOf(a net.Addr) (int, bool) {
	u, ok := a.(*net.UDPAddr)
	if !ok || u.Port != 9 || u.IP.To4() == nil || u.IP.To4()[0] != 10 {
		return 0, false
	}
	ip := u.IP.To4()
	return int(ip[1])<<16 | int(ip[2])<<8 | int(ip[3]), true
}

func (c *blindSources) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, from, err := c.PacketConn.ReadFrom(p)
		if err != nil || keyOf(from) != keyOf(c.attacker) {
			return n, from, err
		}
		if n < 4 {
			continue
		}
		i := int(binary.BigEndian.Uint32(p))
		copy(p, p[4:n])
		c.mu.Lock()
		c.received[i] += n - 4
		c.mu.Unlock()
		return n - 4, sourceAddr(i), nil
	}
}

func (c *blindSources) WriteTo(p []byte, to net.Addr) (int, error) {
	if i, ok := sourceOf(to); ok {
		c.mu.Lock()
		c.sent[i] += len(p)
		c.mu.Unlock()
		return len(p), nil
	}
	return c.PacketConn.WriteTo(p, to)
}

// TestHostileBlindMessageSources: 4,000 blind sources each get as far as
// a source can with a message listener without seeing its answers
// (hostileProtocol.blind), 2,000 sources a second of virtual time, while
// a real client connects in the middle of the flood and exchanges
// messages. None reaches Accept, every half-open conn ends, and each
// source is sent at most 3 times what it sent. The flood turns the
// backlog (128) over 31 times: more sources would test nothing more.
func TestHostileBlindMessageSources(t *testing.T) {
	const sources = 4000
	for _, hp := range hostileProtocols {
		if hp.blind == nil {
			continue
		}
		t.Run(hp.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				vp := newVPath(t, 0)
				attacker := vp.socket(t, 5000)
				pc := &blindSources{PacketConn: vp.server, attacker: attacker.LocalAddr(),
					received: map[int]int{}, sent: map[int]int{}}
				ln := ServerMessages(pc, vcfg(Config{Protocol: hp.Protocol}))
				defer ln.Close()

				accepted := make(chan *MessageConn, 1) // the real client's
				var blindAccepted atomic.Int64
				go func() {
					for {
						c, err := ln.AcceptMessages()
						if err != nil {
							return
						}
						if _, blind := sourceOf(c.RemoteAddr()); blind {
							blindAccepted.Add(1)
							c.Close()
							continue
						}
						accepted <- c
					}
				}()
				var wg sync.WaitGroup
				half := make(chan struct{})
				wg.Go(func() {
					for i := range sources {
						for _, b := range hp.blind(i) {
							_, err := attacker.WriteTo(append(binary.BigEndian.AppendUint32(nil, uint32(i)), b...), vp.server.LocalAddr())
							require.NoError(t, err)
						}
						if i == sources/2 {
							close(half)
						}
						if i%10 == 9 {
							// The backlog (128) turns over in 64 ms, time
							// for the real client's handshake.
							time.Sleep(5 * time.Millisecond)
						}
					}
				})

				<-half
				c := ClientMessages(vp.client, ln.Addr(), vcfg(Config{Protocol: hp.Protocol}))
				defer endNow(c)
				require.NoError(t, c.Handshake(context.Background()))
				var s *MessageConn
				select {
				case s = <-accepted:
				case <-time.After(hangGuard):
					t.Fatalf("the real client was not accepted (%d blind sources were)", blindAccepted.Load())
				}
				defer endNow(s)
				require.Equal(t, keyOf(c.LocalAddr()), keyOf(s.RemoteAddr()))
				exchangeMessages(t, hp.Protocol, c, s, 10, "ping")
				wg.Wait()

				time.Sleep(time.Minute) // every half-open conn ends
				ln.listener.q.mu.Lock()
				require.Empty(t, ln.listener.q.pending, "the blind sources' conns ended")
				ln.listener.q.mu.Unlock()
				require.Zero(t, blindAccepted.Load(), "blind sources accepted")
				pc.mu.Lock()
				defer pc.mu.Unlock()
				answered := 0
				for i := range sources {
					require.LessOrEqual(t, pc.sent[i], 3*pc.received[i], "source %d", i)
					if pc.sent[i] > 0 {
						answered++
					}
				}
				t.Logf("%d of %d sources answered; listener stats %+v", answered, sources, ln.Stats())
				require.Positive(t, answered)
			})
		})
	}
}

// mutateConn sends, after a fraction of its datagrams, a copy either cut
// short or with one bit flipped, as a path that corrupts datagrams past
// the UDP checksum would.
type mutateConn struct {
	net.PacketConn
	mu      sync.Mutex
	rng     *rand.Rand
	rate    float64
	mutated int
}

func (c *mutateConn) WriteTo(p []byte, to net.Addr) (int, error) {
	n, err := c.PacketConn.WriteTo(p, to)
	c.mu.Lock()
	var bad []byte
	if err == nil && len(p) > 1 && c.rng.Float64() < c.rate {
		bad = bytes.Clone(p)
		if c.rng.IntN(2) == 0 {
			bad = bad[:c.rng.IntN(len(p))]
		} else {
			bad[c.rng.IntN(len(p))] ^= 1 << c.rng.IntN(8)
		}
		c.mutated++
	}
	c.mu.Unlock()
	if bad != nil {
		_, _ = c.PacketConn.WriteTo(bad, to)
	}
	return n, err
}

// TestHostileMutation: 20 % of the datagrams of each end are followed by a
// truncated or bit-flipped copy. Protection: each engine's checks of what
// it decodes, and the stream's drop of implausible frames. The echo
// completes intact, or fails with an error; it never stalls silently (the
// hang guard would fail it).
func TestHostileMutation(t *testing.T) {
	for _, hp := range hostileProtocols {
		p := hp.Protocol
		t.Run(p.String(), func(t *testing.T) {
			cfg := &Config{Protocol: p}
			spc := &mutateConn{PacketConn: udpSocket(t, nil, 0), rng: rand.New(rand.NewPCG(1, uint64(p))), rate: 0.2}
			cpc := &mutateConn{PacketConn: udpSocket(t, nil, 0), rng: rand.New(rand.NewPCG(2, uint64(p))), rate: 0.2}
			ln := Server(spc, cfg)
			defer ln.Close()
			errc := echoServer(t, ln)
			c := Client(cpc, ln.Addr(), cfg)
			defer c.Close()
			defer func() {
				if t.Failed() {
					t.Logf("client %+v stream ignored %d", c.Stats(), c.st.Ignored())
				}
			}()
			echo(t, c, randomBytes(1<<20, 8))
			require.NoError(t, <-errc)
			require.Positive(t, c.Stats().PacketsRejected, "corrupted copies were dropped")
			spc.mu.Lock()
			cpc.mu.Lock()
			smut, cmut := spc.mutated, cpc.mutated
			cpc.mu.Unlock()
			spc.mu.Unlock()
			t.Logf("%v: %d and %d mutated copies", p, smut, cmut)
			require.Positive(t, smut)
			require.Positive(t, cmut)
		})
	}
}

// TestHostileIdleCost: 1,000 idle streams, and the heap each costs the
// listener's process once idle (receive and send buffers, the congestion
// controllers' models, the handshake timers and the deadlines freed); the
// clients run in a child process. The figure is 1.4–3.9 KB on a quiet
// run, but other tests' conns that end while it is measured move the
// process's heap by up to about 4 KB a stream (5.9 KB was seen once for
// Airhook, 2.1 KB typical), so the bound is 8 KiB: it catches buffers or
// models kept by idle streams (40–56 KiB each before trimming), while the
// 4 KiB target is checked at 10,000 streams, in a process of their own,
// by bench/cmd/hostile. Wirefox's bound is that target: its streams
// cost 3.3–3.6 KB here, 1,536 bytes of it the engine's Session.
func TestHostileIdleCost(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures are measured without the race detector: go test -run 'Allocs|IdleCost' .")
	}
	const n = 1000
	for _, hp := range hostileProtocols {
		t.Run(hp.String(), func(t *testing.T) {
			perStream := idleHeap(t, hp.Protocol, n)
			t.Logf("%v: %d bytes of heap per idle stream", hp, perStream)
			bound := 8 << 10
			if hp.Protocol == Wirefox {
				bound = 4 << 10 // the Wirefox target: its Session fits 1,536 bytes
			}
			require.Less(t, perStream, bound)
		})
	}
}

// TestHostileIdleClients is the client process of TestHostileIdleCost,
// which runs it with RUDP_IDLE_ADDR set: it opens RUDP_IDLE_STREAMS
// streams to that address, writes "hi" on each, prints "ready" and holds
// them until its standard input ends.
func TestHostileIdleClients(t *testing.T) {
	addr := os.Getenv("RUDP_IDLE_ADDR")
	if addr == "" {
		t.Skip("the client process of TestHostileIdleCost")
	}
	n, err := strconv.Atoi(os.Getenv("RUDP_IDLE_STREAMS"))
	require.NoError(t, err)
	p, err := ParseProtocol(os.Getenv("RUDP_IDLE_PROTOCOL"))
	require.NoError(t, err)
	raddr, err := net.ResolveUDPAddr("udp", addr)
	require.NoError(t, err)
	cfg := &Config{Protocol: p, HandshakeTimeout: hangGuard}
	conns := make([]*Conn, n)
	for i := range conns {
		// Without batching, a client socket keeps one small read buffer.
		c := Client(plainConn{udpSocket(t, nil, 0)}, raddr, cfg)
		conns[i] = c
		_, err := c.Write([]byte("hi"))
		require.NoError(t, err)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
	for _, c := range conns {
		select {
		case <-c.Done():
		case <-time.After(hangGuard):
			t.Fatal("a stream did not end")
		}
	}
}

// waitQuiet waits until no datagram reaches conns for 50 ms, so that
// whatever a burst of traffic holds has been given back.
func waitQuiet(t testing.TB, conns []*Conn) {
	t.Helper()
	received := func() (n uint64) {
		for _, c := range conns {
			n += c.Stats().PacketsReceived
		}
		return n
	}
	deadline := time.Now().Add(hangGuard)
	for last := received(); ; {
		time.Sleep(50 * time.Millisecond)
		now := received()
		if now == last {
			return
		}
		require.True(t, time.Now().Before(deadline), "datagrams still arriving after %v", hangGuard)
		last = now
	}
}

// plainConn hides a *net.UDPConn's type, so that an endpoint uses plain
// ReadFrom and WriteTo.
type plainConn struct{ net.PacketConn }

// idleHeap accepts n streams of protocol p, each from its own client
// socket in a child process, reads "hi" on each, waits until they are
// idle and returns the listener process's heap growth per stream.
func idleHeap(t testing.TB, p Protocol, n int) int {
	t.Helper()
	cfg := &Config{Protocol: p, Backlog: n, HandshakeTimeout: hangGuard}
	ln := Server(udpSocket(t, nil, 0), cfg)
	defer ln.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestHostileIdleClients$")
	cmd.Env = append(os.Environ(), "RUDP_IDLE_ADDR="+ln.Addr().String(),
		"RUDP_IDLE_STREAMS="+strconv.Itoa(n), "RUDP_IDLE_PROTOCOL="+p.String())
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	defer func() {
		stdin.Close()
		require.NoError(t, cmd.Wait(), "the client process failed")
	}()

	conns := make([]*Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	buf := make([]byte, 2)
	for range n {
		c, err := ln.Accept()
		require.NoError(t, err)
		conns = append(conns, c.(*Conn))
		require.NoError(t, c.SetDeadline(time.Now().Add(hangGuard)))
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, "hi", string(buf))
		require.NoError(t, c.SetDeadline(time.Time{})) // an idle stream holds no deadline
	}
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("client process said %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		require.NoError(t, err)
	case <-time.After(hangGuard):
		t.Fatal("client process not ready")
	}
	// Idle: a settle more than trimAfter after the last bytes moved
	// frees the buffers. Rather than wait for it, settle each now and
	// then trim it as that settle would (Conn.settled at trimAfter past
	// its last activity).
	for _, c := range conns {
		c.a.mu.Lock()
		c.a.settleLocked(time.Now())
		c.settled(c.active.Add(trimAfter + 1))
		c.a.mu.Unlock()
	}
	// Measured once nothing arrives any more: a socket reader holds
	// receive buffers only while datagrams come in.
	waitQuiet(t, conns)
	idle := heapAlloc()
	if profile := os.Getenv("RUDP_IDLE_HEAPPROFILE"); profile != "" {
		f, err := os.Create(profile)
		require.NoError(t, err)
		require.NoError(t, pprof.Lookup("heap").WriteTo(f, 0))
		f.Close()
	}

	// The base: the same process once every stream has ended.
	for _, c := range conns {
		c.Close()
	}
	require.NoError(t, stdin.Close())
	for _, c := range conns {
		select {
		case <-c.Done():
		case <-time.After(hangGuard):
			t.Fatal("an idle stream did not end")
		}
	}
	conns = nil
	return int((int64(idle) - int64(heapAlloc())) / int64(n))
}

// TestIdleTrimThenTransfer: a stream trimmed while idle (stream and engine
// buffers freed, see engine.Trimmer) moves 1 MiB each way intact
// afterwards. Virtual time (see vpath): the idle second costs nothing.
func TestIdleTrimThenTransfer(t *testing.T) {
	for _, p := range Protocols() {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, s, _ := newVPath(t, 0).streams(t, vcfg(Config{Protocol: p}))
				errc := make(chan error, 1)
				go func() {
					_, err := io.Copy(s, s) // echo
					if err == nil {
						err = s.CloseWrite()
					}
					errc <- err
				}()
				echoSome := func(n int, seed uint64) {
					data := randomBytes(n, seed)
					_, err := c.Write(data)
					require.NoError(t, err)
					got := make([]byte, n)
					_, err = io.ReadFull(c, got)
					require.NoError(t, err)
					require.Equal(t, data, got)
				}
				echoSome(256<<10, 1)
				time.Sleep(trimAfter + 100*time.Millisecond)
				for _, x := range []*Conn{c, s} {
					x.a.mu.Lock()
					x.a.settleLocked(time.Now()) // trims
					x.a.mu.Unlock()
				}
				echoSome(1<<20, 2)
				require.NoError(t, c.CloseWrite())
				require.NoError(t, <-errc)
			})
		})
	}
}

// TestListenerCloseDropsHalfOpen: closing a listener ends at once the new
// peers still in their handshake (a blind flood's, say), which could
// never be accepted, instead of keeping them, their timers and the
// socket until their handshake times out.
func TestListenerCloseDropsHalfOpen(t *testing.T) {
	for _, p := range Protocols() {
		open := openingOf(t, p)
		ln := Server(udpSocket(t, nil, 0), &Config{Protocol: p})
		blindFlood(t, &ln.listener, newAttackers(t, 3), open)
		ln.listener.q.mu.Lock()
		halfOpen := slices.Clone(ln.listener.q.pending)
		ln.listener.q.mu.Unlock()
		require.Len(t, halfOpen, 3)
		require.NoError(t, ln.Close())
		for _, c := range halfOpen {
			select {
			case <-c.Done():
			default:
				t.Fatalf("%v: a half-open peer outlived its listener", p)
			}
		}
		select {
		case <-ln.listener.ep.Done(): // the socket was closed: the reader stopped
		case <-time.After(hangGuard):
			t.Fatalf("%v: the listener's socket outlived it", p)
		}
	}
}
