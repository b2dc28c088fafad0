package congestion

import (
	"math"
	"math/bits"
	"time"
)

// mulDiv returns a·b/c rounded down, saturating at math.MaxUint64 instead
// of overflowing. c must not be 0.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, c)
	return q
}

// bytesIn returns how many bytes rate (bytes per second) moves in d.
func bytesIn(rate uint64, d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	return mulDiv(rate, uint64(d), uint64(time.Second))
}

// rateOf returns n bytes per d as bytes per second; d must be positive.
func rateOf(n uint64, d time.Duration) uint64 {
	return mulDiv(n, uint64(time.Second), uint64(d))
}

// gain multiplies v by g/gainUnit, saturating.
func gain(v uint64, g uint64) uint64 { return mulDiv(v, g, gainUnit) }

// gainUnit is the fixed-point unit of gains: a gain of 1 is gainUnit.
const gainUnit = 1000

// clampInt returns v clamped to [lo, hi] as an int; hi must be ≥ lo.
func clampInt(v uint64, lo, hi int) int {
	if v < uint64(lo) {
		return lo
	}
	if v > uint64(hi) {
		return hi
	}
	return int(v)
}

// median3 returns the median of three values.
func median3(v [3]uint64) uint64 {
	return max(min(v[0], v[1]), min(max(v[0], v[1]), v[2]))
}
