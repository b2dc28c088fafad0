//go:build !race

package socket

// raceEnabled reports a build with the race detector, whose sync.Pool
// drops items at random: allocation counts mean nothing there.
const raceEnabled = false
