package porous

import (
	"encoding/binary"
	"encoding/hex"
	"slices"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/congestion"
	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
)

// Replaying the captures: one side is a Session, the other the recorded
// reference. The Session must emit the recorded frames of its side byte
// for byte, flush by flush, when fed the other side's frames in order.

// capPacket builds packet number n of the captures' payload convention:
// byte 0 the send mode ('R', 'U', 'P'), byte 1 the channel, bytes 2..5 the
// number, then byte i = (n + i) mod 256.
func capPacket(mode byte, ch uint8, n uint32, size int) []byte {
	p := make([]byte, size)
	p[0], p[1] = mode, ch
	binary.BigEndian.PutUint32(p[2:], n)
	for i := 6; i < size; i++ {
		p[i] = byte(int(n) + i)
	}
	return p
}

func modeOf(b byte) engine.Delivery {
	switch b {
	case 'U':
		return engine.Unreliable
	case 'P':
		return engine.Passive
	}
	return engine.Reliable
}

type replayCase struct {
	capture  string
	size     int      // packet size
	eager    []uint32 // packet numbers the client sends before the handshake
	channels int
	reliable bool // every packet is sent Reliable whatever its payload's mode byte
}

var replayCases = []replayCase{
	{capture: "basic_mix_2ch", size: 8, channels: 2},
	{capture: "fragmented_1ch", size: 3000, eager: []uint32{0, 1}, channels: 1, reliable: true},
}

func findCapture(t *testing.T, name string) vecCapture {
	for _, c := range loadVectors(t).Captures {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no capture %s", name)
	return vecCapture{}
}

func TestReplayClient(t *testing.T) {
	for _, rc := range replayCases {
		t.Run(rc.capture, func(t *testing.T) { replay(t, rc, "c2s") })
	}
}

func TestReplayServer(t *testing.T) {
	for _, rc := range replayCases {
		t.Run(rc.capture, func(t *testing.T) { replay(t, rc, "s2c") })
	}
}

func replay(t *testing.T, rc replayCase, ours string) {
	c := findCapture(t, rc.capture)
	var clientNonce, serverNonce uint32
	for _, f := range c.Frames {
		if f.Decoded.Type == "Connect" {
			if f.Direction == "c2s" {
				clientNonce = hex32(t, f.Decoded.Nonce)
			} else {
				serverNonce = hex32(t, f.Decoded.Nonce)
			}
		}
	}
	now := epoch
	// The reference runs the paper's AIMD window, so the captures' flushes
	// follow its growth, lists each frame ID in one DataAck, sends in the
	// order packets were queued and answers a Disconnect at once.
	cfg := Config{Channels: rc.channels, MaxRxBandwidth: 100_000_000, Congestion: congestion.AIMD, AckOnce: true, SendOrder: Arrival, NoChallenge: true}
	client := ours == "c2s"
	if client {
		cfg.Nonce = clientNonce
	} else {
		cfg.Nonce, cfg.Accept = serverNonce, true
	}
	s := newSession(t, now, cfg)
	deliveryOf := func(mode byte) engine.Delivery {
		if rc.reliable {
			return engine.Reliable
		}
		return modeOf(mode)
	}
	sent := map[uint32]bool{}
	send := func(n uint32, mode byte, ch uint8) {
		if !sent[n] {
			sent[n] = true
			require.NoError(t, s.Send(capPacket(mode, ch, n, rc.size), engine.SendOptions{Channel: ch, Delivery: deliveryOf(mode)}))
		}
	}
	for _, n := range rc.eager {
		if client {
			send(n, "RUP"[n%3], 0)
		}
	}
	var echoed []string
	for i := 0; i < len(c.Frames); {
		j := i
		for j < len(c.Frames) && c.Frames[j].Direction == c.Frames[i].Direction {
			j++
		}
		batch := c.Frames[i:j]
		if batch[0].Direction != ours {
			for _, f := range batch {
				now = now.Add(100 * time.Microsecond)
				feedHex(t, s, now, f.Hex)
			}
			for _, m := range recvAll(s) {
				echoed = append(echoed, hex.EncodeToString(m.Data))
				if !client { // the server echoes every packet
					require.NoError(t, s.Send(m.Data, engine.SendOptions{Channel: m.Channel, Delivery: deliveryOf(m.Data[0])}))
				}
			}
		} else {
			buf := make([]byte, MaxFrameSize)
			for k, f := range batch {
				now = now.Add(100 * time.Microsecond)
				if client && f.Decoded.Type == "Data" {
					// The client queues the packets a frame carries first.
					wire := unhex(t, f.Hex)
					data := func(m vecMessage) []byte { return wire[m.DataOffset : m.DataOffset+m.Len] }
					var nums []uint32
					for _, m := range f.Decoded.Messages {
						d := data(m)
						if m.FragmentID == 0 && !sent[binary.BigEndian.Uint32(d[2:])] {
							nums = append(nums, binary.BigEndian.Uint32(d[2:]))
						}
					}
					slices.Sort(nums)
					for _, n := range nums {
						for _, m := range f.Decoded.Messages {
							d := data(m)
							if binary.BigEndian.Uint32(d[2:]) == n {
								send(n, d[0], d[1])
							}
						}
					}
				}
				if client && f.Decoded.Type == "Disconnect" {
					s.Close(now)
				}
				n := s.Poll(now, buf)
				require.Equal(t, f.Hex, hex.EncodeToString(buf[:n]), "%s frame %d (batch frame %d)", rc.capture, i+k, k)
			}
			require.Empty(t, pollHex(t, s, now), "%s: nothing more after frame %d", rc.capture, j-1)
		}
		i = j
	}
	require.NotEmpty(t, echoed)
	if client {
		require.Equal(t, engine.StateClosed, s.State())
		require.NoError(t, s.Err())
	} else {
		require.Equal(t, engine.StateClosing, s.State(), "TIME-WAIT after the peer's Disconnect")
		require.Empty(t, pollHex(t, s, now.Add(MinTimeWait-time.Millisecond)))
		require.Equal(t, engine.StateClosing, s.State())
		require.Empty(t, pollHex(t, s, now.Add(MinTimeWait)))
		require.Equal(t, engine.StateClosed, s.State())
		require.NoError(t, s.Err())
	}
	require.Zero(t, s.Pending())
	st := s.Stats()
	require.Zero(t, st.Retransmits)
	require.Zero(t, st.PacketsRejected)
}
