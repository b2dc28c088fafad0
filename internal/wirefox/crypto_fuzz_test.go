package wirefox

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzOpenDatagram checks that OpenDatagram never panics, fails only with
// ErrDecrypt, and that whatever opens seals again, with its own nonce, to
// exactly the input; and that any input sealed as a plaintext opens to
// itself. The key is the client-to-server key of the "no_challenge" vector
// session, so its client datagrams, among the seeds, open.
func FuzzOpenDatagram(f *testing.F) {
	v := loadCryptoVectors(f)
	_, server := cryptoSessionKeys(f, v, "no_challenge")
	key := server.Rx
	for _, s := range cryptoSessions {
		for _, d := range v.Datagrams[s.name] {
			f.Add([]byte(d.Wire))
		}
	}
	f.Add([]byte{})
	f.Add(make([]byte, Overhead))
	opened := make([]byte, 0, 2048)
	f.Fuzz(func(t *testing.T, data []byte) {
		plain, err := OpenDatagram(opened[:0], &key, data)
		if err != nil {
			require.ErrorIs(t, err, ErrDecrypt)
			require.Nil(t, plain)
		} else {
			require.Len(t, plain, len(data)-Overhead)
			require.Equal(t, data, SealDatagram(nil, &key, (*[NonceSize]byte)(data), plain))
		}

		var nonce [NonceSize]byte
		copy(nonce[:], data)
		sealed := SealDatagram(nil, &key, &nonce, data)
		require.Len(t, sealed, len(data)+Overhead)
		got, err := OpenDatagram(nil, &key, sealed)
		require.NoError(t, err)
		require.True(t, bytes.Equal(data, got))
	})
}
