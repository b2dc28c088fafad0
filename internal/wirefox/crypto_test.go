package wirefox

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/nacl/box"
)

// testdata/wirefox-crypto.json holds two encrypted sessions captured from
// the reference (iridinite/wirefox at 0897fcf, libsodium 1.0.18) with its
// keys logged: "no_challenge" and "challenge" (the client checks the
// server's identity key). Under "keys" each session has the client's and
// server's kx key pair and session keys (and, for "challenge", the server's
// identity pair); under "datagrams" each session lists every datagram in
// order with its wire bytes and, when encrypted, its nonce, MAC and
// plaintext; "challenge" holds the sealed challenge and its 64 bytes.

type cryptoHex []byte

func (h *cryptoHex) UnmarshalText(text []byte) error {
	b, err := hex.DecodeString(string(text))
	*h = b
	return err
}

// key returns h as a key, failing the test unless it is KeySize bytes.
func (h cryptoHex) key(t testing.TB) [KeySize]byte {
	t.Helper()
	require.Len(t, h, KeySize)
	return [KeySize]byte(h)
}

type cryptoSide struct {
	KxPublic  cryptoHex `json:"kx_public"`
	KxSecret  cryptoHex `json:"kx_secret"`
	SessionRx cryptoHex `json:"session_rx"`
	SessionTx cryptoHex `json:"session_tx"`
}

type cryptoDatagram struct {
	Index        int       `json:"index"`
	TMs          float64   `json:"t_ms"`
	Direction    string    `json:"direction"`
	Length       int       `json:"length"`
	Encrypted    bool      `json:"encrypted"`
	Summary      string    `json:"summary"`
	Wire         cryptoHex `json:"wire"`
	Nonce        cryptoHex `json:"nonce"`
	MAC          cryptoHex `json:"mac"`
	PlaintextLen int       `json:"plaintext_length"`
	Plaintext    cryptoHex `json:"plaintext"`
}

type cryptoVectors struct {
	Keys map[string]struct {
		Client         cryptoSide `json:"client"`
		Server         cryptoSide `json:"server"`
		ServerIdentity *struct {
			Public cryptoHex `json:"public"`
			Secret cryptoHex `json:"secret"`
		} `json:"server_identity"`
	} `json:"keys"`
	Challenge struct {
		Session  string    `json:"session"`
		Plain    cryptoHex `json:"plain"`
		Sealed   cryptoHex `json:"sealed"`
		C2SIndex int       `json:"c2s_datagram_index"`
		S2CIndex int       `json:"s2c_datagram_index"`
	} `json:"challenge"`
	Datagrams map[string][]cryptoDatagram `json:"datagrams"`
}

// cryptoSessions names the sessions of the vector file, with the number of
// datagrams each holds.
var cryptoSessions = []struct {
	name      string
	datagrams int
}{{"no_challenge", 32}, {"challenge", 34}}

func loadCryptoVectors(t testing.TB) *cryptoVectors {
	t.Helper()
	b, err := os.ReadFile("testdata/wirefox-crypto.json")
	require.NoError(t, err)
	var v cryptoVectors
	require.NoError(t, json.Unmarshal(b, &v))
	require.Len(t, v.Keys, len(cryptoSessions))
	for _, s := range cryptoSessions {
		require.Len(t, v.Datagrams[s.name], s.datagrams, s.name)
	}
	return &v
}

// cryptoPairs returns the logged client and server kx key pairs of a
// session.
func cryptoPairs(t testing.TB, v *cryptoVectors, session string) (client, server KeyPair) {
	t.Helper()
	k := v.Keys[session]
	client = KeyPair{Public: k.Client.KxPublic.key(t), Secret: k.Client.KxSecret.key(t)}
	server = KeyPair{Public: k.Server.KxPublic.key(t), Secret: k.Server.KxSecret.key(t)}
	return client, server
}

