package porous

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/rudpkit/rudp/trace"
	"github.com/stretchr/testify/require"
)

// testPacket is packet i of channel ch: its size varies with i (0 to a few
// fragments) and its content names it.
func testPacket(ch uint8, i int, maxSize int) []byte {
	n := (i * 7919) % maxSize
	if n < 5 {
		n = 5
	}
	if i%97 == 0 {
		n = 5
	}
	p := make([]byte, n)
	p[0] = ch
	binary.BigEndian.PutUint32(p[1:], uint32(i))
	for j := 5; j < n; j++ {
		p[j] = byte(i + j)
	}
	return p
}

// checkInvariants verifies the bookkeeping of s. It checks with plain
// comparisons, not require: the session fuzzer runs it twice per record.
func checkInvariants(t testing.TB, s *Session) {
	t.Helper()
	switch {
	case s.pending < 0 || s.pending > s.cfg.MaxQueued+s.cfg.Channels: // see Session.full
		t.Fatalf("pending %d of %d", s.pending, s.cfg.MaxQueued)
	case s.pendBytes < 0 || s.cc.InFlight() < 0:
		t.Fatalf("pending bytes %d, in flight %d", s.pendBytes, s.cc.InFlight())
	case s.ring.n > TransferWindow:
		t.Fatalf("%d frames in the transfer queue", s.ring.n)
	case s.cc.Window() < MaxFrameSize:
		t.Fatalf("congestion window %d", s.cc.Window())
	case len(s.ackq) > maxAckQueue || s.ctl.Len() > maxControl:
		t.Fatalf("%d acks and %d control frames queued", len(s.ackq), s.ctl.Len())
	}
	flight := 0
	for i := range s.ring.n {
		f := &s.ring.slots[(s.ring.head+i)&(len(s.ring.slots)-1)]
		if f.seq != s.ring.base+uint32(i) {
			t.Fatalf("frame %d of the queue has seq %d, base %d", i, f.seq, s.ring.base)
		}
		if f.state == fsInFlight {
			if !f.pkt.InFlight() {
				t.Fatalf("frame %d in flight, not for the controller", f.seq)
			}
			flight += f.pkt.Size
		}
	}
	if flight != s.cc.InFlight() {
		t.Fatalf("%d bytes in flight, the controller counts %d", flight, s.cc.InFlight())
	}
	rx := 0
	exempt := make([]int, len(s.rxch))
	for ch, c := range s.rxch {
		n := 0
		c.each(func(e *rxEntry) {
			rx += entryCost + cap(e.buf)
			exempt[ch] += e.exempt
			n++
			if (e.seq-c.base)&seqMask24 >= uint32(ChannelWindow) {
				t.Fatalf("channel %d holds seq %d, base %d", ch, e.seq, c.base)
			}
		})
		if c.n != n {
			t.Fatalf("channel %d counts %d entries, holds %d", ch, c.n, n)
		}
		if c.pages != nil {
			for _, pg := range c.pages {
				if pg != nil {
					rx += pageCost
					exempt[ch] += pg.exempt
					if pg.n == 0 {
						t.Fatalf("channel %d keeps an empty page", ch)
					}
				}
			}
		}
	}
	if rx != s.rxBytes {
		t.Fatalf("receive memory %d, counted %d", rx, s.rxBytes)
	}
	if s.Inbox.Len() != s.recvCost.Len() {
		t.Fatalf("%d messages received, %d costs", s.Inbox.Len(), s.recvCost.Len())
	}
	recv, msgs, costs := 0, s.Inbox.Clone(), s.recvCost.Clone()
	for m, ok := msgs.Take(); ok; m, ok = msgs.Take() {
		c, _ := costs.Take()
		recv += c.n
		exempt[m.Channel] += c.exempt
	}
	if recv != s.recvBytes {
		t.Fatalf("delivered memory %d, counted %d", recv, s.recvBytes)
	}
	for ch, c := range s.rxch {
		if exempt[ch] != c.exempt || c.exempt > s.rxReserve() {
			t.Fatalf("channel %d reserve %d, counted %d, at most %d", ch, exempt[ch], c.exempt, s.rxReserve())
		}
	}
	if s.rxBytes+s.recvBytes > s.rxLimit() {
		t.Fatalf("receive memory %d+%d above %d", s.rxBytes, s.recvBytes, s.rxLimit())
	}
}

