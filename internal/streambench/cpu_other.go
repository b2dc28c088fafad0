//go:build !unix

package streambench

import "time"

// cpuTime is the CPU time the process has used so far; ok is false where
// it cannot be read, as here.
func cpuTime() (d time.Duration, ok bool) { return 0, false }