// cryptoSessionKeys derives both ends' session keys of a session from its
// logged key pairs.
func cryptoSessionKeys(t testing.TB, v *cryptoVectors, session string) (client, server SessionKeys) {
	t.Helper()
	c, s := cryptoPairs(t, v, session)
	client, err := ClientSessionKeys(c, s.Public)
	require.NoError(t, err)
	server, err = ServerSessionKeys(s, c.Public)
	require.NoError(t, err)
	return client, server
}

func TestKeyPairVectors(t *testing.T) {
	v := loadCryptoVectors(t)
	for _, s := range cryptoSessions {
		c, srv := cryptoPairs(t, v, s.name)
		for _, kp := range []KeyPair{c, srv} {
			require.Equal(t, kp, KeyPairFromSecret(kp.Secret), s.name)
			got, err := GenerateKeyPair(bytes.NewReader(kp.Secret[:]))
			require.NoError(t, err)
			require.Equal(t, kp, got, s.name)
		}
	}
	id := v.Keys["challenge"].ServerIdentity
	require.NotNil(t, id)
	require.Equal(t, id.Public.key(t), KeyPairFromSecret(id.Secret.key(t)).Public)

	_, err := GenerateKeyPair(bytes.NewReader(make([]byte, KeySize-1)))
	require.Error(t, err)
}

func TestSessionKeyVectors(t *testing.T) {
	v := loadCryptoVectors(t)
	for _, s := range cryptoSessions {
		k := v.Keys[s.name]
		client, server := cryptoSessionKeys(t, v, s.name)
		require.Equal(t, SessionKeys{Rx: k.Client.SessionRx.key(t), Tx: k.Client.SessionTx.key(t)}, client, s.name)
		require.Equal(t, SessionKeys{Rx: k.Server.SessionRx.key(t), Tx: k.Server.SessionTx.key(t)}, server, s.name)
	}
}

func TestSessionKeysLowOrder(t *testing.T) {
	kp := KeyPairFromSecret([KeySize]byte{1, 2, 3})
	for _, h := range []string{
		"0000000000000000000000000000000000000000000000000000000000000000", // order 2
		"0100000000000000000000000000000000000000000000000000000000000000", // order 4
		"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800", // order 8
	} {
		var low cryptoHex
		require.NoError(t, low.UnmarshalText([]byte(h)))
		_, err := ClientSessionKeys(kp, low.key(t))
		require.ErrorIs(t, err, ErrBadKey)
		require.ErrorIs(t, err, engine.ErrRejected)
		_, err = ServerSessionKeys(kp, low.key(t))
		require.ErrorIs(t, err, ErrBadKey)
	}
}

// TestDatagramVectors opens every encrypted datagram of both sessions with
// the receiver's derived Rx key, and seals its plaintext again with the
// sender's Tx key and the logged nonce to the exact wire bytes.
func TestDatagramVectors(t *testing.T) {
	v := loadCryptoVectors(t)
	encrypted := 0
	for _, s := range cryptoSessions {
		client, server := cryptoSessionKeys(t, v, s.name)
		for _, d := range v.Datagrams[s.name] {
			name := s.name + " " + d.Summary
			require.Len(t, d.Wire, d.Length, name)
			require.Len(t, d.Plaintext, d.PlaintextLen, name)
			// The first four datagrams (INITIAL_CLIENT, INITIAL_SERVER and
			// both key-exchange AUTH_MSGs) are plaintext, all later ones
			// encrypted.
			require.Equal(t, d.Index >= 4, d.Encrypted, name)
			if !d.Encrypted {
				require.Equal(t, d.Plaintext, d.Wire, name)
				require.Nil(t, d.Nonce, name)
				continue
			}
			encrypted++
			tx, rx := &client.Tx, &server.Rx
			if d.Direction == "s2c" {
				tx, rx = &server.Tx, &client.Rx
			}
			require.Len(t, d.Wire, len(d.Plaintext)+Overhead, name)
			require.Equal(t, d.Nonce, d.Wire[:NonceSize], name)
			require.Equal(t, d.MAC, d.Wire[NonceSize:Overhead], name)

			got, err := OpenDatagram(nil, rx, d.Wire)
			require.NoError(t, err, name)
			require.Equal(t, []byte(d.Plaintext), got, name)
			require.Equal(t, []byte(d.Wire), SealDatagram(nil, tx, (*[NonceSize]byte)(d.Nonce), d.Plaintext), name)

			// The key of the other direction does not open it.
			other := &client.Rx
			if rx == other {
				other = &server.Rx
			}
			_, err = OpenDatagram(nil, other, d.Wire)
			require.ErrorIs(t, err, ErrDecrypt, name)
		}
	}
	require.Equal(t, 28+30, encrypted)
}