// transfer sends n reliable packets each way on every channel over p and
// checks that each arrives once, in order per channel.
func transfer(t *testing.T, p *pair, n int, maxSize int, limit int) {
	t.Helper()
	chans := p.A.cfg.Channels
	type side struct {
		s    *Session
		sent []int
		got  []int
	}
	sides := []*side{{s: p.A, sent: make([]int, chans), got: make([]int, chans)}, {s: p.B, sent: make([]int, chans), got: make([]int, chans)}}
	feed := func() {
		for _, sd := range sides {
			for ch := range chans {
				for sd.sent[ch] < n {
					err := sd.s.Send(testPacket(uint8(ch), sd.sent[ch], maxSize), engine.SendOptions{Channel: uint8(ch)})
					if err != nil {
						require.ErrorIs(t, err, engine.ErrQueueFull)
						break
					}
					sd.sent[ch]++
				}
			}
		}
	}
	drain := func() {
		for i, sd := range sides {
			other := sides[1-i]
			for _, m := range recvAll(sd.s) {
				ch := int(m.Channel)
				require.Equal(t, testPacket(uint8(ch), other.got[ch], maxSize), m.Data, "channel %d packet %d", ch, other.got[ch])
				other.got[ch]++
			}
			checkInvariants(t, sd.s)
		}
	}
	// At most 1.6 s of virtual time in these tests (30 % loss).
	runWithin(p, 20*time.Second, limit, func() bool {
		feed()
		drain()
		for _, sd := range sides {
			for ch := range chans {
				if sd.got[ch] < n {
					return false
				}
			}
			if sd.s.Pending() > 0 {
				return false
			}
		}
		return true
	})
	for _, s := range []*Session{p.A, p.B} {
		require.Equal(t, engine.StateEstablished, s.State())
		require.NoError(t, s.Err())
	}
}

func TestTransferClean(t *testing.T) {
	p := newPair(t, Config{Channels: 2}, Config{Channels: 2}, 5*time.Millisecond, 0, 1)
	transfer(t, p, 300, 5000, 100_000)
	require.Zero(t, p.A.Stats().Retransmits)
	require.Zero(t, p.B.Stats().Retransmits)
	t.Logf("virtual %v, a %+v", p.Now.Sub(epoch), p.A.Stats())
}

func TestTransferLossy(t *testing.T) {
	for _, loss := range []float64{0.1, 0.3} {
		t.Run(fmt.Sprint(loss), func(t *testing.T) {
			p := newPair(t, Config{Channels: 3, Priorities: []Priority{Low, High}}, Config{Channels: 3}, 10*time.Millisecond, loss, 7)
			transfer(t, p, 200, 4000, 1_000_000)
			t.Logf("virtual %v, a %+v", p.Now.Sub(epoch), p.A.Stats())
			require.NotZero(t, p.A.Stats().Retransmits)
		})
	}
}

func TestZeroLengthAndLargePacket(t *testing.T) {
	p := newPair(t, Config{MaxPacket: 200_000}, Config{MaxPacket: 200_000}, 5*time.Millisecond, 0.05, 3)
	big := bytes.Repeat([]byte("0123456789abcdef"), 200_000/16)
	require.NoError(t, p.A.Send(nil, engine.SendOptions{}))
	require.NoError(t, p.A.Send(big, engine.SendOptions{}))
	require.ErrorIs(t, p.A.Send(append(big, 1), engine.SendOptions{}), engine.ErrMessageTooLarge)
	// The channel holds 200,000 unsent bytes, above a congestion window:
	// it takes no more until they have left.
	require.ErrorIs(t, p.A.Send([]byte{}, engine.SendOptions{}), engine.ErrQueueFull)
	runWithin(p, 2*time.Second, 100_000, func() bool { return p.A.Send([]byte{}, engine.SendOptions{}) == nil })
	var got []engine.Message
	// 65 ms of virtual time when healthy.
	runWithin(p, 2*time.Second, 100_000, func() bool {
		got = append(got, recvAll(p.B)...)
		return len(got) == 3 && p.A.Pending() == 0
	})
	require.Empty(t, got[0].Data)
	require.Equal(t, big, got[1].Data)
	require.Empty(t, got[2].Data)
}

