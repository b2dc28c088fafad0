package socket

import (
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// holdsBuffers reports whether r has a buffer set, or its headers still
// point into one (which would keep it from the garbage collector).
func holdsBuffers(r *batchReader) bool {
	if r.set != nil {
		return true
	}
	for i := range r.hs {
		if r.iovs[i].Base != nil || r.hs[i].hdr.Control != nil {
			return true
		}
	}
	return false
}

// watchEmpty wraps r's read function: after each attempt that finds the
// socket empty, it sends on the returned channel whether r still holds
// buffers (dropping the report if the channel is full).
func watchEmpty(r *batchReader) <-chan bool {
	empty := make(chan bool, 64)
	inner := r.recv
	r.recv = func(fd uintptr) bool {
		ready := inner(fd)
		if !ready {
			select {
			case empty <- holdsBuffers(r):
			default:
			}
		}
		return ready
	}
	return empty
}

// TestBatchReaderIdleHoldsNoBuffers: a batch reader holds its buffers
// while the caller holds the messages of its last read, and none once a
// read attempt finds the socket empty and waits for it; the datagram that
// wakes it reads whole.
func TestBatchReaderIdleHoldsNoBuffers(t *testing.T) {
	rx := udpSocket(t)
	defer rx.Close()
	tx := udpSocket(t)
	defer tx.Close()
	r := newBatchReader(rx.(*net.UDPConn), readBatch, MaxDatagram+1, nil, MaxDatagram).(*batchReader)
	empty := watchEmpty(r)
	require.NoError(t, rx.SetReadDeadline(time.Now().Add(ioBound)))

	const burst = 5
	for i := range burst {
		_, err := tx.WriteTo([]byte{byte(i), 7, 8, 9}, rx.LocalAddr())
		require.NoError(t, err)
	}
	for got := 0; got < burst; {
		ms, err := r.Read()
		require.NoError(t, err)
		require.True(t, holdsBuffers(r), "the reader gave back the buffers of the messages it returned")
		for i := range ms {
			require.Equal(t, []byte{byte(got), 7, 8, 9}, ms[i].Data())
			got++
		}
	}
	// Reports from the burst (an attempt before a datagram had arrived).
	for drained := false; !drained; {
		select {
		case held := <-empty:
			require.False(t, held, "buffers held while waiting for the socket")
		default:
			drained = true
		}
	}

	type result struct {
		data []byte
		err  error
	}
	read := make(chan result, 1)
	go func() {
		ms, err := r.Read()
		if err != nil {
			read <- result{err: err}
			return
		}
		var data []byte
		for i := range ms {
			data = append(data, ms[i].Data()...)
		}
		read <- result{data: data}
	}()
	// The socket is empty: the read finds nothing and waits.
	select {
	case held := <-empty:
		require.False(t, held, "buffers held while waiting for the socket")
	case <-time.After(ioBound):
		t.Fatalf("no read attempt within %v", ioBound)
	}
	_, err := tx.WriteTo([]byte("wake"), rx.LocalAddr())
	require.NoError(t, err)
	res := <-read
	require.NoError(t, res.err)
	require.Equal(t, []byte("wake"), res.data)
	require.True(t, holdsBuffers(r))
}

// TestBatchReaderKeepsLastRead: the messages of a read stay intact while
// another reader of the same shape, sharing the pool, reads.
func TestBatchReaderKeepsLastRead(t *testing.T) {
	tx := udpSocket(t)
	defer tx.Close()
	var rs [2]*batchReader
	for k := range rs {
		rx := udpSocket(t)
		defer rx.Close()
		require.NoError(t, rx.SetReadDeadline(time.Now().Add(ioBound)))
		rs[k] = newBatchReader(rx.(*net.UDPConn), readBatch, MaxDatagram+1, nil, MaxDatagram).(*batchReader)
		_, err := tx.WriteTo([]byte(fmt.Sprint("to reader ", k)), rx.LocalAddr())
		require.NoError(t, err)
	}
	a, err := rs[0].Read()
	require.NoError(t, err)
	require.Len(t, a, 1)
	b, err := rs[1].Read()
	require.NoError(t, err)
	require.Len(t, b, 1)
	require.Equal(t, "to reader 0", string(a[0].Data()))
	require.Equal(t, "to reader 1", string(b[0].Data()))
}

// poolDatagram returns datagram i of round of socket k: a header naming
// it, then bytes that depend on all three, 5 to 1,204 bytes long.
func poolDatagram(k, round, i int) []byte {
	seed := k*7919 + round*104729 + i*31
	b := make([]byte, 5+seed%1200)
	b[0] = byte(k)
	binary.BigEndian.PutUint16(b[1:], uint16(round))
	binary.BigEndian.PutUint16(b[3:], uint16(i))
	for j := 5; j < len(b); j++ {
		b[j] = byte(seed + j*13)
	}
	return b
}

// poolBurst is how many datagrams socket k gets in round: 1 to 24, more
// than one batch of the smaller readers.
func poolBurst(k, round int) int { return 1 + (k*5+round*11)%24 }

// TestBatchReaderPoolExact: several batch readers, most of one shape
// and so sharing its pool, read bursts separated by idle waits (each
// gives its buffers back and takes a set again, perhaps another's): every
// datagram reads whole and exact, and the messages of a read stay intact
// until the reader's next read, while the others read.
func TestBatchReaderPoolExact(t *testing.T) {
	const rounds = 40
	shapes := []int{readBatch, readBatch, readBatch, 4} // batch sizes
	tx := udpSocket(t)
	defer tx.Close()
	rxs := make([]net.PacketConn, len(shapes))
	errs := make(chan error, len(shapes))
	done := make(chan int, len(shapes))
	for k, n := range shapes {
		rx := udpSocket(t)
		defer rx.Close()
		require.NoError(t, rx.SetReadDeadline(time.Now().Add(ioBound)))
		rxs[k] = rx
		r := newBatchReader(rx.(*net.UDPConn), n, MaxDatagram+1, nil, MaxDatagram).(*batchReader)
		go func() {
			if err := readRounds(r, k, rounds, done); err != nil {
				errs <- err
			}
		}()
	}
	for round := range rounds {
		for k, rx := range rxs {
			for i := range poolBurst(k, round) {
				_, err := tx.WriteTo(poolDatagram(k, round, i), rx.LocalAddr())
				require.NoError(t, err)
			}
		}
		for range rxs {
			select {
			case <-done:
			case err := <-errs:
				t.Fatal(err)
			}
		}
	}
}

// readRounds reads the rounds of datagrams of socket k with r, checks
// each, and sends on done after each round's last.
func readRounds(r *batchReader, k, rounds int, done chan<- int) error {
	var last []Received // the messages of the last read
	check := func(m *Received) (round, i int, err error) {
		d := m.Data()
		if len(d) < 5 || int(d[0]) != k {
			return 0, 0, fmt.Errorf("socket %d: datagram %x", k, d[:min(len(d), 5)])
		}
		round, i = int(binary.BigEndian.Uint16(d[1:])), int(binary.BigEndian.Uint16(d[3:]))
		if want := poolDatagram(k, round, i); string(d) != string(want) {
			return 0, 0, fmt.Errorf("socket %d, round %d, datagram %d: %d bytes differ from the %d sent", k, round, i, len(d), len(want))
		}
		return round, i, nil
	}
	for round := range rounds {
		seen := make([]bool, poolBurst(k, round))
		for got := 0; got < len(seen); {
			for i := range last {
				if _, _, err := check(&last[i]); err != nil {
					return fmt.Errorf("before the next read: %w", err)
				}
			}
			ms, err := r.Read()
			if err != nil {
				return err
			}
			for j := range ms {
				rd, i, err := check(&ms[j])
				if err != nil {
					return err
				}
				if rd != round || i >= len(seen) || seen[i] {
					return fmt.Errorf("socket %d: datagram %d of round %d in round %d", k, i, rd, round)
				}
				seen[i] = true
				got++
			}
			last = ms
		}
		done <- k
	}
	return nil
}

// TestBatchReaderAllocs: reading a datagram allocates nothing, whether
// the read finds it at once or finds the socket empty, gives its buffers
// back and waits for it.
func TestBatchReaderAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not counted under the race detector")
	}
	rx := udpSocket(t)
	defer rx.Close()
	require.NoError(t, rx.SetReadDeadline(time.Now().Add(ioBound)))
	tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	defer tx.Close()
	r := newBatchReader(rx.(*net.UDPConn), readBatch, MaxDatagram+1, nil, MaxDatagram).(*batchReader)
	empty := watchEmpty(r)

	send, sent := make(chan struct{}, 1), make(chan error, 1)
	go func() {
		for range send {
			_, err := tx.Write([]byte("ping"))
			sent <- err
		}
	}()
	defer close(send)
	allocs := testing.AllocsPerRun(20, func() {
		send <- struct{}{}
		ms, err := r.Read()
		if err != nil || len(ms) != 1 || string(ms[0].Data()) != "ping" {
			t.Fatalf("read %d messages, %v", len(ms), err)
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
	require.NotEmpty(t, empty, "no read found the socket empty")
	for len(empty) > 0 {
		require.False(t, <-empty, "buffers held while waiting for the socket")
	}
}
