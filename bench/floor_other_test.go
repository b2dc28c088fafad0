//go:build !linux

package bench

import "testing"

// floor is the udp-floor sub-benchmark of BenchmarkStream, Linux only:
// elsewhere the kernel has no UDP segmentation offload to measure.
var floor func(*testing.B) pair
