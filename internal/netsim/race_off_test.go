//go:build !race

package netsim

// raceEnabled reports a build with the race detector.
const raceEnabled = false
