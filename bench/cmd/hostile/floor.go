//go:build linux

package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// echoFloor measures the least a Go process can spend answering idle
// peers' probes, as the idle phase's listener does: n UDP sockets in a
// child process each send a 24-byte probe every interval, spread evenly
// over it, and one goroutine answers each probe on one socket, keeping
// no state and batching nothing: with raw recvfrom and sendto (-echo
// raw), or with the net package's calls (-echo net, see echoNet). Its CPU
// per probe and answer is the floor under the idle phase's figure on the
// same machine: what waking for a datagram and sending one on loopback
// cost there. It returns that CPU per probe and answer.
func echoFloor(n int, interval, window time.Duration) time.Duration {
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		log.Fatal(err)
	}
	defer uc.Close()
	var answered atomic.Uint64
	if *echoLoop == "net" {
		go echoNet(uc, &answered)
	} else {
		go echo(uc, &answered)
	}
	ch := startChild("-echoclients", uc.LocalAddr().String(), "-idle", strconv.Itoa(n), "-keepalive", interval.String())
	ch.ready()
	time.Sleep(interval) // every socket has probed once
	a0, cpu0, t0 := answered.Load(), cpuTime(), time.Now()
	time.Sleep(window)
	a, cpu, wall := answered.Load()-a0, cpuTime()-cpu0, time.Since(t0)
	ch.stdin.Close()
	_ = ch.cmd.Wait()
	fmt.Printf("echo floor (%s): %d sockets probing every %v: CPU %.4f s/s over %v (%v per probe and answer, %d answered)\n",
		*echoLoop, n, interval, cpu.Seconds()/wall.Seconds(), window, perDatagram(cpu, a), a)
	return perDatagram(cpu, a)
}

// echo answers every datagram on uc with itself, counting them.
func echo(uc *net.UDPConn, answered *atomic.Uint64) {
	rc, err := uc.SyscallConn()
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 2048)
	var from syscall.RawSockaddrInet4
	var fromLen uint32
	var n uintptr
	recv := func(fd uintptr) bool {
		for {
			fromLen = syscall.SizeofSockaddrInet4
			r, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0,
				uintptr(unsafe.Pointer(&from)), uintptr(unsafe.Pointer(&fromLen)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			case 0:
				n = r
			default:
				n = 0
			}
			return true
		}
	}
	send := func(fd uintptr) bool {
		_, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&buf[0])), n, 0,
			uintptr(unsafe.Pointer(&from)), uintptr(fromLen))
		return e != syscall.EAGAIN
	}
	for {
		if rc.Read(recv) != nil {
			return
		}
		if n > 0 && rc.Write(send) == nil {
			answered.Add(1)
		}
	}
}

// echoNet answers every datagram on uc with itself, counting them, as a
// Go server would write the loop: ReadFromUDPAddrPort and
// WriteToUDPAddrPort, through the runtime's poller, allocating nothing.
func echoNet(uc *net.UDPConn, answered *atomic.Uint64) {
	buf := make([]byte, 2048)
	for {
		n, from, err := uc.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		if _, err := uc.WriteToUDPAddrPort(buf[:n], from); err == nil {
			answered.Add(1)
		}
	}
}

// runEchoClients is echoFloor's client process: n connected sockets,
// each sending a probe every interval, in turn, evenly spread, and
// reading the answers, until its standard input ends.
func runEchoClients(addr string, n int, interval time.Duration) {
	raddr, err := net.ResolveUDPAddr("udp4", addr)
	if err != nil {
		log.Fatal(err)
	}
	conns := make([]*net.UDPConn, n)
	for i := range conns {
		if conns[i], err = net.DialUDP("udp4", nil, raddr); err != nil {
			log.Fatal(err)
		}
		go func(c *net.UDPConn) { _, _ = io.Copy(io.Discard, c) }(conns[i])
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fmt.Println("ready")
	probe := make([]byte, 24)
	step, next := interval/time.Duration(n), time.Now()
	for {
		for _, c := range conns {
			_, _ = c.Write(probe)
			next = next.Add(step)
			time.Sleep(time.Until(next))
		}
	}
}
