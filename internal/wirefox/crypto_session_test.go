package wirefox

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rudpkit/rudp/internal/engine"
	"github.com/rudpkit/rudp/internal/enginetest"
	"github.com/stretchr/testify/require"
)

// The encrypted sessions of testdata/wirefox-crypto.json are replayed
// from either side: a session of this package plays the client (or the
// server) of the capture, fed the other side's logged datagrams at their
// logged times, its Rand giving the logged key-exchange secret and then
// the logged nonces of its own datagrams in order. Every datagram it
// sends must open to the logged plaintext and, sealed with the logged
// nonce, equal the logged wire bytes.

var appIndex = regexp.MustCompile(`app_index=(\d+)`)

// cryptoMessage is message i of the capture's application: command 16 on
// channel 0 or 17 on channel 1, payload sizes 8, 12, 8, 12, 2000.
func cryptoMessage(i int) (blob []byte, ch uint8) {
	sizes := []int{8, 12, 8, 12, 2000}
	blob = capturePayload(i, sizes[i])
	if i == 2 || i == 3 {
		blob[0], ch = 17, 1
	}
	return blob, ch
}

// loggedPeerID returns the PeerID of a logged plaintext handshake datagram.
func loggedPeerID(t *testing.T, wire []byte) (uint64, uint32) {
	t.Helper()
	var d Datagram
	require.NoError(t, ParseDatagram(wire, &d))
	blob, err := ParseOOB(&d)
	require.NoError(t, err)
	var h Handshake
	require.NoError(t, ParseHandshake(blob, &h))
	return h.PeerID, d.ID
}

// cryptoReplay runs one side of a logged session. It returns our session,
// the datagrams it sent and the logged datagrams of our direction.
func cryptoReplay(t *testing.T, v *cryptoVectors, name string, client bool) (*Session, [][]byte, []cryptoDatagram) {
	dgs := v.Datagrams[name]
	keys := v.Keys[name]
	ours, side := "s2c", keys.Server
	if client {
		ours, side = "c2s", keys.Client
	}
	var mine []cryptoDatagram
	for _, d := range dgs {
		if d.Direction == ours {
			mine = append(mine, d)
		}
	}
	// Rand: the first datagram ID (set to the capture's 0 below), the kx
	// secret, the challenge and its seal's ephemeral key, then the nonces.
	var r bytes.Buffer
	r.Write(make([]byte, 4))
	r.Write(side.KxSecret)
	cfg := Config{Client: client, Accept: !client, Channels: []ChannelMode{Ordered}, Encrypt: true,
		KeepAlive: -1, IdleTimeout: -1}
	if keys.ServerIdentity != nil {
		if client {
			r.Write(v.Challenge.Plain)
			r.Write(make([]byte, KeySize))
			pub := keys.ServerIdentity.Public.key(t)
			cfg.ServerKey = &pub
		} else {
			id := KeyPairFromSecret(keys.ServerIdentity.Secret.key(t))
			cfg.Identity = &id
		}
	}
	for _, d := range mine {
		r.Write(d.Nonce)
	}
	cfg.Rand = io.MultiReader(&r, rand.Reader)
	var firstOOB uint32
	cfg.PeerID, firstOOB = loggedPeerID(t, mine[0].Wire)
	s := fromZero(newSession(t, t0, cfg))
	s.oobID = firstOOB

	var sent [][]byte
	buf := make([]byte, MTU)
	pollAll := func(at time.Time) {
		for range 100 {
			n := s.Poll(at, buf)
			if n == 0 {
				return
			}
			sent = append(sent, bytes.Clone(buf[:n]))
		}
		t.Fatal("Poll does not stop")
	}
	advance := func(to time.Time) {
		for range 10_000 {
			d := s.Deadline()
			if d.IsZero() || d.After(to) {
				return
			}
			pollAll(d)
		}
		t.Fatal("deadlines do not advance")
	}
	at := func(d cryptoDatagram) time.Time { return t0.Add(time.Duration(d.TMs * float64(time.Millisecond))) }
	for _, d := range dgs {
		now := at(d)
		advance(now)
		if d.Direction == ours {
			if !client {
				continue
			}
			if m := appIndex.FindStringSubmatch(d.Summary); m != nil {
				i, _ := strconv.Atoi(m[1])
				blob, ch := cryptoMessage(i)
				require.NoError(t, s.Send(blob, engine.SendOptions{Channel: ch}))
			}
			if strings.Contains(d.Summary, "DISCONNECT_REQUEST") {
				s.Close(now)
			}
		} else {
			require.NoError(t, s.HandleDatagram(now, d.Wire), "#%d %s", d.Index, d.Summary)
			for m, ok := s.Recv(); ok; m, ok = s.Recv() {
				i := int(m.Data[4])
				blob, ch := cryptoMessage(i)
				require.Equal(t, blob, m.Data, "message %d", i)
				require.Equal(t, ch, m.Channel)
				if !client {
					require.NoError(t, s.Send(m.Data, engine.SendOptions{Channel: m.Channel}))
				}
			}
		}
		pollAll(now)
	}
	advance(at(dgs[len(dgs)-1]).Add(time.Second))
	return s, sent, mine
}

