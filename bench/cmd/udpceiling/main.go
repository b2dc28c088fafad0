// Command udpceiling measures what the kernel's UDP path over loopback
// carries with no transport protocol at all: -pairs socket pairs, each
// with a sender that sends -size-byte datagrams as fast as sendmmsg(2)
// takes them (64 per call) and a receiver that reads them with
// recvmmsg(2) (64 per call), for -d. It prints the bytes received per
// second and the process's CPU time per MB received. Datagrams the
// receiving sockets drop are not counted.
//
// It is the ceiling of any transport over UDP sockets on the machine: a
// rudp stream also acknowledges, seals, orders and copies what it
// carries, so it moves less, at more CPU per byte. Compare it with
// kernel TCP in the many-streams benchmark (go run ./cmd/many -transports
// tcp), on the same machine:
//
//	go run ./cmd/udpceiling [-size 1472] [-pairs 1] [-d 2s]
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
)

// batch is the datagrams of one sendmmsg or recvmmsg call.
const batch = 64

func main() {
	size := flag.Int("size", 1472, "bytes per datagram, 1 to 65507")
	pairs := flag.Int("pairs", 1, "socket pairs, each with a sender and a receiver")
	dur := flag.Duration("d", 2*time.Second, "measurement time")
	flag.Parse()
	if *size < 1 || *size > 65507 || *pairs < 1 {
		log.Fatal("udpceiling: -size must be 1 to 65507 and -pairs at least 1")
	}
	var received atomic.Int64
	stop := make(chan struct{})
	for range *pairs {
		r, s, err := pair()
		if err != nil {
			log.Fatalf("udpceiling: %v", err)
		}
		defer r.Close()
		defer s.Close()
		go receive(r, &received)
		go send(s, *size, stop)
	}
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		log.Fatal(err)
	}
	start, got0 := time.Now(), received.Load()
	time.Sleep(*dur)
	got, elapsed := received.Load()-got0, time.Since(start)
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		log.Fatal(err)
	}
	close(stop)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	mb := float64(got) / 1e6
	fmt.Printf("%d-byte datagrams, %d pairs: %.0f MB/s received, %.2f ms CPU per MB\n",
		*size, *pairs, mb/elapsed.Seconds(), cpu.Seconds()*1e3/mb)
}

// pair returns a receiving socket on 127.0.0.1 and a sending socket
// connected to it, each with 4 MiB of socket buffer.
func pair() (r, s *net.UDPConn, err error) {
	r, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, nil, err
	}
	s, err = net.DialUDP("udp4", nil, r.LocalAddr().(*net.UDPAddr))
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	if err := r.SetReadBuffer(4 << 20); err != nil {
		return nil, nil, err
	}
	return r, s, s.SetWriteBuffer(4 << 20)
}

// receive counts the bytes r receives until it is closed.
func receive(r *net.UDPConn, received *atomic.Int64) {
	pc := ipv4.NewPacketConn(r)
	ms := make([]ipv4.Message, batch)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 65536)}
	}
	for {
		n, err := pc.ReadBatch(ms, 0)
		if err != nil {
			return
		}
		for _, m := range ms[:n] {
			received.Add(int64(m.N))
		}
	}
}

// send sends size-byte datagrams on s until stop is closed or a send
// fails.
func send(s *net.UDPConn, size int, stop <-chan struct{}) {
	pc := ipv4.NewPacketConn(s)
	ms := make([]ipv4.Message, batch)
	b := make([]byte, size)
	for i := range ms {
		ms[i].Buffers = [][]byte{b}
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		if _, err := pc.WriteBatch(ms, 0); err != nil {
			return
		}
	}
}
