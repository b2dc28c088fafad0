package enginetest

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// LoadJSON decodes the JSON file at path, a test's vectors under testdata,
// into a new T; t fails if the file is missing or does not decode.
func LoadJSON[T any](t testing.TB, path string) *T {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	v := new(T)
	require.NoError(t, json.Unmarshal(b, v))
	return v
}

// Unhex decodes the hexadecimal string s; t fails if it is not one.
func Unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// ParseUint parses s as an unsigned integer of at most bits bits in base
// (0: by its prefix), as strconv.ParseUint does; t fails if it is not one.
func ParseUint(t testing.TB, s string, base, bits int) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, base, bits)
	require.NoError(t, err)
	return v
}
