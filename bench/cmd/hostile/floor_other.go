//go:build !linux

package main

import (
	"log"
	"time"
)

// The floor phase uses Linux's system call numbers.

func echoFloor(int, time.Duration, time.Duration) time.Duration {
	log.Fatal("the floor phase runs on Linux only")
	return 0
}

func runEchoClients(string, int, time.Duration) { log.Fatal("the floor phase runs on Linux only") }
