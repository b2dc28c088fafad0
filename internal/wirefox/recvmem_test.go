package wirefox

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// established returns a server session with cfg, established by the
// client's W1 and W3.
func established(t *testing.T, cfg Config) *Session {
	cfg.Accept, cfg.PeerID, cfg.Channels = true, serverID, testChannels
	s := newSession(t, t0, cfg)
	s.nextDgram = 1<<32 - 1 // see proveFake
	require.NoError(t, s.HandleDatagram(t0, unhex(t, w1)))
	require.NotEmpty(t, poll(t, s, t0))
	require.NoError(t, s.HandleDatagram(t0, unhex(t, w3)))
	proveFake(t, s, t0)
	return s
}

// dataDgram is a DAT|LNK datagram id carrying pkts.
func dataDgram(id uint32, pkts ...Packet) []byte {
	var data []byte
	for i := range pkts {
		data = AppendPacket(data, &pkts[i])
	}
	return AppendDatagram(nil, &Datagram{Flags: FlagDAT | FlagLNK, ID: id, DataLen: uint16(len(data)), Data: data})
}

// acked reports whether s owes an ACK of datagram id.
func acked(s *Session, id uint32) bool {
	for _, a := range s.owedAcks {
		if a == id {
			return true
		}
	}
	return false
}

// debugCount counts the Debug records logged.
type debugCount struct{ n int }

func (h *debugCount) Enabled(context.Context, slog.Level) bool { return true }
func (h *debugCount) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelDebug {
		h.n++
	}
	return nil
}
func (h *debugCount) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *debugCount) WithGroup(string) slog.Handler      { return h }

// TestEmptySegmentsCount: segments with empty bodies, and segments
// beyond Config.MaxMessage, count their footprint against MaxRecvBuffer:
// a peer sending thousands of them is refused at the bound (each refusal
// counted, its datagram not acknowledged, one Debug record for the run)
// and the memory held stays within it.
func TestEmptySegmentsCount(t *testing.T) {
	const bound = 64 << 10
	log := &debugCount{}
	s := established(t, Config{MaxMessage: 4000, MaxRecvBuffer: bound, Logger: slog.New(log)})
	taken := 0
	for i := range uint32(10_000) {
		p := Packet{Flags: PacketSEG, ID: 1 + 2*i, Container: 2 * i, Index: 1, Offset: SegmentSize}
		if i%2 == 1 {
			p.Offset, p.Body = 5000, []byte{1} // beyond MaxMessage
		}
		require.NoError(t, s.HandleDatagram(t0, dataDgram(i, p)))
		if acked(s, i) {
			taken++
		}
		s.owedAcks = s.owedAcks[:0]
	}
	require.LessOrEqual(t, s.buffered, bound)
	require.Equal(t, taken*(reasmCost+segCost), s.buffered)
	require.Equal(t, bound/(reasmCost+segCost), taken)
	require.Equal(t, uint64(10_000-taken), s.Stats().Refused)
	require.Equal(t, 1, log.n, "one Debug record for the run")

	// A message taken ends the run; the next refusal logs again.
	require.NoError(t, s.HandleDatagram(t0, dataDgram(10_000, Packet{ID: 30_000, Body: []byte{CmdUser}})))
	require.NoError(t, s.HandleDatagram(t0, dataDgram(10_001, Packet{Flags: PacketSEG, ID: 30_001, Container: 30_002, Index: 1})))
	require.Equal(t, 2, log.n)
}

// TestOrderedDuplicateSequence: two unreliable packets of one sequence
// ahead of the next expected on an ORDERED channel hold one message, not
// two messages' bytes: the first is kept, as the reference's hold does,
// and once the gap is filled nothing stays counted.
func TestOrderedDuplicateSequence(t *testing.T) {
	s := established(t, Config{})
	first, second := []byte{CmdUser, 1}, []byte{CmdUser, 2, 2, 2}
	require.NoError(t, s.HandleDatagram(t0, dataDgram(0, Packet{ID: 10, Channel: 1, Seq: 1, Body: first})))
	require.NoError(t, s.HandleDatagram(t0, dataDgram(1, Packet{ID: 11, Channel: 1, Seq: 1, Body: second})))
	require.Equal(t, heldCost+cap(append([]byte(nil), first...)), s.buffered)
	require.NoError(t, s.HandleDatagram(t0, dataDgram(2, Packet{ID: 12, Channel: 1, Seq: 0, Body: []byte{CmdUser, 0}})))
	require.Equal(t, []string{"\x0f\x00", "\x0f\x01"}, drain(s))
	require.Zero(t, s.buffered)
}

// TestReferenceFarAheadFill: the reference model sends 10,000 messages of
// two segments whose tails are 1 to 100 bytes, and fills each datagram's
// spare room with the tails of messages far ahead, so that the session
// reassembles thousands of messages at once: under the default bound
// every one arrives, in order, and nothing is refused.
func TestReferenceFarAheadFill(t *testing.T) {
	x := newRefSim(t, Config{ReferencePeer: true}, 5*ms, 0, 3)
	x.flows(10_000, SegmentSize+1, SegmentSize+100, 3, time.Hour)
	x.logf()
	require.Greater(t, x.peakReasm, 2000)
	require.Greater(t, x.m.farAhead, uint32(2000))
	require.Zero(t, x.s.Stats().Refused)
	require.Zero(t, x.s.buffered)
}
