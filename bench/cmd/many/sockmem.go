package main

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// sockMem samples the memory that the kernel holds for the TCP and UDP
// sockets of this network namespace (the "mem" pages of the TCP: and UDP:
// lines of /proc/net/sockstat, Linux) every 50 ms, and the returned
// function reports the largest amount seen above the amount at the start,
// in bytes, or -1 where the file cannot be read. It is the buffers that a
// kernel transport such as TCP keeps outside the process's RSS. It counts
// every socket of the namespace: run the command in a namespace of its
// own (unshare -n) for a figure of this process alone.
func sockMem() func() int64 {
	f, err := os.Open("/proc/net/sockstat")
	if err != nil {
		return func() int64 { return -1 }
	}
	buf := make([]byte, 4096)
	base, ok := readSockMem(f, buf)
	if !ok {
		f.Close()
		return func() int64 { return -1 }
	}
	peak := base
	stop := every(50*time.Millisecond, func() {
		if v, ok := readSockMem(f, buf); ok {
			peak = max(peak, v)
		}
	})
	return func() int64 {
		stop()
		f.Close()
		return peak - base
	}
}

// readSockMem returns the sum of the TCP and UDP mem figures of f,
// /proc/net/sockstat read again from its start into buf, in bytes.
func readSockMem(f *os.File, buf []byte) (int64, bool) {
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return 0, false
	}
	var pages int64
	found := false
	for line := range bytes.Lines(buf[:n]) {
		fields := strings.Fields(string(line))
		if len(fields) == 0 || fields[0] != "TCP:" && fields[0] != "UDP:" {
			continue
		}
		for i := 1; i+1 < len(fields); i += 2 {
			if fields[i] == "mem" {
				v, err := strconv.ParseInt(fields[i+1], 10, 64)
				if err != nil {
					return 0, false
				}
				pages += v
				found = true
			}
		}
	}
	return pages * int64(os.Getpagesize()), found
}
