package engine

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCheckConfig: the settings every engine has, refused with an error
// wrapping ErrConfig that names the protocol.
func TestCheckConfig(t *testing.T) {
	require.NoError(t, CheckConfig("x", true, false, 0, 0, time.Second))
	err := CheckConfig("x", true, true, 0)
	require.ErrorIs(t, err, ErrConfig)
	require.EqualError(t, err, "x: invalid config: Client and Accept both set")
	require.EqualError(t, CheckConfig("x", false, false, -1), "x: invalid config: MaxQueued -1")
	require.EqualError(t, CheckConfig("x", false, false, 0, time.Second, -1), "x: invalid config: negative timer")
}

// TestDrawID: a zero ID takes as many big-endian bytes from Rand as it
// holds; a set one is kept, and Rand's error leaves it unchanged.
func TestDrawID(t *testing.T) {
	r := bytes.NewReader([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	var a uint32
	require.NoError(t, DrawID(r, &a))
	require.Equal(t, uint32(0x01020304), a)
	require.NoError(t, DrawID(r, &a))
	require.Equal(t, uint32(0x01020304), a, "already set")
	var b uint64
	require.NoError(t, DrawID(r, &b))
	require.Equal(t, uint64(0x05060708090a0b0c), b)
	var c uint32
	require.True(t, errors.Is(DrawID(r, &c), io.EOF))
	require.Zero(t, c)
	require.NoError(t, DrawID(nil, &c), "crypto/rand")
}