// openOurs opens a datagram we sent (or returns it as is when the
// logged one is plaintext).
func openOurs(t *testing.T, key [KeySize]byte, d cryptoDatagram, wire []byte) []byte {
	t.Helper()
	if !d.Encrypted {
		return wire
	}
	plain, err := OpenDatagram(nil, &key, wire)
	require.NoError(t, err, "#%d %s", d.Index, d.Summary)
	return plain
}

// TestCryptoReplayClient: our client, fed the server's logged datagrams,
// sends exactly the client's logged datagrams, byte for byte, and gets
// every echo. The sealed challenge is the one exception: its ephemeral
// key is not logged, so it is checked by opening it.
func TestCryptoReplayClient(t *testing.T) {
	v := loadCryptoVectors(t)
	for _, cs := range cryptoSessions {
		t.Run(cs.name, func(t *testing.T) {
			s, sent, mine := cryptoReplay(t, v, cs.name, true)
			require.Equal(t, engine.StateClosed, s.State())
			require.NoError(t, s.Err())
			require.Len(t, sent, len(mine))
			tx := v.Keys[cs.name].Client.SessionTx.key(t)
			for i, d := range mine {
				plain := openOurs(t, tx, d, sent[i])
				if d.Index == v.Challenge.C2SIndex && cs.name == v.Challenge.Session {
					k := len(plain) - SealedChallengeSize
					require.Equal(t, []byte(d.Plaintext[:k]), plain[:k])
					id := KeyPairFromSecret(v.Keys[cs.name].ServerIdentity.Secret.key(t))
					got, err := OpenChallenge(id, plain[k:])
					require.NoError(t, err)
					require.Equal(t, []byte(v.Challenge.Plain), got)
					continue
				}
				require.Equal(t, fmt.Sprintf("%x", d.Plaintext), fmt.Sprintf("%x", plain), "#%d %s", d.Index, d.Summary)
				require.Equal(t, fmt.Sprintf("%x", d.Wire), fmt.Sprintf("%x", sent[i]), "#%d %s", d.Index, d.Summary)
			}
		})
	}
}

// TestCryptoReplayServer: our server, fed the client's logged datagrams,
// sends exactly the server's logged datagrams and echoes every message,
// up to its echo of the fragmented message, which the reference sent
// segment 1 first (the capture's observed_note) and ours in order. From
// there, its DISCONNECT_ACK is checked: it answers the client's
// DISCONNECT_REQUEST, sealed.
func TestCryptoReplayServer(t *testing.T) {
	v := loadCryptoVectors(t)
	for _, cs := range cryptoSessions {
		t.Run(cs.name, func(t *testing.T) {
			s, sent, mine := cryptoReplay(t, v, cs.name, false)
			require.Equal(t, engine.StateClosed, s.State())
			tx := v.Keys[cs.name].Server.SessionTx.key(t)
			exact := 0
			for exact < len(mine) && !strings.Contains(mine[exact].Summary, "segment 1") {
				exact++
			}
			require.Greater(t, exact, 8)
			require.Greater(t, len(sent), exact)
			for i, d := range mine[:exact] {
				plain := openOurs(t, tx, d, sent[i])
				require.Equal(t, fmt.Sprintf("%x", d.Plaintext), fmt.Sprintf("%x", plain), "#%d %s", d.Index, d.Summary)
				require.Equal(t, fmt.Sprintf("%x", d.Wire), fmt.Sprintf("%x", sent[i]), "#%d %s", d.Index, d.Summary)
			}
			last := mine[len(mine)-1]
			require.Contains(t, last.Summary, "DISCONNECT_ACK")
			require.Equal(t, fmt.Sprintf("%x", last.Plaintext), fmt.Sprintf("%x", openOurs(t, tx, last, sent[len(sent)-1])))
		})
	}
}

