package rudp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"

	"github.com/rudpkit/rudp"
)

// Three peers, each one Transport on one UDP socket that listens for
// streams; the third also dials the other two from the socket it listens
// on, as peer-to-peer programs do (with addresses learnt from a
// rendezvous when behind NATs). One conn per pair of addresses: a peer
// that dialed another and the one it dialed share one conn.
func ExampleTransport() {
	peer := func() *rudp.Transport {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			log.Fatal(err)
		}
		return &rudp.Transport{Conn: pc}
	}
	a, b, c := peer(), peer(), peer()
	defer a.Close()
	defer b.Close()
	defer c.Close()
	for _, t := range []*rudp.Transport{a, b, c} {
		ln, err := t.Listen()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.AcceptContext(context.Background())
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					_, _ = io.Copy(c, c) // echo
				}()
			}
		}()
	}

	ctx := context.Background()
	for i, to := range []*rudp.Transport{a, b} {
		conn, err := c.Dial(ctx, to.Addr())
		if err != nil {
			log.Fatal(err)
		}
		if _, err := fmt.Fprintf(conn, "hello, peer %d", i+1); err != nil {
			log.Fatal(err)
		}
		if err := conn.CloseWrite(); err != nil {
			log.Fatal(err)
		}
		reply, err := io.ReadAll(conn)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(reply))
		conn.Close()
	}
	// Output:
	// hello, peer 1
	// hello, peer 2
}
