package wirefox

import (
	"fmt"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// TestHistoryTrim: trim frees a history's bitmap only when every ID it
// covers was seen (or, for datagram IDs, when gaps may count as seen);
// afterwards every ID up to the newest counts as seen, and later IDs are
// tracked exactly again.
func TestHistoryTrim(t *testing.T) {
	var h history
	for id := uint32(0); id < 1100; id++ {
		if id != 1050 {
			h.add(id)
		}
	}
	h.trim(false)
	require.NotNil(t, h.bits, "1050 is missing: a packet ID that may come again")
	require.False(t, h.has(1050))
	h.add(1050)
	h.trim(false)
	require.Nil(t, h.bits)
	require.True(t, h.has(1000))
	require.True(t, h.has(1099))
	require.False(t, h.has(1100))

	h.add(1100)
	require.Nil(t, h.bits, "the next ID keeps every ID up to it seen")
	require.True(t, h.has(1100))
	require.False(t, h.has(1101))

	h.add(1102)
	require.NotNil(t, h.bits)
	require.True(t, h.has(1100), "seen before the trim")
	require.False(t, h.has(1101))
	require.True(t, h.has(1102))

	h.trim(true)
	require.Nil(t, h.bits, "a datagram history takes its gaps as seen")
	require.True(t, h.has(1101))
	require.False(t, h.has(1103))

	w := history{newest: 0xFFFFFFFF, started: true}
	w.add(0)
	require.Nil(t, w.bits)
	require.True(t, w.wrapped, "the next ID after 2^32 - 1 is 0")
	require.True(t, w.has(0))
	require.False(t, w.has(1))
}

// TestHistoryTrimFromZero: IDs start at 0, so a packet ID below the first
// one seen may still come (the first packets were lost): the history is
// not freed while it is missing. After the IDs wrapped, the whole window
// behind the newest must have been seen.
func TestHistoryTrimFromZero(t *testing.T) {
	var h history
	for id := uint32(1); id < 10; id++ {
		h.add(id)
	}
	h.trim(false)
	require.NotNil(t, h.bits, "packet 0 is still to come")
	require.False(t, h.has(0))
	h.add(0)
	h.trim(false)
	require.Nil(t, h.bits)

	var w history
	for id := uint32(0xFFFFFFF0); id != 5; id++ {
		if id != 0xFFFFFFF8 {
			w.add(id)
		}
	}
	w.trim(false)
	require.NotNil(t, w.bits, "0xFFFFFFF8 is missing, behind the wrap")
	require.False(t, w.has(0xFFFFFFF8))
}

// TestSpoofFarAhead: a blind spoofed datagram whose datagram ID is 2^30
// past the newest, or packet ID (with the next datagram ID) 2^30, is rejected without
// moving the duplicate histories, and the genuine traffic after it is
// still taken: before any genuine datagram, and in the middle of a
// transfer.
func TestSpoofFarAhead(t *testing.T) {
	for _, c := range []struct {
		dg, pkt uint32
		early   bool
	}{{1 << 30, 1 << 30, true}, {1 << 30, 1 << 30, false}, {1 << 30, 5, false}, {0, 1 << 30, false}} {
		t.Run(fmt.Sprintf("dg %d pkt %d early %v", c.dg, c.pkt, c.early), func(t *testing.T) {
			cfg := Config{}
			p := newPair(t, cfg, cfg, 10*ms, 0, 1)
			connect(t, p)
			spoof := func() []byte {
				// Past the newest: the client numbers from a random ID.
				dg := p.B.dgHist.newest + c.dg
				if c.dg == 0 { // the next datagram ID, guessed
					dg++
				}
				return dataDgram(dg, Packet{ID: c.pkt, Body: []byte{CmdPong}})
			}
			sent, got, spoofed := 0, 0, c.early
			if c.early {
				require.ErrorIs(t, p.B.HandleDatagram(p.Now, spoof()), engine.ErrRejected)
			}
			p.RunUntil(100_000, func() bool {
				for ; sent < 200 && p.A.Pending() < 20; sent++ {
					require.NoError(t, p.A.Send([]byte{CmdUser, byte(sent)}, engine.SendOptions{Channel: 1}))
				}
				if sent >= 100 && !spoofed {
					require.ErrorIs(t, p.B.HandleDatagram(p.Now, spoof()), engine.ErrRejected)
					spoofed = true
				}
				got += len(drain(p.B))
				return got == 200
			})
			require.Equal(t, uint64(1), p.B.Stats().PacketsRejected)
		})
	}
}

// TestLongHistory: a long history remembers 1,048,576 IDs behind the
// newest (a short one 65,536), takes half that ahead as plausible, and
// its trim checks its whole window.
func TestLongHistory(t *testing.T) {
	h, short := history{long: true}, history{}
	for id := uint32(0); id < 200_000; id++ {
		if id != 100_001 {
			h.add(id)
			short.add(id)
		}
	}
	require.False(t, h.has(100_001))
	require.True(t, short.has(100_001), "too old for a short history")
	require.True(t, h.plausible(199_999+longHistory/2))
	require.False(t, h.plausible(200_000+longHistory/2))
	require.False(t, short.plausible(200_000+historySize/2))
	h.trim(false)
	require.NotNil(t, h.bits)
	h.add(100_001)
	h.trim(false)
	require.Nil(t, h.bits)
	require.True(t, h.has(100_001))
}
