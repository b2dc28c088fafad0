package main

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var rateRE = regexp.MustCompile(`([0-9.]+) ([kMGTP]?)B/s`)

// TestProgressFirstRate: the first rate a bar shows is a mean over at
// least its warm-up, not over the instant after a first burst.
func TestProgressFirstRate(t *testing.T) {
	var out bytes.Buffer
	p := newProgress(&out, "send", true)
	p.warmup = 500 * time.Millisecond // longer than the bar's throttle
	p.start(1 << 30)
	const burst = 10 << 20
	_, _ = p.Write(make([]byte, burst)) // as into an empty send buffer
	for range 2 {
		time.Sleep(p.warmup / 2)
		_, _ = p.Write(make([]byte, 1))
	}

	m := rateRE.FindStringSubmatch(out.String())
	require.NotNil(t, m, "a rate is shown: %q", out.String())
	rate, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	rate *= map[string]float64{"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}[m[2]]
	require.LessOrEqual(t, rate, (burst+2)/p.warmup.Seconds()*1.01, "%s (1 %% for rounding)", m[0])
}
