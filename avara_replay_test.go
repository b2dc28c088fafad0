package rudp

import (
	"context"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/avara"
	"github.com/stretchr/testify/require"
)

// TestAvaraReplayOldSession: an attacker opens its own Avara stream to a
// listener, sends 64 KiB and closes, recording every datagram it sent;
// then, while a client of the same listener sends 1 MiB, it replays them
// all from the client's address, over and over. Protection
// (avara.Config.ReliablePeer): the checksums of a stream's datagrams
// after the Login cover the network version mixed with the client's
// seed, so the earlier session's datagrams fail them (its Login, a
// duplicate, changes nothing), and its close cannot end the stream. The
// transfer completes intact.
func TestAvaraReplayOldSession(t *testing.T) {
	c, s, attacker, target := spoofedPair(t, Avara, true)
	rec := &recordingConn{PacketConn: udpSocket(t, nil, 0)}
	old := Client(rec, target, &Config{Protocol: Avara})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	require.NoError(t, old.Handshake(ctx))
	_, err := old.Write(randomBytes(64<<10, 3))
	require.NoError(t, err)
	require.NoError(t, old.Close())
	select {
	case <-old.Done():
	case <-time.After(hangGuard):
		t.Fatal("the earlier session did not end")
	}
	rec.mu.Lock()
	recorded := rec.log
	rec.mu.Unlock()
	require.Greater(t, len(recorded), 20)
	transferUnder(t, c, s, func(stop <-chan struct{}) {
		for {
			for _, d := range recorded {
				_, _ = attacker.WriteTo(d, target)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

// TestAvaraBlindSerialSweep: during a 1 MiB transfer, a blind attacker
// sends the listener, from the client's address, stream messages at
// serials 2048 apart (some land in any window), over and over with other
// offsets. Protection (avara.Config.ReliablePeer): such datagrams fail
// the session's checksum; one that passed it would end the stream with
// an error (two copies of one serial), never stall or corrupt it. The
// transfer completes intact.
func TestAvaraBlindSerialSweep(t *testing.T) {
	c, s, attacker, target := spoofedPair(t, Avara, true)
	offset := uint16(0)
	transferUnder(t, c, s, func(stop <-chan struct{}) {
		for {
			for k := range uint16(32) {
				d := avara.Datagram{Ack: avara.NothingReceived, Messages: []avara.Message{{
					Serial: k*2048 + offset, Command: avara.StreamCommand, Data: []byte("forged stream frame")}}}
				b := avara.AppendDatagram(make([]byte, 0, 64), &d, DefaultAvaraVersion)
				_, _ = attacker.WriteTo(seal(b), target)
			}
			offset += 2
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
}
