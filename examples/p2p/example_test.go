package p2p_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/rudpkit/rudp"
)

// Two peers meet at a rendezvous server and open a stream to each other
// from the sockets they reached it from, each sending a greeting and
// printing the other's. On 127.0.0.1 there is no NAT in between; the
// tests run the same code behind two NATs.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rv := &rudp.Transport{Conn: listenUDP()}
	defer rv.Close()
	go func() { _ = serveRendezvous(rv) }()

	names := []string{"alice", "bob"}
	got := make([]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			tr := &rudp.Transport{Conn: listenUDP()}
			defer tr.Close()
			c, err := meet(ctx, tr, rv.Addr(), "room 1")
			if err != nil {
				errs[i] = err
				return
			}
			in, err := exchange(c, []byte("hello from "+name), 1<<10)
			got[i], errs[i] = string(in), err
		})
	}
	wg.Wait()
	for i, name := range names {
		if errs[i] != nil {
			log.Fatal(errs[i])
		}
		fmt.Printf("%s received %q\n", name, got[i])
	}
	// Output:
	// alice received "hello from bob"
	// bob received "hello from alice"
}

// listenUDP returns a UDP socket on a free port of 127.0.0.1.
func listenUDP() net.PacketConn {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	return pc
}

const (
	// maxLine is the longest line the rendezvous and the peers exchange,
	// newline included: a room name or an address.
	maxLine = 256
	// maxWaiting is how many peers the rendezvous keeps waiting for the
	// other peer of their room; it refuses more.
	maxWaiting = 1024
	// nameTimeout is how long the rendezvous waits for a peer's room name.
	nameTimeout = 10 * time.Second
)

// serveRendezvous introduces peers to each other on tr, until tr is
// closed: each peer dials it with a stream and sends a room name on a
// line; once two peers have sent the same name, each is sent the other's
// address (as tr saw it: behind a NAT, the NAT's public mapping) on a
// line, and both streams close. A peer that leaves before another joins
// its room is still introduced to the next one.
func serveRendezvous(tr *rudp.Transport) error {
	ln, err := tr.Listen()
	if err != nil {
		return err
	}
	var (
		mu      sync.Mutex
		waiting = make(map[string]*rudp.Conn) // by room name
		wg      sync.WaitGroup
	)
	defer wg.Wait()
	for {
		c, err := ln.AcceptContext(context.Background())
		if err != nil {
			return err
		}
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(nameTimeout))
			room, err := readLine(c)
			if err != nil {
				_ = c.Close()
				return
			}
			mu.Lock()
			other, ok := waiting[room]
			full := false
			switch {
			case ok:
				delete(waiting, room)
			case len(waiting) < maxWaiting:
				waiting[room] = c
			default:
				full = true
			}
			mu.Unlock()
			if full {
				_ = c.Close()
			}
			if !ok {
				return
			}
			for _, p := range [][2]*rudp.Conn{{c, other}, {other, c}} {
				_, _ = fmt.Fprintf(p[0], "%s\n", p[1].RemoteAddr())
				_ = p[0].Close()
			}
		})
	}
}

// meet joins room at the rendezvous at rv and returns a stream to the
// other peer in the room, dialed from tr while that peer dials this end:
// tr is the socket both the rendezvous and the peer see, so the address
// the rendezvous saw is the one the peer reaches, and this end's dial
// opens its NAT to the peer's. The stream's deadline is ctx's.
func meet(ctx context.Context, tr *rudp.Transport, rv net.Addr, room string) (*rudp.Conn, error) {
	if len(room) >= maxLine || strings.Contains(room, "\n") {
		return nil, fmt.Errorf("room name %q: longer than %d bytes or has a newline", room, maxLine-1)
	}
	c, err := dialDeadline(ctx, tr, rv)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(c, "%s\n", room)
	var line string
	if err == nil {
		line, err = readLine(c)
	}
	_ = c.Close()
	if err != nil {
		return nil, fmt.Errorf("rendezvous %v: %w", rv, err)
	}
	peer, err := net.ResolveUDPAddr("udp", line)
	if err != nil {
		return nil, err
	}
	return dialDeadline(ctx, tr, peer)
}

// dialDeadline dials a stream to raddr from tr, with ctx's deadline.
func dialDeadline(ctx context.Context, tr *rudp.Transport, raddr net.Addr) (*rudp.Conn, error) {
	c, err := tr.Dial(ctx, raddr)
	if err != nil {
		return nil, err
	}
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	return c, nil
}

// readLine reads one line of at most maxLine bytes from r, and returns it
// without its newline.
func readLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, maxLine)).ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// exchange sends out on c and ends its sending side while it reads what
// the peer sends, up to limit bytes, until the peer ends its own; then it
// closes c.
func exchange(c *rudp.Conn, out []byte, limit int64) ([]byte, error) {
	sent := make(chan error, 1)
	go func() {
		_, err := c.Write(out)
		if err == nil {
			err = c.CloseWrite()
		}
		sent <- err
	}()
	in, err := io.ReadAll(io.LimitReader(c, limit+1))
	if err == nil && int64(len(in)) > limit {
		err = fmt.Errorf("the peer sent more than %d bytes", limit)
	}
	return in, errors.Join(err, <-sent, c.Close())
}
