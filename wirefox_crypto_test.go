package rudp

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// wirefoxEncrypted returns a Wirefox Config encrypting, the client
// checking the server's identity.
func wirefoxEncrypted(t *testing.T) *Config {
	id, err := ecdh.X25519().GenerateKey(rand.Reader)
	require.NoError(t, err)
	return &Config{Protocol: Wirefox, WirefoxEncrypt: true, WirefoxIdentity: id, WirefoxServerKey: id.PublicKey(),
		WirefoxChannels: []WirefoxChannelMode{WirefoxOrdered}}
}

// TestWirefoxEncryptedMessages: on a clean and an impaired path, in
// virtual time (see vpath), 200 reliable messages of 1..4976 bytes
// (fragmented above 1200) arrive exactly once, in order on the ORDERED
// channel, between encrypted Wirefox message conns, and no datagram fails
// to open.
func TestWirefoxEncryptedMessages(t *testing.T) {
	for _, l := range links {
		t.Run(l.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, s := messagePairOn(t, *wirefoxEncrypted(t), l)
				const count = 200
				msg := func(i int) []byte {
					m := append([]byte{16}, fmt.Sprintf("%05d:", i)...)
					for len(m) < 1+i*25 {
						m = append(m, byte(i))
					}
					return m
				}
				go func() {
					for i := range count {
						if err := c.WriteMessage(Message{Data: msg(i), Channel: 1}); err != nil {
							t.Errorf("write %d: %v", i, err)
							return
						}
					}
				}()
				for i := range count {
					m, err := s.ReadMessage()
					require.NoError(t, err)
					require.Equal(t, msg(i), m.Data)
				}
				require.Zero(t, c.Stats().PacketsRejected+s.Stats().PacketsRejected)
			})
		})
	}
}

// TestWirefoxEncryptedStream: an encrypted Wirefox stream carries 1 MiB
// each way over real UDP, clean and impaired, and no datagram fails to
// open or to match its seal. On the impaired path a datagram sent under
// the plain seal before its sender knew the key may arrive, reordered or
// duplicated, after the keyed ones: it is dropped for its seal, and only
// such datagrams may be.
func TestWirefoxEncryptedStream(t *testing.T) {
	for _, l := range links {
		t.Run(l.name, func(t *testing.T) {
			c, s, _ := streamPair(t, wirefoxEncrypted(t), l)
			up, down := randomBytes(1<<20, 3), randomBytes(1<<20, 4)
			errc := make(chan error, 2)
			writeThenCloseWrite(c, up, errc)
			writeThenCloseWrite(s, down, errc)
			gotUp, err := io.ReadAll(s)
			require.NoError(t, err)
			gotDown, err := io.ReadAll(c)
			require.NoError(t, err)
			require.NoError(t, <-errc)
			require.NoError(t, <-errc)
			require.Equal(t, sha256.Sum256(up), sha256.Sum256(gotUp))
			require.Equal(t, sha256.Sum256(down), sha256.Sum256(gotDown))
			late := lateSeals(c) + lateSeals(s)
			if l.imp == nil {
				require.Zero(t, late)
			}
			require.Equal(t, late, c.Stats().PacketsRejected+s.Stats().PacketsRejected)
		})
	}
}

// TestWirefoxEncryptionRefused: a client checking another server key
// fails with ErrIncorrectRemoteIdentity; an encrypting client and a plain
// listener (and the other way round) fail with ErrIncompatible.
func TestWirefoxEncryptionRefused(t *testing.T) {
	other, err := ecdh.X25519().GenerateKey(rand.Reader)
	require.NoError(t, err)
	wrongKey := *wirefoxEncrypted(t)
	wrongKey.WirefoxServerKey = other.PublicKey()
	plain := &Config{Protocol: Wirefox}
	for _, tc := range []struct {
		name           string
		server, client *Config
		want           error
	}{
		{"identity", wirefoxEncrypted(t), &wrongKey, ErrIncorrectRemoteIdentity},
		{"client encrypts", plain, wirefoxEncrypted(t), ErrIncompatible},
		{"server encrypts", wirefoxEncrypted(t), plain, ErrIncompatible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := ServerMessages(udpSocket(t, nil, 0), tc.server)
			defer ln.Close()
			c := ClientMessages(udpSocket(t, nil, 0), ln.Addr(), tc.client)
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := c.Handshake(ctx)
			require.ErrorIs(t, err, tc.want)
			if tc.want == ErrIncompatible {
				require.ErrorContains(t, err, "both ends must set Config.WirefoxEncrypt alike")
			}
		})
	}
}

// TestWirefoxEncryptionConfig: the key fields need WirefoxEncrypt and
// X25519 keys.
func TestWirefoxEncryptionConfig(t *testing.T) {
	id, err := ecdh.X25519().GenerateKey(rand.Reader)
	require.NoError(t, err)
	p256, err := ecdh.P256().GenerateKey(rand.Reader)
	require.NoError(t, err)
	for _, cfg := range []Config{
		{Protocol: Wirefox, WirefoxIdentity: id},
		{Protocol: Wirefox, WirefoxServerKey: id.PublicKey()},
		{Protocol: Wirefox, WirefoxEncrypt: true, WirefoxIdentity: p256},
		{Protocol: Wirefox, WirefoxEncrypt: true, WirefoxServerKey: p256.PublicKey()},
	} {
		_, err := cfg.resolved()
		require.ErrorContains(t, err, "Wirefox")
	}
	cfg := Config{Protocol: Wirefox, WirefoxEncrypt: true, WirefoxIdentity: id, WirefoxServerKey: id.PublicKey()}
	_, err = cfg.resolved()
	require.NoError(t, err)
}
