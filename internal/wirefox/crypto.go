// Wirefox cryptography: libsodium's constructions as the reference puts them on the wire.

package wirefox

import (
	"fmt"
	"io"
	"slices"

	"golang.org/x/crypto/blake2b"
	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"
	// poly1305 is deprecated as a general-purpose MAC; here it is the
	// building block of libsodium's secretbox, which no other package offers.
	"golang.org/x/crypto/poly1305" //nolint:staticcheck

	"github.com/rudpkit/rudp/internal/engine"
)

// Sizes in bytes of the reference's libsodium build (docs/protocols/wirefox.md
// §1.7, §3.8).
const (
	// KeySize is the size of X25519 public and secret keys and of session
	// keys (crypto_kx_PUBLICKEYBYTES, crypto_kx_SESSIONKEYBYTES).
	KeySize = 32
	// NonceSize is the size of the random nonce that starts every encrypted
	// datagram (crypto_secretbox_xchacha20poly1305_NONCEBYTES).
	NonceSize = 24
	// MACSize is the size of the Poly1305 tag that follows the nonce
	// (crypto_secretbox_xchacha20poly1305_MACBYTES).
	MACSize = 16
	// Overhead is how much longer an encrypted datagram is than its
	// plaintext: nonce and MAC.
	Overhead = NonceSize + MACSize
	// ChallengeSize is the size of the random challenge a client sends to
	// check the server's long-term identity key.
	ChallengeSize = 64
	// SealedChallengeSize is the size of a challenge sealed with
	// crypto_box_seal: ephemeral public key, MAC, ciphertext (112 bytes).
	SealedChallengeSize = ChallengeSize + box.AnonymousOverhead
)

// Errors of this file. Both wrap engine.ErrRejected: they come from what a
// peer sent, and the datagram carrying it is counted as rejected.
var (
	// ErrDecrypt: an encrypted datagram or a sealed challenge is too short,
	// has the wrong size, or does not authenticate under the key.
	ErrDecrypt = fmt.Errorf("%w: wirefox: decryption failed", engine.ErrRejected)
	// ErrBadKey: a peer's X25519 public key is of low order, so the shared
	// secret would be all zeros; libsodium's crypto_kx functions return -1.
	ErrBadKey = fmt.Errorf("%w: wirefox: public key of low order", engine.ErrRejected)
)

// KeyPair is an X25519 key pair: the per-connection key-exchange pair
// (crypto_kx_keypair) or a server's long-term identity (crypto_box_keypair),
// docs/protocols/wirefox.md §3.8. Public = X25519(Secret, 9).
type KeyPair struct {
	Public, Secret [KeySize]byte
}

// GenerateKeyPair reads a 32-byte secret from r (crypto/rand.Reader outside
// tests) and derives its public key, as libsodium's crypto_kx_keypair and
// crypto_box_keypair do. It returns the error of io.ReadFull if r cannot
// supply 32 bytes.
func GenerateKeyPair(r io.Reader) (KeyPair, error) {
	var secret [KeySize]byte
	if _, err := io.ReadFull(r, secret[:]); err != nil {
		return KeyPair{}, fmt.Errorf("wirefox: reading a secret key: %w", err)
	}
	return KeyPairFromSecret(secret), nil
}

// KeyPairFromSecret returns the key pair of an X25519 secret key, its public
// key being X25519(secret, 9) (libsodium's crypto_scalarmult_base; the
// secret is clamped by the multiplication, not in the stored key).
func KeyPairFromSecret(secret [KeySize]byte) KeyPair {
	// Cannot fail: the base point is not of low order.
	public, _ := curve25519.X25519(secret[:], curve25519.Basepoint)
	kp := KeyPair{Secret: secret}
	copy(kp.Public[:], public)
	return kp
}

// SessionKeys are the two 32-byte keys of an encrypted connection: Tx seals
// what this end sends, Rx opens what it receives. The client's Tx is the
// server's Rx and the other way round (docs/protocols/wirefox.md §3.8).
type SessionKeys struct {
	Rx, Tx [KeySize]byte
}