// encryptedConfigs returns the Configs of an encrypted client checking
// the identity of an encrypted server.
func encryptedConfigs(t *testing.T) (client, server Config) {
	id, err := GenerateKeyPair(rand.Reader)
	require.NoError(t, err)
	client = Config{Encrypt: true, ServerKey: &id.Public, MaxMessage: 4000, SendLimit: -1}
	server = Config{Encrypt: true, Identity: &id, MaxMessage: 4000, SendLimit: -1}
	return client, server
}

// TestEncryptedLossyTransfer: two encrypted sessions, the client checking
// the server's identity, exchange 2000 messages each way exactly once
// over links losing 30 %, handshake included; no datagram exceeds MTU.
func TestEncryptedLossyTransfer(t *testing.T) {
	const total = 2000
	cc, sc := encryptedConfigs(t)
	p := newPair(t, cc, sc, 15*ms, 0.3, 7)
	ab, ba := enginetest.NewFlow("ab", total, 1), enginetest.NewFlow("ba", total, 2)
	p.RunFlows(2_000_000, ab, ba, onChannel1)
	for _, s := range []*Session{p.A, p.B} {
		st := s.Stats()
		require.Equal(t, engine.StateEstablished, s.State())
		require.Equal(t, uint64(total), st.MessagesRecv)
		require.Zero(t, st.PacketsRejected)
	}
	largest := 0
	for _, l := range [][][]byte{p.AB.Log, p.BA.Log} {
		for _, b := range l {
			largest = max(largest, len(b))
		}
	}
	require.Equal(t, MTU, largest, "the largest datagram")
}

// TestEncryptedHandshakeLosses: whichever handshake datagram is lost
// (INITIAL_CLIENT, INITIAL_SERVER, both AUTH_MSG key exchanges, the
// challenge and its answer, DONE), the repeats complete the handshake.
func TestEncryptedHandshakeLosses(t *testing.T) {
	for lost := range 7 {
		t.Run(strconv.Itoa(lost), func(t *testing.T) {
			cc, sc := encryptedConfigs(t)
			p := newPair(t, cc, sc, 15*ms, 0, 1)
			n := 0
			drop := func([]byte) bool { n++; return n-1 == lost }
			p.AB.Drop, p.BA.Drop = drop, drop
			connect(t, p)
			require.NoError(t, p.A.Send([]byte{CmdUser, 1}, engine.SendOptions{}))
			p.Advance(p.Now.Add(time.Second))
			require.Equal(t, []string{"\x0f\x01"}, drain(p.B))
			require.Less(t, p.Now.Sub(t0), 2*HandshakeInterval+time.Second)
		})
	}
}

// TestCorruptedDatagramSurvives: an encrypted datagram that does not open
// is dropped and counted; the connection goes on, and the genuine copy
// is taken.
func TestCorruptedDatagramSurvives(t *testing.T) {
	cc, sc := encryptedConfigs(t)
	p := newPair(t, cc, sc, 15*ms, 0, 1)
	connect(t, p)
	p.Advance(p.Now.Add(time.Second))
	require.NoError(t, p.A.Send([]byte{CmdUser, 7}, engine.SendOptions{}))
	buf := make([]byte, MTU)
	n := p.A.Poll(p.Now, buf)
	require.Positive(t, n)
	bad := bytes.Clone(buf[:n])
	bad[n-1] ^= 1
	err := p.B.HandleDatagram(p.Now, bad)
	require.ErrorIs(t, err, ErrDecrypt)
	require.ErrorIs(t, err, engine.ErrRejected)
	require.Equal(t, uint64(1), p.B.Stats().PacketsRejected)
	require.Equal(t, engine.StateEstablished, p.B.State())
	require.Empty(t, drain(p.B))
	require.NoError(t, p.B.HandleDatagram(p.Now, buf[:n]))
	require.Equal(t, []string{"\x0f\x07"}, drain(p.B))
}