// TestDatagramAppendAndInPlace checks that both functions append to dst and
// work in place as documented.
func TestDatagramAppendAndInPlace(t *testing.T) {
	v := loadCryptoVectors(t)
	client, server := cryptoSessionKeys(t, v, "no_challenge")
	d := v.Datagrams["no_challenge"][22] // a 1266-byte data datagram
	require.True(t, d.Encrypted)
	require.Equal(t, "c2s", d.Direction)
	nonce := (*[NonceSize]byte)(d.Nonce)
	prefix := []byte{0xaa, 0xbb}

	got, err := OpenDatagram(bytes.Clone(prefix), &server.Rx, nil)
	require.ErrorIs(t, err, ErrDecrypt)
	require.Nil(t, got)

	got, err = OpenDatagram(bytes.Clone(prefix), &server.Rx, d.Wire)
	require.NoError(t, err)
	require.Equal(t, append(bytes.Clone(prefix), d.Plaintext...), got)
	sealed := SealDatagram(bytes.Clone(prefix), &client.Tx, nonce, d.Plaintext)
	require.Equal(t, append(bytes.Clone(prefix), d.Wire...), sealed)

	// In place: plaintext built at buf[Overhead:], sealed into buf.
	buf := make([]byte, Overhead+len(d.Plaintext))
	copy(buf[Overhead:], d.Plaintext)
	sealed = SealDatagram(buf[:0], &client.Tx, nonce, buf[Overhead:])
	require.Equal(t, []byte(d.Wire), sealed)
	require.Same(t, &buf[0], &sealed[0])
	// The nonce may already sit in the output.
	copy(buf[Overhead:], d.Plaintext)
	sealed = SealDatagram(buf[:0], &client.Tx, (*[NonceSize]byte)(buf), buf[Overhead:])
	require.Equal(t, []byte(d.Wire), sealed)

	opened, err := OpenDatagram(buf[Overhead:Overhead], &server.Rx, buf)
	require.NoError(t, err)
	require.Equal(t, []byte(d.Plaintext), opened)
	require.Same(t, &buf[Overhead], &opened[0])

	// An empty plaintext gives a datagram of Overhead bytes that opens.
	empty := SealDatagram(nil, &client.Tx, nonce, nil)
	require.Len(t, empty, Overhead)
	got, err = OpenDatagram(nil, &server.Rx, empty)
	require.NoError(t, err)
	require.Empty(t, got)
}

// TestOpenDatagramTampered flips every bit of two vector datagrams (nonce,
// MAC and ciphertext), and cuts and extends them: each must fail with
// ErrDecrypt.
func TestOpenDatagramTampered(t *testing.T) {
	v := loadCryptoVectors(t)
	_, server := cryptoSessionKeys(t, v, "no_challenge")
	for _, i := range []int{9, 22} { // a 10-byte ackgram and a 1226-byte data datagram, both c2s
		d := v.Datagrams["no_challenge"][i]
		require.Equal(t, "c2s", d.Direction)
		_, err := OpenDatagram(nil, &server.Rx, d.Wire)
		require.NoError(t, err)
		wire := bytes.Clone(d.Wire)
		for bit := range 8 * len(wire) {
			wire[bit/8] ^= 1 << (bit % 8)
			got, err := OpenDatagram(nil, &server.Rx, wire)
			require.ErrorIs(t, err, ErrDecrypt, "bit %d", bit)
			require.ErrorIs(t, err, engine.ErrRejected)
			require.Nil(t, got)
			wire[bit/8] ^= 1 << (bit % 8)
		}
		for n := range len(wire) {
			_, err := OpenDatagram(nil, &server.Rx, wire[:n])
			require.ErrorIs(t, err, ErrDecrypt, "length %d", n)
		}
		_, err = OpenDatagram(nil, &server.Rx, append(wire, 0))
		require.ErrorIs(t, err, ErrDecrypt)
	}
}

