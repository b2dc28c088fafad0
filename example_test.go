package rudp_test

import (
	"context"
	"fmt"
	"io"
	"log"

	"github.com/rudpkit/rudp"
)

// A stream echo server and a client, over UDP on the loopback interface.
func Example() {
	ln, err := rudp.Listen("udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c) // echo until the client's CloseWrite
	}()

	c, err := rudp.Dial("udp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello over rudp")); err != nil {
		log.Fatal(err)
	}
	if err := c.(*rudp.Conn).CloseWrite(); err != nil {
		log.Fatal(err)
	}
	reply, err := io.ReadAll(c)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(reply))
	// Output: hello over rudp
}

// Message conns carry the protocol's own messages: here Airhook messages
// of up to 256 bytes, each delivered whole.
func ExampleDialMessages() {
	ln, err := rudp.ListenMessages("udp", "127.0.0.1:0", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()

	c, err := rudp.DialMessages(context.Background(), "udp", ln.Addr().String(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteMessage(rudp.Message{Data: []byte("ping")}); err != nil {
		log.Fatal(err)
	}

	s, err := ln.AcceptMessages()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	m, err := s.ReadMessage()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s (%v)\n", m.Data, m.Delivery)
	// Output: ping (reliable)
}