// ClientSessionKeys derives the session keys of the end that connected, as
// libsodium's crypto_kx_client_session_keys: h = BLAKE2b-512(X25519(client
// secret, server public) || client public || server public), Rx = h[0:32],
// Tx = h[32:64] (docs/protocols/wirefox.md §3.8). It returns ErrBadKey if
// serverPublic is of low order.
func ClientSessionKeys(client KeyPair, serverPublic [KeySize]byte) (SessionKeys, error) {
	h, err := kxHash(client.Secret, serverPublic, client.Public, serverPublic)
	if err != nil {
		return SessionKeys{}, err
	}
	var k SessionKeys
	copy(k.Rx[:], h[:KeySize])
	copy(k.Tx[:], h[KeySize:])
	return k, nil
}

// ServerSessionKeys derives the session keys of the end that accepted, as
// libsodium's crypto_kx_server_session_keys: h as in ClientSessionKeys,
// Tx = h[0:32], Rx = h[32:64] (docs/protocols/wirefox.md §3.8). It returns
// ErrBadKey if clientPublic is of low order.
func ServerSessionKeys(server KeyPair, clientPublic [KeySize]byte) (SessionKeys, error) {
	h, err := kxHash(server.Secret, clientPublic, clientPublic, server.Public)
	if err != nil {
		return SessionKeys{}, err
	}
	var k SessionKeys
	copy(k.Tx[:], h[:KeySize])
	copy(k.Rx[:], h[KeySize:])
	return k, nil
}

// kxHash returns BLAKE2b-512(X25519(secret, peer) || clientPublic ||
// serverPublic), the 64 bytes crypto_kx splits into two session keys.
func kxHash(secret, peer, clientPublic, serverPublic [KeySize]byte) ([blake2b.Size]byte, error) {
	q, err := curve25519.X25519(secret[:], peer[:])
	if err != nil {
		return [blake2b.Size]byte{}, ErrBadKey
	}
	var in [3 * KeySize]byte
	copy(in[:], q)
	copy(in[KeySize:], clientPublic[:])
	copy(in[2*KeySize:], serverPublic[:])
	return blake2b.Sum512(in[:]), nil
}

// SealDatagram encrypts a whole datagram (header included) under key, the
// sender's Tx session key, and appends nonce || MAC || ciphertext to dst,
// Overhead bytes more than the plaintext: libsodium's
// crypto_secretbox_xchacha20poly1305_easy with the nonce as prefix, the
// reference's datagram encryption (docs/protocols/wirefox.md §1.7). The
// nonce must be 24 fresh random bytes for every datagram. It does not
// allocate when dst has the capacity. To encrypt in place, build the
// plaintext at buf[Overhead:] and pass buf[:0] as dst (the nonce may then
// be buf[0:NonceSize] too); otherwise dst's spare capacity must not overlap
// plaintext or nonce.
func SealDatagram(dst []byte, key *[KeySize]byte, nonce *[NonceSize]byte, plaintext []byte) []byte {
	ret, out := secretboxAppend(dst, Overhead+len(plaintext))
	s, _ := chacha20.NewUnauthenticatedCipher(key[:], nonce[:]) // cannot fail: sizes fixed by the types
	polyKey := secretboxPolyKey(s)
	s.XORKeyStream(out[Overhead:], plaintext)
	copy(out, nonce[:])
	poly1305.Sum((*[MACSize]byte)(out[NonceSize:Overhead]), out[Overhead:], &polyKey)
	return ret
}

