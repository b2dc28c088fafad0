package porous

import (
	"encoding/hex"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// fakePeer drives one connected Session with hand-made frames, in place of
// the session's peer (nonceB).
type fakePeer struct {
	t   testing.TB
	s   *Session
	seq uint32 // next frame_seq towards s
	now time.Time
}

func newFakePeer(t testing.TB, cfg Config) *fakePeer {
	s, _ := connected(t, cfg, Config{Channels: cfg.Channels})
	return &fakePeer{t: t, s: s, seq: nonceA, now: at(10)}
}

// frag is a single-fragment packet message.
func frag(ch uint8, seq uint32, lead uint16, data string) Message {
	return Message{Type: MsgFragment, Channel: ch, PacketSeq: seq, DependentLead: lead, Data: []byte(data)}
}

func sentinel(ch uint8, seq uint32, lead uint16) Message {
	return Message{Type: MsgSentinel, Channel: ch, PacketSeq: seq, DependentLead: lead}
}

// send delivers one Data frame with msgs to the session and returns what
// it delivered.
func (p *fakePeer) send(msgs ...Message) []string {
	p.t.Helper()
	f := Frame{Type: FrameData, Seq: p.seq, Messages: msgs}
	p.seq++
	require.NoError(p.t, p.s.HandleDatagram(p.now, f.AppendTo(nil)))
	return recvStrings(p.s)
}

// poll returns the frames the session sends, decoded.
func (p *fakePeer) poll() []Frame {
	var out []Frame
	for _, h := range pollHex(p.t, p.s, p.now) {
		var f Frame
		require.NoError(p.t, Decode(unhex(p.t, h), &f))
		f.Messages = append([]Message(nil), f.Messages...)
		for i := range f.Messages {
			f.Messages[i].Data = append([]byte(nil), f.Messages[i].Data...)
		}
		out = append(out, f)
	}
	return out
}

// dataMessages returns the messages of the Data frames among fs.
func dataMessages(fs []Frame) []Message {
	var out []Message
	for _, f := range fs {
		if f.Type == FrameData {
			out = append(out, f.Messages...)
		}
	}
	return out
}

// TestFigure11Dependencies: with base 3, p4 and u6 (depending on r3)
// wait; r3 releases them, p5 is skipped and ignored when it comes late
// (paper Figure 11).
func TestFigure11Dependencies(t *testing.T) {
	p := newFakePeer(t, Config{})
	require.Equal(t, []string{"r0", "r1", "r2"}, p.send(frag(0, 0, 0, "r0"), frag(0, 1, 1, "r1"), frag(0, 2, 1, "r2")))
	require.Equal(t, uint32(3), p.s.rxch[0].base)
	require.Empty(t, p.send(frag(0, 4, 1, "p4"), frag(0, 6, 3, "u6")))
	require.Equal(t, []string{"r3", "p4", "u6"}, p.send(frag(0, 3, 1, "r3")))
	require.Empty(t, p.send(frag(0, 5, 2, "p5")), "behind the base")
	require.Equal(t, uint32(7), p.s.rxch[0].base)

	// When p5 is there in time it is delivered in order.
	q := newFakePeer(t, Config{})
	require.Empty(t, q.send(frag(0, 1, 1, "p1"), frag(0, 3, 3, "u3")))
	require.Empty(t, q.send(frag(0, 2, 2, "p2")))
	require.Equal(t, []string{"r0", "p1", "p2", "u3"}, q.send(frag(0, 0, 0, "r0")))
}

// TestSkipLost: packets that do not depend on a missing packet are
// delivered past it; the missing one is then ignored.
func TestSkipLost(t *testing.T) {
	p := newFakePeer(t, Config{Channels: 2})
	require.Equal(t, []string{"u1"}, p.send(frag(0, 1, 0, "u1")))
	require.Empty(t, p.send(frag(0, 0, 0, "u0")))
	// A reliable packet stalls its channel, not the other one.
	require.Equal(t, []string{"c1"}, p.send(frag(0, 3, 1, "r3 needs 2"), frag(1, 0, 0, "c1")))
	require.Equal(t, []string{"r2", "r3 needs 2"}, p.send(frag(0, 2, 0, "r2")))
	// Duplicates are dropped.
	require.Empty(t, p.send(frag(0, 2, 0, "r2"), frag(1, 0, 0, "c1")))
	// A different dependent_lead for a known entry is ignored.
	require.Empty(t, p.send(frag(0, 5, 1, "a"), frag(0, 5, 0, "b")))
	require.Equal(t, []string{"x4", "a"}, p.send(frag(0, 4, 0, "x4")))
	// Channels beyond the count are ignored; the frame is acknowledged.
	require.Empty(t, p.send(frag(7, 0, 0, "nope")))
	acks := p.poll()
	require.Equal(t, FrameDataAck, acks[0].Type)
	require.Len(t, acks[0].Acks, 8)
}

// TestFragments: reassembly in any order, validity rules and duds.
func TestFragments(t *testing.T) {
	p := newFakePeer(t, Config{MaxPacket: 3 * FragmentSize})
	full := make([]byte, FragmentSize)
	for i := range full {
		full[i] = byte(i)
	}
	fr := func(seq uint32, id, last uint16, data []byte) Message {
		return Message{Type: MsgFragment, PacketSeq: seq, FragmentID: id, LastFragmentID: last, Data: data}
	}
	require.Empty(t, p.send(fr(0, 2, 2, []byte("tail"))))
	require.Empty(t, p.send(fr(0, 0, 2, full)))
	require.Empty(t, p.send(fr(0, 0, 2, full)))
	require.Empty(t, p.send(fr(0, 1, 3, full)), "another fragment count is ignored")
	require.Empty(t, p.send(fr(0, 1, 2, full[:10])), "short non-last fragment is invalid")
	require.Empty(t, p.send(fr(0, 3, 2, []byte("x"))), "fragment_id > last is invalid")
	got := p.send(fr(0, 1, 2, full))
	require.Equal(t, []string{string(full) + string(full) + "tail"}, got)

	// A packet announcing more than MaxPacket is a dud: consumed, never
	// delivered, and it does not stall the channel.
	require.Empty(t, p.send(fr(1, 0, 4, full)))
	require.Equal(t, uint32(2), p.s.rxch[0].base)
	require.Equal(t, []string{"after"}, p.send(fr(2, 0, 0, []byte("after"))))
	require.Zero(t, p.s.rxBytes)

	// Zero-length packet.
	require.Equal(t, []string{""}, p.send(fr(3, 0, 0, nil)))
}

// TestFigure8WindowAck: consuming packet 2047 moves the base across 2048
// and the receiver sends WindowAck(2047), reliably; only the newest
// pending one is sent (paper Figure 8, docs/protocols/porous.md §3.6).
func TestFigure8WindowAck(t *testing.T) {
	p := newFakePeer(t, Config{})
	for i := 0; i < 2047; i += 100 {
		var msgs []Message
		for j := i; j < min(i+100, 2047); j++ {
			msgs = append(msgs, frag(0, uint32(j), 0, "."))
		}
		p.send(msgs...)
	}
	require.Empty(t, dataMessages(p.poll()), "no WindowAck before 2048")
	p.send(frag(0, 2047, 0, "."))
	wa := dataMessages(p.poll())
	require.Equal(t, []Message{{Type: MsgWindowAck, PacketSeq: 2047}}, wa)

	// Two crossings before a flush: one WindowAck, the newest.
	for i := 2048; i < 6144; i += 100 {
		var msgs []Message
		for j := i; j < min(i+100, 6144); j++ {
			msgs = append(msgs, frag(0, uint32(j), 0, "."))
		}
		p.send(msgs...)
	}
	require.Equal(t, []Message{{Type: MsgWindowAck, PacketSeq: 6143}}, dataMessages(p.poll()))
	require.Equal(t, 2, p.s.ring.n, "WindowAck frames are reliable: both wait for their DataAck")
}

// TestFigure9Sentinels: when every unreliable fragment is lost, the
// sentinel entries (one per 2048 packets) are consumed once the newest is
// 63488 packets ahead, which moves the window (paper Figure 9, §3.2.2).
func TestFigure9Sentinels(t *testing.T) {
	p := newFakePeer(t, Config{})
	for k := uint32(0); k < 31; k++ {
		require.Empty(t, p.send(sentinel(0, 2047+2048*k, 0)))
	}
	require.Zero(t, p.s.rxch[0].base)
	require.Empty(t, dataMessages(p.poll()))
	require.Empty(t, p.send(sentinel(0, 2047+2048*31, 0)))
	require.Equal(t, uint32(2048), p.s.rxch[0].base, "first sentinel consumed")
	require.Equal(t, []Message{{Type: MsgWindowAck, PacketSeq: 2047}}, dataMessages(p.poll()))
	// A complete packet still inside the window is delivered, skipping
	// what is before it.
	require.Equal(t, []string{"late"}, p.send(frag(0, 5000, 0, "late")))
	require.Equal(t, uint32(5001), p.s.rxch[0].base)
}

// TestFigure6ReceiveWindow: the receive window [i_b − 32768, i_b + 32768)
// (paper Figure 6, docs/protocols/porous.md §3.4).
func TestFigure6ReceiveWindow(t *testing.T) {
	p := newFakePeer(t, Config{})
	s := p.s
	data := func(seq uint32) error {
		f := Frame{Type: FrameData, Seq: seq}
		return s.HandleDatagram(p.now, f.AppendTo(nil))
	}
	require.Equal(t, uint32(nonceA), s.ib)
	require.NoError(t, data(nonceA+3))
	require.Equal(t, uint32(nonceA+4), s.ib)
	require.NoError(t, data(nonceA+1), "older frames inside the window are accepted")
	require.Equal(t, uint32(nonceA+4), s.ib)
	require.ErrorIs(t, data(nonceA+4+TransferWindow), engine.ErrRejected)
	require.ErrorIs(t, data(nonceA+4-TransferWindow-1), engine.ErrRejected)
	require.NoError(t, data(nonceA+4-TransferWindow))
	require.NoError(t, data(nonceA+4+TransferWindow-1))
	require.Equal(t, uint32(nonceA+4+TransferWindow), s.ib)
	require.NoError(t, data(nonceA+4), "32768 behind: still inside")
	require.ErrorIs(t, data(nonceA+3), engine.ErrRejected)
	require.NoError(t, data(nonceA+4), "a duplicate is acknowledged again")
	require.NoError(t, data(nonceA+4))
	fs := p.poll()
	require.Len(t, fs, 1)
	require.Equal(t, []uint32{nonceA + 4 - TransferWindow, nonceA + 1, nonceA + 3, nonceA + 4, nonceA + 3 + TransferWindow}, fs[0].Acks,
		"each ID once")
	require.Equal(t, uint64(3), s.Stats().PacketsRejected)
}

// TestDataAckSplit: 400 frame IDs take two DataAcks of at most 367 IDs;
// with Config.AckOnce each ID is listed once, as the reference does.
func TestDataAckSplit(t *testing.T) {
	p := newFakePeer(t, Config{AckOnce: true})
	for range 400 {
		p.send()
	}
	fs := p.poll()
	require.Len(t, fs, 2)
	require.Len(t, fs[0].Acks, MaxAcks)
	require.Len(t, fs[1].Acks, 400-MaxAcks)
	require.Equal(t, MaxFrameSize-1, fs[0].Len())
}

// TestDataAckRepeats: by default a DataAck lists the previous DataAck's
// IDs again after its own, as room allows, each once; a third DataAck
// repeats only the second's new IDs.
func TestDataAckRepeats(t *testing.T) {
	p := newFakePeer(t, Config{})
	for range 400 {
		p.send()
	}
	fs := p.poll()
	require.Len(t, fs, 2)
	require.Equal(t, fs[0].Acks[:MaxAcks], fs[0].Acks)
	second := fs[1].Acks
	require.Len(t, second, MaxAcks)
	require.Len(t, slices.Compact(slices.Clone(second)), MaxAcks, "each ID once")
	newIDs := second[:400-MaxAcks]
	require.Equal(t, fs[0].Acks[:MaxAcks-len(newIDs)], second[len(newIDs):], "then the first DataAck's IDs")

	p.send()
	fs = p.poll()
	require.Len(t, fs, 1)
	require.Len(t, fs[0].Acks, 1+len(newIDs))
	require.Equal(t, newIDs, fs[0].Acks[1:], "the second DataAck's new IDs, once more")
}

// TestSenderLeads: dependent_lead on the wire (docs/protocols/porous.md §1.2, paper Figure
// 10): the distance to the last Reliable packet of the channel; Passive
// and Unreliable packets never become dependencies; 0 from 65536 on.
func TestSenderLeads(t *testing.T) {
	p := newFakePeer(t, Config{})
	for _, d := range []engine.Delivery{engine.Passive, engine.Reliable, engine.Passive, engine.Unreliable, engine.Reliable, engine.Unreliable} {
		require.NoError(t, p.s.Send([]byte(d.String()), engine.SendOptions{Delivery: d}))
	}
	var leads []uint16
	for _, m := range dataMessages(p.poll()) {
		leads = append(leads, m.DependentLead)
	}
	// Reliable messages are written first: P0 R1 P2 R4, then U3 U5.
	require.Equal(t, []uint16{0, 0, 1, 3, 2, 1}, leads)

	c := &p.s.txch[0]
	c.next, c.base = 4+ChannelWindow-1, 4+ChannelWindow-1
	require.NoError(t, p.s.Send([]byte("x"), engine.SendOptions{Delivery: engine.Unreliable}))
	require.NoError(t, p.s.Send([]byte("y"), engine.SendOptions{Delivery: engine.Unreliable}))
	ms := dataMessages(p.poll())
	require.Len(t, ms, 2)
	require.Equal(t, uint16(ChannelWindow-1), ms[0].DependentLead)
	require.Equal(t, uint16(0), ms[1].DependentLead, "65536 behind: no dependency")
}

// TestSenderSentinelAndWindow: an Unreliable packet numbered ≡ 2047 (mod
// 2048) is followed by a reliable Sentinel; packets beyond the send
// window wait for a WindowAck (docs/protocols/porous.md §3.5).
func TestSenderSentinelAndWindow(t *testing.T) {
	p := newFakePeer(t, Config{})
	c := &p.s.txch[0]
	c.next = 2047
	require.NoError(t, p.s.Send([]byte("u"), engine.SendOptions{Delivery: engine.Unreliable}))
	fs := p.poll()
	require.Len(t, fs, 1)
	require.Equal(t, fmt.Sprintf("06%08x0002"+"0100"+"0007ff"+"0000"+"0000"+"0007ff"+"0000"+"0000"+"0000"+"0001"+"75", nonceB), hex.EncodeToString(fs[0].AppendTo(nil)))
	require.Zero(t, p.s.Pending(), "unreliable: confirmed once sent")
	require.Equal(t, 1, p.s.ring.n, "the frame is reliable: it carries the Sentinel")

	c.next = ChannelWindow - 1
	require.NoError(t, p.s.Send([]byte("in"), engine.SendOptions{Delivery: engine.Unreliable}))
	require.NoError(t, p.s.Send([]byte("out"), engine.SendOptions{Delivery: engine.Unreliable}))
	ms := dataMessages(p.poll())
	require.Len(t, ms, 2, "a Sentinel (65535 ≡ 2047) and a fragment")
	require.Equal(t, uint32(ChannelWindow-1), ms[1].PacketSeq)
	require.Equal(t, []byte("in"), ms[1].Data)
	require.Equal(t, 1, p.s.Pending())
	p.send(Message{Type: MsgWindowAck, PacketSeq: ChannelWindow * 2}) // outside: ignored
	require.Empty(t, dataMessages(p.poll()))
	p.send(Message{Type: MsgWindowAck, PacketSeq: 2047})
	ms = dataMessages(p.poll())
	require.Len(t, ms, 1)
	require.Equal(t, uint32(ChannelWindow), ms[0].PacketSeq)
	require.Equal(t, []byte("out"), ms[0].Data)
}

// TestResendRules: a mixed frame is resent with its reliable messages
// only, same frame_seq; an unreliable frame is forgotten; DataAcks with
// repeated IDs count each frame once (docs/protocols/porous.md §3.3, §4 bug 1).
func TestResendRules(t *testing.T) {
	p := newFakePeer(t, Config{})
	s := p.s
	require.NoError(t, s.Send([]byte("u"), engine.SendOptions{Delivery: engine.Unreliable}))
	require.NoError(t, s.Send([]byte("r"), engine.SendOptions{}))
	fs := p.poll()
	require.Len(t, fs, 1)
	require.Len(t, fs[0].Messages, 2)
	require.Equal(t, 1, s.Pending())
	rto := s.rtt.RTO()
	p.now = p.now.Add(rto)
	fs2 := p.poll()
	require.Len(t, fs2, 1)
	require.Equal(t, fs[0].Seq, fs2[0].Seq)
	require.Equal(t, []Message{{Type: MsgFragment, PacketSeq: 1, Data: []byte("r")}}, fs2[0].Messages)
	require.Equal(t, uint64(1), s.Stats().Retransmits)

	ack := Frame{Type: FrameDataAck, Acks: []uint32{fs[0].Seq, fs[0].Seq, fs[0].Seq, 12345}}
	require.NoError(t, s.HandleDatagram(p.now, ack.AppendTo(nil)))
	require.Zero(t, s.Pending())
	require.Zero(t, s.cc.InFlight())
	require.Zero(t, s.ring.n)

	// Unreliable only: forgotten after the RTO.
	require.NoError(t, s.Send([]byte("gone"), engine.SendOptions{Delivery: engine.Unreliable}))
	require.Len(t, p.poll(), 1)
	require.Equal(t, 1, s.ring.n)
	p.now = p.now.Add(s.rtt.RTO())
	require.Empty(t, p.poll())
	require.Zero(t, s.ring.n)
	require.Zero(t, s.Pending())
	require.True(t, s.Deadline().After(p.now))
}

// TestSentinelFrame: a lost unreliable frame with frame_seq ≡ 16383 (mod
// 16384) is resent empty until acknowledged (paper eq. 4, docs/protocols/porous.md §3.3),
// each time after twice the RTO before (see detectLosses).
func TestSentinelFrame(t *testing.T) {
	cfgB := Config{Nonce: 0x00013fff}
	a := newSession(t, epoch, Config{Nonce: nonceA})
	b := newSession(t, epoch, cfgB)
	feedHex(t, a, at(0), pollHex(t, b, at(0))...)
	feedHex(t, b, at(0), pollHex(t, a, at(0))...)
	feedHex(t, a, at(0), pollHex(t, b, at(0))...)
	feedHex(t, b, at(0), pollHex(t, a, at(0))...)
	require.Equal(t, engine.StateEstablished, a.State())
	require.NoError(t, a.Send([]byte("u"), engine.SendOptions{Delivery: engine.Unreliable}))
	fs := pollHex(t, a, at(0))
	require.Equal(t, "06"+"00013fff"+"0001"+"0000"+"000000"+"0000"+"0000"+"0000"+"0001"+"75", fs[len(fs)-1])
	require.Equal(t, at(600), a.Deadline(), "initial RTO, no sample yet")
	for _, ms := range []int{600, 1800, 4200} {
		require.NotContains(t, pollHex(t, a, at(ms-1)), "0600013fff0000", ms-1)
		require.Contains(t, pollHex(t, a, at(ms)), "0600013fff0000", ms)
	}
	feedHex(t, a, at(4300), dataAckHex(0x00013fff))
	require.Zero(t, a.ring.n)
}

// TestUnreliableTotalLoss: every unreliable fragment is lost for more
// than two channel windows; Sentinels keep the windows moving, so the
// channel never stalls and a later reliable packet arrives.
func TestUnreliableTotalLoss(t *testing.T) {
	p := newPair(t, Config{MaxQueued: 4096}, Config{}, 5*time.Millisecond, 0, 1)
	p.AB.Edit = func(b []byte) []byte {
		var f Frame
		if Decode(b, &f) != nil || f.Type != FrameData {
			return b
		}
		keep := f.Messages[:0]
		for _, m := range f.Messages {
			if m.Type != MsgFragment || len(m.Data) == 0 || m.Data[0] != 'U' {
				keep = append(keep, m)
			}
		}
		if len(keep) == 0 && len(f.Messages) > 0 {
			return nil
		}
		f.Messages = keep
		return f.AppendTo(nil)
	}
	const n = 2*ChannelWindow + 5000
	sent := 0
	var got []string
	// 3.4 s of virtual time when healthy.
	runWithin(p, 30*time.Second, 10_000_000, func() bool {
		for sent < n && p.A.Send([]byte("U"), engine.SendOptions{Delivery: engine.Unreliable}) == nil {
			sent++
		}
		if sent == n {
			require.NoError(t, p.A.Send([]byte("R end"), engine.SendOptions{}))
			sent++
		}
		got = append(got, recvStrings(p.B)...)
		return sent > n && len(got) > 0
	})
	require.Equal(t, []string{"R end"}, got)
	require.Greater(t, p.B.rxch[0].base, uint32(2*ChannelWindow))
	t.Logf("virtual %v, a %+v", p.Now.Sub(epoch), p.A.Stats())
}

// TestWindowAckBeyondSent: a WindowAck for packets never sent is ignored,
// so later packets are not held behind the window for good.
func TestWindowAckBeyondSent(t *testing.T) {
	p := newFakePeer(t, Config{})
	require.NoError(t, p.s.Send([]byte("a"), engine.SendOptions{}))
	require.Len(t, dataMessages(p.poll()), 1)
	p.send(Message{Type: MsgWindowAck, PacketSeq: 2047})
	require.Zero(t, p.s.txch[0].base, "packets 1..2047 were never sent")
	require.NoError(t, p.s.Send([]byte("b"), engine.SendOptions{}))
	ms := dataMessages(p.poll())
	require.Len(t, ms, 1)
	require.Equal(t, []byte("b"), ms[0].Data)
}
