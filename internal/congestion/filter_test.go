package congestion

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMaxFilter: the windowed maximum keeps the largest sample of the
// last window ticks and forgets it once it is older than that
// (draft-ietf-ccwg-bbr-02 §5.5.5).
func TestMaxFilter(t *testing.T) {
	var f maxFilter
	require.Equal(t, uint64(100), f.update(100, 0, 10))
	require.Equal(t, uint64(100), f.update(50, 1, 10), "smaller samples do not lower the maximum")
	require.Equal(t, uint64(100), f.update(60, 5, 10))
	require.Equal(t, uint64(100), f.update(70, 10, 10), "still within the window at tick 10")
	require.Equal(t, uint64(70), f.update(40, 11, 10), "tick 0 left the window: the best of the rest")
	require.Equal(t, uint64(200), f.update(200, 12, 10), "a new maximum replaces everything")
	require.Equal(t, uint64(30), f.update(30, 40, 10), "after a whole window without samples, the new one")
}
