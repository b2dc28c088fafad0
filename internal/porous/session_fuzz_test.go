package porous

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// Fuzz records (at most 64 are used): a control byte, a big-endian u16 length, then the
// datagram. Control bits 0–4 advance the clock by that many times 3 ms,
// bit 5 makes a Data frame's frame_seq relative to the receive base (as
// a signed 32-bit offset), bit 6 queues a packet with Send first and bit 7
// drains Recv afterwards.
const (
	fzRelSeq = 1 << 5
	fzSend   = 1 << 6
	fzRecv   = 1 << 7
)

func fuzzRecord(ctl byte, b []byte) []byte {
	r := []byte{ctl, 0, 0}
	binary.BigEndian.PutUint16(r[1:], uint16(len(b)))
	return append(r, b...)
}

// pollChecked polls s at now until nothing is due, checking that every
// frame decodes and fits s's largest frame (see SetMaxFrame), that no
// DataAck repeats an ID and that the deadline then
// lies in the future.
func pollChecked(t *testing.T, s *Session, now time.Time, buf []byte) {
	t.Helper()
	var f Frame
	var acks []uint32
	enginetest.PollChecked(t, s, now, buf, func(b []byte) {
		if len(b) > s.maxFrame {
			t.Fatalf("a frame of %d bytes, above %d", len(b), s.maxFrame)
		}
		if err := decode(b, &f, s.maxFrame); err != nil {
			t.Fatalf("Poll wrote a frame that does not decode: %v", err)
		}
		if f.Type == FrameDataAck {
			acks = append(acks[:0], f.Acks...)
			slices.Sort(acks)
			if len(slices.Compact(acks)) != len(f.Acks) {
				t.Fatalf("a DataAck repeats an ID: %v", f.Acks)
			}
		}
	})
}

// sessionInputs returns inputs of FuzzPOROUSSession: one record per
// vector frame, and crafted exchanges.
func sessionInputs(t testing.TB) (inputs [][]byte) {
	for _, b := range allVectorFrames(t) {
		inputs = append(inputs, fuzzRecord(1, b))
	}
	data := func(msgs ...Message) []byte {
		fr := Frame{Type: FrameData, Messages: msgs}
		return fr.AppendTo(nil)
	}
	full := make([]byte, FragmentSize)
	var s2 []byte
	s2 = append(s2, fuzzRecord(fzRelSeq|fzRecv, data(frag(0, 0, 0, "a"), frag(1, 1, 0, "b"), sentinel(2, 2047, 0)))...)
	s2 = append(s2, fuzzRecord(fzRelSeq, data(Message{Type: MsgFragment, PacketSeq: 1, FragmentID: 0, LastFragmentID: 2, Data: full}))...)
	s2 = append(s2, fuzzRecord(fzRelSeq|fzSend, data(Message{Type: MsgFragment, PacketSeq: 1, FragmentID: 2, LastFragmentID: 2, Data: full[:7]}, Message{Type: MsgWindowAck, Channel: 1, PacketSeq: 2047}))...)
	s2 = append(s2, fuzzRecord(10, []byte(dataAckHex(nonceB, nonceB+1, nonceB+1, nonceB+2)))...)
	s2 = append(s2, fuzzRecord(31|fzRecv, []byte{byte(FramePing), 0, 7})...)
	s2 = append(s2, fuzzRecord(31, []byte{byte(FramePingAck), 0, 1})...)
	inputs = append(inputs, s2)
	return append(inputs, append(fuzzRecord(fzRelSeq, data(hugeLast(0, 5, 0xffff), hugeLast(0, 4, 7), sentinel(0, 0xffffff, 3))), fuzzRecord(2, []byte{byte(FrameDisconnect)})...))
}

// maxSeed is the longest input FuzzPOROUSSession reads (the rest is
// ignored) and the longest seed. The fuzzer minimizes every input it finds
// interesting, in a number of runs that grows with the square of its
// length: with inputs grown to a kilobyte or more it would minimize for
// minutes and hardly fuzz. Longer inputs run in TestPOROUSSessionInputs.
const maxSeed = 256

// FuzzPOROUSSession feeds arbitrary datagrams to a connected session with
// packets of every mode in flight on three channels, checking its
// bookkeeping, its memory bounds and its deadline after each one.
func FuzzPOROUSSession(f *testing.F) {
	for _, in := range sessionInputs(f) {
		if len(in) <= maxSeed {
			f.Add(in)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzzSession(t, b[:min(len(b), maxSeed)]) })
}

// TestPOROUSSessionInputs runs the inputs of FuzzPOROUSSession too long
// to seed it.
func TestPOROUSSessionInputs(t *testing.T) {
	for _, in := range sessionInputs(t) {
		if len(in) > maxSeed {
			fuzzSession(t, in)
		}
	}
}

// fuzzSession is the body of FuzzPOROUSSession.
func fuzzSession(t *testing.T, in []byte) {
	for _, reliable := range []bool{false, true} {
		b := in
		// A short Linger bounds the close at the end: a silent peer makes
		// the session resend everything until it runs out. Large frames
		// both ways: what the input acknowledges or not decides whether
		// they are kept, or given up and split. Each input is run against
		// the reference's rules and against ReliablePeer's.
		s, _ := connected(t, Config{Channels: 3, MaxPacket: 8 * FragmentSize, MaxQueued: 64, Linger: 200 * time.Millisecond, LargeFrames: true, ReliablePeer: reliable}, Config{Channels: 3})
		s.SetMaxFrame(LargeFrameSize)
		now := at(3)
		buf := make([]byte, LargeFrameSize)
		k := 0
		send := func() {
			p := make([]byte, (k*977)%(3*FragmentSize))
			_ = s.Send(p, engine.SendOptions{Channel: uint8(k % 3), Delivery: engine.Delivery(k % 3)})
			k++
		}
		for range 6 {
			send()
		}
		pollChecked(t, s, now, buf)
		for r := 0; len(b) >= 3 && r < 64; r++ {
			ctl, n := b[0], int(binary.BigEndian.Uint16(b[1:]))
			b = b[3:]
			n = min(n, len(b))
			d := slices.Clone(b[:n])
			b = b[n:]
			now = now.Add(time.Duration(ctl&31) * 3 * time.Millisecond)
			if ctl&fzSend != 0 {
				send()
			}
			if ctl&fzRelSeq != 0 && len(d) >= 5 && d[0] == byte(FrameData) {
				binary.BigEndian.PutUint32(d[1:], s.ib+binary.BigEndian.Uint32(d[1:]))
			}
			err := s.HandleDatagram(now, d)
			if err != nil && !errors.Is(err, engine.ErrClosed) && !errors.Is(err, engine.ErrMalformed) && !errors.Is(err, engine.ErrRejected) {
				t.Fatalf("HandleDatagram: %v", err)
			}
			checkInvariants(t, s)
			if ctl&fzRecv != 0 {
				recvAll(s)
			}
			pollChecked(t, s, now, buf)
			checkInvariants(t, s)
		}
		// Whatever happened, the session ends within its timers once the
		// peer falls silent, and says why if messages were left.
		s.Close(now)
		for i := 0; s.State() != engine.StateClosed; i++ {
			if i == 10_000 {
				t.Fatalf("no end in sight at %v", now.Sub(epoch))
			}
			d := s.Deadline()
			if d.IsZero() {
				t.Fatalf("no timer in %v", s.State())
			}
			now = d
			pollChecked(t, s, now, buf)
		}
		if s.Pending() > 0 {
			require.Error(t, s.Err())
		}
	}
}