// OpenDatagram checks and decrypts a datagram sealed as by SealDatagram
// under key, the receiver's Rx session key, and appends the plaintext
// (len(datagram) − Overhead bytes) to dst: libsodium's
// crypto_secretbox_xchacha20poly1305_open_easy (docs/protocols/wirefox.md
// §1.7). It returns ErrDecrypt, and writes nothing, if the datagram is
// shorter than Overhead or its MAC does not match (compared in constant
// time). It does not allocate when dst has the capacity. To decrypt in
// place, pass datagram[Overhead:Overhead] as dst; otherwise dst's spare
// capacity must not overlap datagram.
func OpenDatagram(dst []byte, key *[KeySize]byte, datagram []byte) ([]byte, error) {
	if len(datagram) < Overhead {
		return nil, ErrDecrypt
	}
	ciphertext := datagram[Overhead:]
	s, _ := chacha20.NewUnauthenticatedCipher(key[:], datagram[:NonceSize]) // cannot fail: sizes fixed
	polyKey := secretboxPolyKey(s)
	if !poly1305.Verify((*[MACSize]byte)(datagram[NonceSize:Overhead]), ciphertext, &polyKey) {
		return nil, ErrDecrypt
	}
	ret, out := secretboxAppend(dst, len(ciphertext))
	s.XORKeyStream(out, ciphertext)
	return ret, nil
}

// secretboxPolyKey reads the Poly1305 key of crypto_secretbox_xchacha20poly1305,
// the first 32 bytes of its keystream, from s, an XChaCha20 stream of the key
// and the 24-byte nonce; the ciphertext is the plaintext XOR the keystream
// from byte 32. libsodium runs ChaCha20 with the HChaCha20 subkey of key and
// nonce[0:16], the 8-byte nonce nonce[16:24] and a 64-bit block counter from
// 0; x/crypto's XChaCha20 is that stream with a 32-bit counter, which
// differs only after 256 GiB.
func secretboxPolyKey(s *chacha20.Cipher) [32]byte {
	var polyKey [32]byte
	s.XORKeyStream(polyKey[:], polyKey[:])
	return polyKey
}

// secretboxAppend appends n bytes to dst, reallocating only if its capacity
// is short, and returns the whole slice and the n appended bytes.
func secretboxAppend(dst []byte, n int) (whole, tail []byte) {
	whole = slices.Grow(dst, n)[:len(dst)+n]
	return whole, whole[len(dst):]
}

// SealChallenge seals a ChallengeSize-byte challenge to a server's long-term
// identity key, as libsodium's crypto_box_seal: a fresh ephemeral X25519
// key pair read from r (crypto/rand.Reader outside tests), then ephemeral
// public key || crypto_box_easy(challenge) with nonce
// BLAKE2b-192(ephemeral public || server public), SealedChallengeSize bytes
// (docs/protocols/wirefox.md §3.8). It returns an error if challenge is not
// ChallengeSize bytes or r cannot supply 32 bytes.
func SealChallenge(r io.Reader, serverPublic *[KeySize]byte, challenge []byte) ([]byte, error) {
	if len(challenge) != ChallengeSize {
		return nil, fmt.Errorf("wirefox: challenge of %d bytes, want %d", len(challenge), ChallengeSize)
	}
	sealed, err := box.SealAnonymous(make([]byte, 0, SealedChallengeSize), challenge, serverPublic, r)
	if err != nil {
		return nil, fmt.Errorf("wirefox: sealing a challenge: %w", err)
	}
	return sealed, nil
}

// OpenChallenge opens a challenge sealed by SealChallenge with the server's
// long-term identity key pair, as libsodium's crypto_box_seal_open
// (docs/protocols/wirefox.md §3.8), and returns the ChallengeSize bytes. It
// returns ErrDecrypt if sealed is not SealedChallengeSize bytes, its
// ephemeral key is of low order (libsodium refuses those) or it does not
// authenticate.
func OpenChallenge(server KeyPair, sealed []byte) ([]byte, error) {
	if len(sealed) != SealedChallengeSize {
		return nil, ErrDecrypt
	}
	if _, err := curve25519.X25519(server.Secret[:], sealed[:KeySize]); err != nil {
		return nil, ErrDecrypt
	}
	plain, ok := box.OpenAnonymous(make([]byte, 0, ChallengeSize), sealed, &server.Public, &server.Secret)
	if !ok {
		return nil, ErrDecrypt
	}
	return plain, nil
}
