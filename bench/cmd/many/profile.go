package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// profilePeak samples the heap every 100 ms and keeps the heap profile of
// the largest live heap seen, which the returned function writes to file.
// When the heap has grown by a sixteenth since the last sample that
// counted, it collects garbage (runtime.GC) so that the profile and the
// figure are of live objects only: the measurement is slowed a little
// each time, a few dozen times in a run. Errors end the process through
// die.
func profilePeak(file string, die func(error)) (stop func()) {
	const live = "/memory/classes/heap/objects:bytes"
	sample := []metrics.Sample{{Name: live}}
	var (
		peak, livePeak uint64
		best           bytes.Buffer
	)
	stopSampling := every(100*time.Millisecond, func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v <= peak+peak/16 {
			return
		}
		runtime.GC()
		metrics.Read(sample)
		peak = sample[0].Value.Uint64()
		if peak > livePeak {
			livePeak = peak
			best.Reset()
			if err := pprof.Lookup("heap").WriteTo(&best, 0); err != nil {
				die(err)
			}
		}
	})
	return func() {
		stopSampling()
		fmt.Fprintf(os.Stderr, "many: peak live heap %.1f MiB; heap profile in %s\n", float64(livePeak)/(1<<20), file)
		if err := os.WriteFile(file, best.Bytes(), 0o644); err != nil {
			die(err)
		}
	}
}

// profileCPU starts the CPU profile, which the returned function stops
// and writes to file. Errors end the process through die.
func profileCPU(file string, die func(error)) (stop func()) {
	f, err := os.Create(file)
	if err != nil {
		die(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		die(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			die(err)
		}
	}
}

// every calls f every d in a goroutine of its own until the returned
// function is called, which returns once f has returned for the last time.
func every(d time.Duration, f func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(d)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				f()
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