// TestRandomDatagrams throws mutated copies of real traffic and random
// bytes at both ends of a lossy exchange; nothing may panic and the
// bookkeeping stays consistent.
func TestRandomDatagrams(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	p := newPair(t, Config{Channels: 2, MaxQueued: 64}, Config{Channels: 2, RejectNewPeerSession: true}, 5*time.Millisecond, 0.2, 9)
	p.RunUntil(1000, func() bool {
		return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished
	})
	// Garbage that a peer could legitimately use to end the session
	// (Disconnect, a foreign ConnectAck) is left out: the frames are
	// Ping, PingAck, Data and DataAck, random or mutated from real ones.
	g := &enginetest.Garbage{
		Rng:    rng,
		MaxLen: 60,
		Shape: func(b []byte) {
			if len(b) > 0 {
				b[0] = byte(FramePing) + b[0]%4
			}
		},
		Keep:  func(b []byte) bool { return b[0] >= byte(FramePing) },
		Fixed: 1, // the frame type
	}
	p.Garble(g, 5_000, func() {
		if rng.IntN(3) == 0 {
			_ = p.A.Send([]byte{byte(rng.Uint32())}, engine.SendOptions{Channel: uint8(rng.IntN(2)), Delivery: engine.Delivery(rng.IntN(3))})
			_ = p.B.Send(make([]byte, rng.IntN(3000)), engine.SendOptions{Channel: uint8(rng.IntN(2)), Delivery: engine.Delivery(rng.IntN(3))})
		}
	}, func() {
		recvAll(p.A)
		recvAll(p.B)
		checkInvariants(t, p.A)
		checkInvariants(t, p.B)
	})
	t.Logf("a: %v %+v", p.A.State(), p.A.Stats())
	t.Logf("b: %v %+v", p.B.State(), p.B.Stats())
	require.Equal(t, engine.StateEstablished, p.A.State())
	require.NotZero(t, p.B.Stats().MessagesRecv)
}

// TestResetBacksOffRTO: when the AIMD controller resets its window after
// losses for 8·RTO without an acknowledgement, the session doubles its
// RTO; an acknowledgement clears the back-off.
func TestResetBacksOffRTO(t *testing.T) {
	p := newPair(t, Config{Congestion: congestion.AIMD}, Config{}, 10*time.Microsecond, 0, 1)
	p.RunUntil(100, func() bool {
		return p.A.State() == engine.StateEstablished && p.B.State() == engine.StateEstablished && p.A.rtt.Sampled()
	})
	s := p.A
	require.Equal(t, MinRTO, s.rto())
	start := s.now
	lose := func(at time.Time) {
		var pkt congestion.Packet
		s.setNow(at)
		s.cc.OnSent(at, &pkt, MaxFrameSize, false)
		s.cc.OnLost(at, &pkt, trace.LossTimeout)
		s.updateCC(0)
	}
	lose(start)
	lose(start.Add(MinRTO + time.Millisecond))
	require.Zero(t, s.backoff, "two timeouts 11 ms apart: halved twice, not reset")
	lose(start.Add(8*MinRTO + time.Millisecond))
	require.Equal(t, uint8(1), s.backoff, "losses for 8·RTO without an ack: reset, RTO doubled")
	require.Equal(t, MaxFrameSize, s.cc.Window())
}

// sendFrame queues data as one Reliable packet and returns the Data frame
// the session sends for it at p.now.
func (p *fakePeer) sendFrame(data string) Frame {
	p.t.Helper()
	require.NoError(p.t, p.s.Send([]byte(data), engine.SendOptions{}))
	fs := p.poll()
	require.Len(p.t, fs, 1)
	require.Len(p.t, fs[0].Messages, 1)
	require.Equal(p.t, []byte(data), fs[0].Messages[0].Data)
	return fs[0]
}

