package rudp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"

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

// net/http over rudp streams: an http.Server serves on a rudp Listener,
// and an http.Client dials through a rudp Dialer. The Transport passes
// "tcp" to DialContext, which rudp takes as "udp".
func Example_http() {
	ln, err := rudp.Listen("udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello over rudp, %s %s", r.Method, r.URL.Path)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	client := &http.Client{Transport: &http.Transport{DialContext: (&rudp.Dialer{}).DialContext}}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://" + ln.Addr().String() + "/greeting")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Status)
	fmt.Println(string(body))
	// Output:
	// 200 OK
	// hello over rudp, GET /greeting
}

// Message conns carry the protocol's own messages: here POROUS messages
// (the default protocol) on its single default channel, each delivered
// whole.
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

// POROUS channels: reliable messages on channel 0 arrive in order, while
// channel 1 carries unreliable updates that never wait for lost ones.
func ExampleMessageConn_channels() {
	cfg := &rudp.Config{Protocol: rudp.POROUS, Channels: 2}
	ln, err := rudp.ListenMessages("udp", "127.0.0.1:0", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	c, err := rudp.DialMessages(context.Background(), "udp", ln.Addr().String(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteMessage(rudp.Message{Data: []byte("chat: hi"), Channel: 0}); err != nil {
		log.Fatal(err)
	}
	if err := c.WriteMessage(rudp.Message{Data: []byte("pos 1,2"), Channel: 1, Delivery: rudp.Unreliable}); err != nil {
		log.Fatal(err)
	}

	s, err := ln.AcceptMessages()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	got := make([]string, 2)
	for range 2 {
		m, err := s.ReadMessage()
		if err != nil {
			log.Fatal(err)
		}
		got[m.Channel] = string(m.Data)
	}
	fmt.Println(got[0], "|", got[1])
	// Output: chat: hi | pos 1,2
}

// LLUDP message conns exchange Second Life messages: a message number and
// a body. The dialing end opens the circuit with its UseCircuitCode.
func ExampleMessageConn_lludp() {
	ln, err := rudp.ListenMessages("udp", "127.0.0.1:0", &rudp.Config{Protocol: rudp.LLUDP})
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	cfg := &rudp.Config{Protocol: rudp.LLUDP, Circuit: rudp.Circuit{Code: 1234}}
	c, err := rudp.DialMessages(context.Background(), "udp", ln.Addr().String(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Low 1, TestMessage: its zeros are zerocoded on the wire.
	if err := c.WriteMessage(rudp.Message{Number: 0xFFFF0001, Data: []byte{7, 0, 0, 0}}); err != nil {
		log.Fatal(err)
	}

	s, err := ln.AcceptMessages()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	circuit, _ := s.Circuit()
	m, err := s.ReadMessage()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("circuit %d: message %#x % x (%v)\n", circuit.Code, m.Number, m.Data, m.Delivery)
	// Output: circuit 1234: message 0xffff0001 07 00 00 00 (reliable)
}

// Avara message conns exchange the game's messages: a command with its
// parameters and data. The dialing end logs in with the password; the
// listener is the server and gives each client a player id.
func ExampleMessageConn_avara() {
	cfg := &rudp.Config{Protocol: rudp.Avara, AvaraPassword: "secret"}
	ln, err := rudp.ListenMessages("udp", "127.0.0.1:0", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	c, err := rudp.DialMessages(context.Background(), "udp", ln.Addr().String(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Command 31, a ping, with p3 the trips left.
	if err := c.WriteMessage(rudp.Message{Command: 31, P3: 2}); err != nil {
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
	fmt.Printf("player %d: command %d p3 %d; table %d player(s)\n", s.AvaraClientID(), m.Command, m.P3, len(c.AvaraPeers()))
	// Output: player 1: command 31 p3 2; table 1 player(s)
}

// A server for many peers: on Linux the listener reads four sockets bound
// to one port (a SO_REUSEPORT group), each with a goroutine and a kernel
// buffer of its own; the kernel keeps every peer on one of them. Each
// accepted stream is served by a goroutine, as with net.Listen.
func ExampleListenConfig() {
	lc := rudp.ListenConfig{Sockets: 4}
	ln, err := lc.ListenStreams(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()

	for i := range 3 {
		c, err := rudp.Dial("udp", ln.Addr().String())
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(c, "peer %d", i)
		_ = c.(*rudp.Conn).CloseWrite()
		reply, err := io.ReadAll(c)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(reply))
		c.Close()
	}
	// Output:
	// peer 0
	// peer 1
	// peer 2
}
