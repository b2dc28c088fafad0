package engine

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSendErrorsNameTheOption: the errors Send returns wrap the shared
// sentinels and say which option or limit refused the message.
func TestSendErrorsNameTheOption(t *testing.T) {
	err := TooLarge("lludp", 2000, 1190)
	require.True(t, errors.Is(err, ErrMessageTooLarge))
	require.EqualError(t, err, "message too large: lludp: 2000 bytes, at most 1190")

	for _, c := range []struct {
		opt      SendOptions
		channels int
		numbers  bool
		text     string
	}{
		{SendOptions{Channel: 3}, 1, false, "send option not supported by protocol: p: channel 3 (only channel 0)"},
		{SendOptions{Channel: 4}, 4, false, "send option not supported by protocol: p: channel 4 (channels 0 to 3)"},
		{SendOptions{MessageNumber: 5}, 1, false, "send option not supported by protocol: p: message number 0x5 (LLUDP only)"},
		{SendOptions{Params: Params{Command: 1}}, 1, false, "send option not supported by protocol: p: Avara command and parameters (Avara only)"},
		{SendOptions{Delivery: 9}, 1, false, "send option not supported by protocol: p: delivery 9 unknown"},
	} {
		err := CheckParams("p", c.opt, c.channels, c.numbers)
		require.ErrorIs(t, err, ErrUnsupported)
		require.EqualError(t, err, c.text)
	}
	require.NoError(t, CheckParams("p", SendOptions{Channel: 3, MessageNumber: 5, Delivery: Passive}, 4, true))
}