// ack hands the session a DataAck listing ids at p.now.
func (p *fakePeer) ack(ids ...uint32) {
	p.t.Helper()
	f := Frame{Type: FrameDataAck, Acks: ids}
	require.NoError(p.t, p.s.HandleDatagram(p.now, f.AppendTo(nil)))
}

// TestDataAckKarn: a DataAck of a frame sent once gives an RTT sample; of
// a frame resent under the same frame_seq, none, as the ack may be of
// either transmission (Karn's rule, RFC 6298 §3; package doc, RTT). The
// pings of connected gave SRTT 1 ms, RTTVAR 0.5 ms; a 5 ms sample makes
// them 7/8·1 + 1/8·5 = 1.5 ms and 3/4·0.5 + 1/4·|1 − 5| = 1.375 ms (RFC
// 6298 §2.3). The resent frame, acknowledged 4 ms after its resend,
// leaves them so (with that sample SRTT would be 1.8125 ms).
func TestDataAckKarn(t *testing.T) {
	p := newFakePeer(t, Config{})
	s := p.s
	require.Equal(t, time.Millisecond, s.Stats().SRTT)
	require.Equal(t, 500*time.Microsecond, s.Stats().RTTVar)

	f := p.sendFrame("once")
	p.now = p.now.Add(5 * time.Millisecond)
	p.ack(f.Seq)
	st := s.Stats()
	require.Equal(t, 1500*time.Microsecond, st.SRTT)
	require.Equal(t, 1375*time.Microsecond, st.RTTVar)
	require.Equal(t, MinRTO, st.RTO, "1.5 + max(4 × 1.375, 1.5/2, 1) = 7 ms, raised to MinRTO")

	f = p.sendFrame("twice")
	p.now = p.now.Add(MinRTO)
	require.Equal(t, []Frame{f}, p.poll(), "resent after the RTO, same frame_seq")
	require.Equal(t, uint64(1), s.Stats().Retransmits)
	p.now = p.now.Add(4 * time.Millisecond)
	p.ack(f.Seq)
	require.Zero(t, s.Pending())
	st = s.Stats()
	require.Equal(t, 1500*time.Microsecond, st.SRTT, "no sample from a resent frame")
	require.Equal(t, 1375*time.Microsecond, st.RTTVar)
}

// TestDataAckRepeatedIDs: a DataAck may list an ID twice (the reference
// sends such DataAcks, docs/protocols/porous.md §4 bug 1) and a later DataAck may list it
// again (this package repeats the previous DataAck's IDs). Each frame
// counts once: its bytes leave the flight once and are delivered once
// (package doc, DataAck).
func TestDataAckRepeatedIDs(t *testing.T) {
	p := newFakePeer(t, Config{})
	s := p.s
	delivered := s.Stats().Congestion.Delivered
	f1 := p.sendFrame("first")
	f2 := p.sendFrame("second")
	n1, n2 := f1.Len(), f2.Len()
	require.Equal(t, n1+n2, s.cc.InFlight())

	p.ack(f2.Seq, f2.Seq)
	require.Equal(t, n1, s.cc.InFlight())
	require.Equal(t, delivered+uint64(n2), s.Stats().Congestion.Delivered)
	require.Equal(t, 1, s.Pending())
	require.Equal(t, 2, s.ring.n, "the second frame waits behind the first")

	p.ack(f2.Seq)
	require.Equal(t, n1, s.cc.InFlight())
	require.Equal(t, delivered+uint64(n2), s.Stats().Congestion.Delivered, "an ID acknowledged before counts no more")

	p.ack(f1.Seq, f2.Seq, f1.Seq)
	require.Zero(t, s.cc.InFlight())
	require.Equal(t, delivered+uint64(n1+n2), s.Stats().Congestion.Delivered)
	require.Zero(t, s.Pending())
	require.Zero(t, s.ring.n)
	checkInvariants(t, s)
}

