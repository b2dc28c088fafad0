package rudp

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestProtocolOptionForOtherProtocol: every protocol-only field, set
// while Protocol selects a protocol that does not read it, fails the
// Config with an error naming the field and the protocol; set for a
// protocol that reads it, it passes this check.
func TestProtocolOptionForOtherProtocol(t *testing.T) {
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	require.NoError(t, err)
	values := map[string]func(*Config){
		"Channels":            func(c *Config) { c.Channels = 2 },
		"LowPriorityChannels": func(c *Config) { c.LowPriorityChannels = []uint8{0} },
		"ChannelWeights":      func(c *Config) { c.ChannelWeights = []int{1} },
		"MaxUnreliableDelay":  func(c *Config) { c.MaxUnreliableDelay = time.Second },
		"MaxMessage":          func(c *Config) { c.MaxMessage = 1000 },
		"WirefoxChannels":     func(c *Config) { c.WirefoxChannels = []WirefoxChannelMode{WirefoxOrdered} },
		"WirefoxEncrypt":      func(c *Config) { c.WirefoxEncrypt = true },
		"WirefoxIdentity":     func(c *Config) { c.WirefoxEncrypt, c.WirefoxIdentity = true, key },
		"WirefoxServerKey":    func(c *Config) { c.WirefoxEncrypt, c.WirefoxServerKey = true, key.PublicKey() },
		"Circuit":             func(c *Config) { c.Circuit = Circuit{Code: 7} },
		"AcceptCircuit":       func(c *Config) { c.AcceptCircuit = func(Circuit) bool { return true } },
		"ResendLimit":         func(c *Config) { c.ResendLimit = 3 },
		"AvaraPassword":       func(c *Config) { c.AvaraPassword = "secret" },
		"AvaraVersion":        func(c *Config) { c.AvaraVersion = 17 },
		"AvaraCram":           func(c *Config) { c.AvaraCram = 2 },
		"AvaraSkipAfter":      func(c *Config) { c.AvaraSkipAfter = 16 },
	}
	require.Len(t, values, len(protocolOptions))
	for _, o := range protocolOptions {
		set, ok := values[o.name]
		require.True(t, ok, o.name)
		for _, p := range Protocols() {
			cfg := &Config{Protocol: p}
			set(cfg)
			require.True(t, o.set(cfg), o.name)
			_, err := cfg.resolved()
			if p.entry().reads(o.name) {
				require.NoError(t, err, "%s on %v", o.name, p)
				continue
			}
			require.Error(t, err, "%s on %v", o.name, p)
			// WirefoxIdentity and WirefoxServerKey come with WirefoxEncrypt,
			// which is named first.
			name := o.name
			if strings.HasPrefix(name, "WirefoxIdentity") || strings.HasPrefix(name, "WirefoxServerKey") {
				name = "WirefoxEncrypt"
			}
			require.ErrorContains(t, err, "Config."+name+" is set but Protocol is "+p.String())
		}
	}
	// The default protocol is POROUS.
	_, err = (&Config{WirefoxEncrypt: true}).resolved()
	require.ErrorContains(t, err, "Config.WirefoxEncrypt is set but Protocol is porous")
}

// TestEncryptionNeverDropped: a stream or message conn asked to encrypt
// (WirefoxEncrypt) with the default protocol fails at once, and not one
// datagram leaves its socket: nothing goes out in plaintext.
func TestEncryptionNeverDropped(t *testing.T) {
	cfg := &Config{WirefoxEncrypt: true}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err := (&Dialer{Config: cfg}).DialContext(ctx, "udp", "127.0.0.1:9")
	require.ErrorContains(t, err, "Config.WirefoxEncrypt is set but Protocol is porous")
	_, err = DialMessages(ctx, "udp", "127.0.0.1:9", cfg)
	require.ErrorContains(t, err, "Config.WirefoxEncrypt is set but Protocol is porous")
	_, err = (&ListenConfig{Config: cfg}).Listen(ctx, "udp", "127.0.0.1:0")
	require.ErrorContains(t, err, "Config.WirefoxEncrypt is set but Protocol is porous")
	_, err = ListenMessages("udp", "127.0.0.1:0", cfg)
	require.ErrorContains(t, err, "Config.WirefoxEncrypt is set but Protocol is porous")

	rec := &recordingConn{PacketConn: udpSocket(t, nil, 0)}
	peer := udpSocket(t, nil, 0)
	c := Client(rec, peer.LocalAddr(), cfg)
	_, err = c.Write([]byte("secret"))
	require.ErrorContains(t, err, "Config.WirefoxEncrypt is set but Protocol is porous")
	m := ClientMessages(rec, peer.LocalAddr(), cfg)
	require.ErrorContains(t, m.WriteMessage(Message{Data: []byte("secret")}), "Config.WirefoxEncrypt is set but Protocol is porous")
	c.Close()
	m.Close()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Empty(t, rec.log, "datagrams sent")
}
