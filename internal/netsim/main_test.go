package netsim

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the simulations only without the race detector. Each
// simulation runs its engines and links on one goroutine, in virtual
// time, so the detector has nothing to find in it, while it makes the
// millions of simulated events about 25 times slower (568 s against 24 s
// on a 2-core machine). The README's test command and CI run this package
// again without -race.
func TestMain(m *testing.M) {
	if raceEnabled {
		fmt.Println("internal/netsim: skipped under -race (single-goroutine simulations; run `go test ./internal/netsim`)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}