// TestOpenDatagramNotIETF checks that a datagram sealed with the IETF
// construction (crypto_aead_xchacha20poly1305_ietf) under the same key and
// nonce, laid out as nonce || tag || ciphertext, does not open: the
// reference uses the secretbox construction.
func TestOpenDatagramNotIETF(t *testing.T) {
	v := loadCryptoVectors(t)
	client, server := cryptoSessionKeys(t, v, "no_challenge")
	d := v.Datagrams["no_challenge"][6]
	aead, err := chacha20poly1305.NewX(client.Tx[:])
	require.NoError(t, err)
	sealed := aead.Seal(nil, d.Nonce, d.Plaintext, nil)
	ct, tag := sealed[:len(d.Plaintext)], sealed[len(d.Plaintext):]
	ietf := append(append(bytes.Clone(d.Nonce), tag...), ct...)
	require.Len(t, ietf, len(d.Wire))
	require.NotEqual(t, []byte(d.Wire), ietf)
	_, err = OpenDatagram(nil, &server.Rx, ietf)
	require.ErrorIs(t, err, ErrDecrypt)
}

// TestChallengeVector opens the sealed challenge of the "challenge" session
// with the server's identity key, and finds it and its answer in the
// AUTH_MSG state 1 datagrams.
func TestChallengeVector(t *testing.T) {
	v := loadCryptoVectors(t)
	c := v.Challenge
	require.Equal(t, "challenge", c.Session)
	require.Len(t, c.Plain, ChallengeSize)
	require.Len(t, c.Sealed, SealedChallengeSize)
	require.Equal(t, 112, SealedChallengeSize)
	// The AUTH_MSG blobs end with the sealed challenge (client to server)
	// and the opened one (server to client).
	ds := v.Datagrams[c.Session]
	require.True(t, bytes.HasSuffix(ds[c.C2SIndex].Plaintext, c.Sealed))
	require.True(t, bytes.HasSuffix(ds[c.S2CIndex].Plaintext, c.Plain))

	id := v.Keys[c.Session].ServerIdentity
	server := KeyPair{Public: id.Public.key(t), Secret: id.Secret.key(t)}
	got, err := OpenChallenge(server, c.Sealed)
	require.NoError(t, err)
	require.Equal(t, []byte(c.Plain), got)

	// The server's kx pair is not its identity.
	_, kx := cryptoPairs(t, v, c.Session)
	_, err = OpenChallenge(kx, c.Sealed)
	require.ErrorIs(t, err, ErrDecrypt)

	sealed := bytes.Clone(c.Sealed)
	for bit := range 8 * len(sealed) {
		sealed[bit/8] ^= 1 << (bit % 8)
		_, err := OpenChallenge(server, sealed)
		require.ErrorIs(t, err, ErrDecrypt, "bit %d", bit)
		require.ErrorIs(t, err, engine.ErrRejected)
		sealed[bit/8] ^= 1 << (bit % 8)
	}
	for _, n := range []int{0, box.AnonymousOverhead, SealedChallengeSize - 1, SealedChallengeSize + 1} {
		_, err := OpenChallenge(server, append(bytes.Clone(c.Sealed), 0)[:n])
		require.ErrorIs(t, err, ErrDecrypt, "length %d", n)
	}
}

