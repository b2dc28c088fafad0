//go:build race

package porous

// raceEnabled reports a build with the race detector, whose sync.Pool
// drops items at random: allocation counts mean nothing there.
const raceEnabled = true