// TestAckRestartsTimeout: with the default controller the retransmission
// timer restarts at each acknowledgement (RFC 6298 §5.3), so a frame
// whose DataAck is merely late, behind an acknowledgement that took
// longer than the RTO (a stalled path or host), is not resent at its own
// RTO; with AIMD, the reference's timeout-only detection, it is.
func TestAckRestartsTimeout(t *testing.T) {
	for _, alg := range []congestion.Algorithm{congestion.BBR, congestion.AIMD} {
		p := newFakePeer(t, Config{Congestion: alg})
		s := p.s
		t0 := p.now
		f1 := p.sendFrame("first")
		f2 := p.sendFrame("second")
		p.now = t0.Add(MinRTO - time.Millisecond)
		p.ack(f1.Seq)
		rto := s.rto()
		p.now = t0.Add(rto)
		if alg == congestion.AIMD {
			require.Equal(t, []Frame{f2}, p.poll(), "aimd: resent rto after it was sent")
			continue
		}
		require.Empty(t, p.poll(), "bbr: not resent rto after it was sent")
		p.now = t0.Add(MinRTO - time.Millisecond + rto - time.Microsecond)
		require.Empty(t, p.poll())
		p.now = p.now.Add(time.Microsecond)
		require.Equal(t, []Frame{f2}, p.poll(), "bbr: resent rto after the last acknowledgement")
		require.Equal(t, uint64(1), s.Stats().Retransmits)
	}
}

// TestTxRingShrinks: the transfer queue's slots double when full, and
// halve when the flight stayed within an eighth of them while as many
// frames as there are slots were done; the frames queued stay in order,
// and a steady flight neither grows nor shrinks them.
func TestTxRingShrinks(t *testing.T) {
	var r txRing
	r.base = 1000
	next := r.base
	// flight sends frames, the oldest done once k are in flight.
	flight := func(k, frames int) {
		for range frames {
			f := r.push()
			require.Equal(t, next, f.seq)
			f.state = fsInFlight // as transmitted sets it
			next++
			for r.n > k {
				r.get(r.base).state = fsDone
				r.popDone()
			}
		}
		for i := range r.n {
			require.Equal(t, r.base+uint32(i), r.get(r.base+uint32(i)).seq, "frame %d in order", i)
		}
	}
	flight(200, 200)
	require.Len(t, r.slots, 256)
	flight(20, 3000)
	require.Len(t, r.slots, 128, "a flight of 20 keeps more than an eighth of 128")
	flight(5, 3000)
	require.Len(t, r.slots, 32, "a flight of 5 keeps more than an eighth of 32")
	flight(1, 3000)
	require.Len(t, r.slots, minRingSlots)
	flight(100, 300)
	require.Len(t, r.slots, 128)
	require.Equal(t, 100, r.n)
}

// TestTimeoutResendsOldest: when a flight is delayed past its RTO (the
// path's queue suddenly grew), a timeout resends only the oldest frame and
// doubles the RTO, so the late acknowledgements come before the rest is
// resent: a handful of resends, not the flight twice. Every packet arrives
// once.
func TestTimeoutResendsOldest(t *testing.T) {
	p := newPair(t, Config{}, Config{}, 5*time.Millisecond, 0, 3)
	require.True(t, p.A.cc.RACK())
	got := 0
	send := func(n int) {
		for i := range n {
			require.NoError(t, p.A.Send(testPacket(0, got+i, FragmentSize), engine.SendOptions{}))
		}
		want := got + n
		runWithin(p, 5*time.Second, 1_000_000, func() bool {
			for _, m := range recvAll(p.B) {
				require.Equal(t, testPacket(0, got, FragmentSize), m.Data, "packet %d", got)
				got++
			}
			return got == want && p.A.Pending() == 0
		})
	}
	send(40) // an RTT of 10 ms learnt
	require.Zero(t, p.A.Stats().Retransmits)
	rto := p.A.rto()
	require.Less(t, rto, 40*time.Millisecond)

	p.AB.Delay = 200 * time.Millisecond // the queue grows: 20 RTOs late
	send(20)
	// Resent: the oldest frame at the RTO, then at each doubled RTO until
	// the first acknowledgement, about 205 ms on.
	require.LessOrEqual(t, p.A.Stats().Retransmits, uint64(4))
	require.NotZero(t, p.A.Stats().Retransmits)
}