func TestChallengeRoundTrip(t *testing.T) {
	r := rand.NewChaCha8([32]byte{7})
	server, err := GenerateKeyPair(r)
	require.NoError(t, err)
	other, err := GenerateKeyPair(r)
	require.NoError(t, err)
	challenge := make([]byte, ChallengeSize)
	_, _ = r.Read(challenge)

	sealed, err := SealChallenge(r, &server.Public, challenge)
	require.NoError(t, err)
	require.Len(t, sealed, SealedChallengeSize)
	got, err := OpenChallenge(server, sealed)
	require.NoError(t, err)
	require.Equal(t, challenge, got)
	_, err = OpenChallenge(other, sealed)
	require.ErrorIs(t, err, ErrDecrypt)

	// The reference reads exactly SealedChallengeSize bytes: a sealed box of
	// another size is refused even if it authenticates.
	for _, n := range []int{ChallengeSize - 1, ChallengeSize + 1} {
		other, err := box.SealAnonymous(nil, make([]byte, n), &server.Public, r)
		require.NoError(t, err)
		_, err = OpenChallenge(server, other)
		require.ErrorIs(t, err, ErrDecrypt, "challenge of %d bytes", n)
	}

	_, err = SealChallenge(r, &server.Public, challenge[1:])
	require.Error(t, err)
	_, err = SealChallenge(bytes.NewReader(nil), &server.Public, challenge)
	require.Error(t, err)
}

// TestOpenChallengeLowOrder: a box sealed with a low-order "ephemeral key"
// has the all-zero shared secret, so anyone can make one; libsodium's
// crypto_box_seal_open refuses it, and so does OpenChallenge.
func TestOpenChallengeLowOrder(t *testing.T) {
	server := KeyPairFromSecret([KeySize]byte{9})
	var low, anySecret [KeySize]byte // the point 0, of order 2
	var shared [KeySize]byte
	box.Precompute(&shared, &low, &anySecret) // HSalsa20 of the all-zero secret
	nonce := cryptoSealNonce(&low, &server.Public)
	challenge := make([]byte, ChallengeSize)
	forged := box.SealAfterPrecomputation(bytes.Clone(low[:]), challenge, &nonce, &shared)
	require.Len(t, forged, SealedChallengeSize)
	_, ok := box.OpenAnonymous(nil, forged, &server.Public, &server.Secret)
	require.True(t, ok, "the forged box is well formed")
	_, err := OpenChallenge(server, forged)
	require.ErrorIs(t, err, ErrDecrypt)
}

// cryptoSealNonce is crypto_box_seal's nonce: BLAKE2b-192(epk || pk).
func cryptoSealNonce(epk, pk *[KeySize]byte) [24]byte {
	h, _ := blake2b.New(24, nil) // cannot fail: 24 is a valid size, no key
	h.Write(epk[:])
	h.Write(pk[:])
	return [24]byte(h.Sum(nil))
}

func TestDatagramAllocs(t *testing.T) {
	var key [KeySize]byte
	var nonce [NonceSize]byte
	plain := make([]byte, 1200)
	sealed := make([]byte, 0, Overhead+len(plain))
	opened := make([]byte, 0, len(plain))
	require.Zero(t, testing.AllocsPerRun(10, func() {
		sealed = SealDatagram(sealed[:0], &key, &nonce, plain)
	}))
	require.Zero(t, testing.AllocsPerRun(10, func() {
		var err error
		opened, err = OpenDatagram(opened[:0], &key, sealed)
		if err != nil {
			panic(err)
		}
	}))
}

func BenchmarkSealDatagram(b *testing.B) {
	var key [KeySize]byte
	var nonce [NonceSize]byte
	plain := make([]byte, 1200)
	out := make([]byte, 0, Overhead+len(plain))
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	for b.Loop() {
		out = SealDatagram(out[:0], &key, &nonce, plain)
	}
}

func BenchmarkOpenDatagram(b *testing.B) {
	var key [KeySize]byte
	var nonce [NonceSize]byte
	plain := make([]byte, 1200)
	sealed := SealDatagram(nil, &key, &nonce, plain)
	out := make([]byte, 0, len(plain))
	b.SetBytes(int64(len(plain)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		out, err = OpenDatagram(out[:0], &key, sealed)
		if err != nil {
			b.Fatal(err)
		}
	}
}