// TestMismatchedSecurity: when one end encrypts and the other does not,
// the server answers ERROR_OCCURRED INCOMPATIBLE_SECURITY and both end
// with engine.ErrIncompatible.
func TestMismatchedSecurity(t *testing.T) {
	for _, clientEncrypts := range []bool{true, false} {
		p := newPair(t, Config{Encrypt: clientEncrypts}, Config{Encrypt: !clientEncrypts}, 15*ms, 0, 1)
		p.RunUntil(1000, func() bool {
			return p.A.State() == engine.StateClosed && p.B.State() == engine.StateClosed
		})
		require.ErrorIs(t, p.A.Err(), engine.ErrIncompatible)
		require.ErrorIs(t, p.B.Err(), engine.ErrIncompatible)
		var d Datagram
		require.NoError(t, ParseDatagram(p.BA.Log[0], &d))
		blob, err := ParseOOB(&d)
		require.NoError(t, err)
		var h Handshake
		require.NoError(t, ParseHandshake(blob, &h))
		require.Equal(t, Handshake{PeerID: serverID, Op: OpError, Data: []byte{ResultIncompatibleSecurity}}, h)
	}
}

// TestIncorrectRemoteIdentity: a client fails with
// ErrIncorrectRemoteIdentity when the server answers its challenge with
// other bytes, or cannot open it (the server holds another identity, or
// none: as the reference's server it answers AUTH_MSG AUTHENTICATION
// without the answer, and ends with engine.ErrIncompatible).
func TestIncorrectRemoteIdentity(t *testing.T) {
	// A wrong answer: the server's answer altered on the way, sealed again.
	cc, sc := encryptedConfigs(t)
	p := newPair(t, cc, sc, 15*ms, 0, 1)
	p.BA.Edit = func(b []byte) []byte {
		if p.B.keys == nil || len(b) != Overhead+7+11+handshakeHeader+1+ChallengeSize {
			return b
		}
		plain, err := OpenDatagram(nil, &p.B.keys.Tx, b)
		require.NoError(t, err)
		plain[len(plain)-1] ^= 1
		return SealDatagram(nil, &p.B.keys.Tx, (*[NonceSize]byte)(b), plain)
	}
	p.RunUntil(1000, func() bool { return p.A.State() == engine.StateClosed })
	require.ErrorIs(t, p.A.Err(), ErrIncorrectRemoteIdentity)

	for _, other := range []bool{true, false} {
		cc, sc = encryptedConfigs(t)
		sc.Identity = nil
		if other {
			id, err := GenerateKeyPair(rand.Reader)
			require.NoError(t, err)
			sc.Identity = &id
		}
		p = newPair(t, cc, sc, 15*ms, 0, 1)
		p.RunUntil(1000, func() bool {
			return p.A.State() == engine.StateClosed && p.B.State() == engine.StateClosed
		})
		require.ErrorIs(t, p.A.Err(), ErrIncorrectRemoteIdentity)
		require.ErrorIs(t, p.B.Err(), engine.ErrIncompatible)
		last := p.BA.Log[len(p.BA.Log)-1]
		plain, err := OpenDatagram(nil, &p.A.keys.Rx, last)
		require.NoError(t, err)
		var d Datagram
		require.NoError(t, ParseDatagram(plain, &d))
		blob, err := ParseOOB(&d)
		require.NoError(t, err)
		var h Handshake
		require.NoError(t, ParseHandshake(blob, &h))
		require.Equal(t, Handshake{PeerID: serverID, Op: OpAuthMsg, Data: []byte{AuthAuthentication}}, h)
	}
}
