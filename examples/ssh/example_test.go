package ssh_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strings"
	"time"

	"github.com/rudpkit/rudp"
	"golang.org/x/crypto/ssh"
)

// An SSH server and client over a rudp stream: the server authenticates
// the client by its public key, and the client runs the server's "upper"
// command on a session, which returns its standard input in upper case
// with exit status 0.
func Example() {
	hostKey, clientKey := newKey(), newKey()
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
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		_ = serve(c, serverConfig(hostKey, clientKey.PublicKey()))
	}()

	var d rudp.Dialer
	c, err := d.Dial("udp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	sc, chans, reqs, err := ssh.NewClientConn(c, ln.Addr().String(), &ssh.ClientConfig{
		User:            "demo",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(clientKey)},
		HostKeyCallback: ssh.FixedHostKey(hostKey.PublicKey()),
	})
	if err != nil {
		log.Fatal(err)
	}
	client := ssh.NewClient(sc, chans, reqs)
	defer client.Close()
	session, err := client.NewSession()
	if err != nil {
		log.Fatal(err)
	}
	session.Stdin = strings.NewReader("hello over rudp\n")
	out, err := session.Output("upper") // err is nil only for exit status 0
	fmt.Printf("%q %v\n", out, err)
	// Output: "HELLO OVER RUDP\n" <nil>
}

// newKey returns a new ed25519 key as an SSH signer.
func newKey() ssh.Signer {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		log.Fatal(err)
	}
	return signer
}

// serverConfig returns the configuration of a server with host key
// hostKey that accepts any user holding the private key of authorized.
func serverConfig(hostKey ssh.Signer, authorized ssh.PublicKey) *ssh.ServerConfig {
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if !bytes.Equal(key.Marshal(), authorized.Marshal()) {
				return nil, errors.New("unknown public key")
			}
			return &ssh.Permissions{}, nil
		},
	}
	config.AddHostKey(hostKey)
	return config
}

// serve runs an SSH server on c until the client disconnects. It accepts
// only session channels, and runs one command on each.
func serve(c net.Conn, config *ssh.ServerConfig) error {
	sc, chans, reqs, err := ssh.NewServerConn(c, config)
	if err != nil {
		_ = c.Close()
		return err
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			return err
		}
		go session(ch, requests)
	}
	return nil
}

// session answers the first "exec" request of a session channel: command
// "upper" copies standard input to standard output with ASCII letters in
// upper case and exits with status 0 (1 if the copy fails); any other command writes an error
// to standard error and exits with status 127, as a shell does. Other
// requests (pty, env, shell) are refused.
func session(ch ssh.Channel, requests <-chan *ssh.Request) {
	defer ch.Close()
	for req := range requests {
		var exec struct{ Command string }
		if req.Type != "exec" || ssh.Unmarshal(req.Payload, &exec) != nil {
			_ = req.Reply(false, nil)
			continue
		}
		_ = req.Reply(true, nil)
		status := uint32(0)
		if exec.Command == "upper" {
			_, err := io.Copy(ch, upperReader{ch})
			if err != nil {
				status = 1
			}
		} else {
			_, _ = fmt.Fprintf(ch.Stderr(), "%s: command not found\n", exec.Command)
			status = 127
		}
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{status}))
		go ssh.DiscardRequests(requests)
		return
	}
}

// upperReader reads from r with ASCII letters in upper case.
type upperReader struct{ r io.Reader }

func (u upperReader) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	for i, b := range p[:n] {
		if 'a' <= b && b <= 'z' {
			p[i] = b - 'a' + 'A'
		}
	}
	return n, err
}
