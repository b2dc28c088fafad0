package ssh_test

import (
	"bytes"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/pion/transport/v3/test"
	"github.com/rudpkit/rudp"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// connTimeout is the deadline of every conn in these tests, so that a
// stall fails the test instead of hanging it.
const connTimeout = 30 * time.Second

// startServer serves one SSH connection on a new rudp listener on the
// loopback interface. serve's result arrives on the returned channel.
func startServer(t *testing.T, hostKey ssh.Signer, authorized ssh.PublicKey) (net.Addr, <-chan error) {
	t.Helper()
	ln, err := rudp.Listen("udp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		_ = c.SetDeadline(time.Now().Add(connTimeout))
		done <- serve(c, serverConfig(hostKey, authorized))
	}()
	return ln.Addr(), done
}

// connect opens an SSH client connection to addr over a rudp stream,
// authenticating with clientKey and accepting only host key hostKey.
func connect(t *testing.T, addr net.Addr, clientKey ssh.Signer, hostKey ssh.PublicKey) (*ssh.Client, error) {
	t.Helper()
	var d rudp.Dialer
	c, err := d.Dial("udp", addr.String())
	require.NoError(t, err)
	_ = c.SetDeadline(time.Now().Add(connTimeout))
	sc, chans, reqs, err := ssh.NewClientConn(c, addr.String(), &ssh.ClientConfig{
		User:            "demo",
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(clientKey)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
	})
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return ssh.NewClient(sc, chans, reqs), nil
}

// TestSessions: on one SSH connection, "upper" returns 1 MiB of standard
// input in upper case, byte for byte, with exit status 0; an unknown
// command returns its error on standard error and exit status 127. The
// server ends cleanly when the client closes, and no goroutine is left.
func TestSessions(t *testing.T) {
	defer test.CheckRoutines(t)()
	hostKey, clientKey := newKey(), newKey()
	addr, done := startServer(t, hostKey, clientKey.PublicKey())
	client, err := connect(t, addr, clientKey, hostKey.PublicKey())
	require.NoError(t, err)

	in := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range in {
		in[i] = "abcdefghijklmnopqrstuvwxyz0123456789 \n"[rng.IntN(38)]
	}
	session, err := client.NewSession()
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	session.Stdin, session.Stdout, session.Stderr = bytes.NewReader(in), &stdout, &stderr
	require.NoError(t, session.Run("upper")) // nil: exit status 0
	require.True(t, bytes.Equal(bytes.ToUpper(in), stdout.Bytes()), "upper: %d bytes out, want %d", stdout.Len(), len(in))
	require.Empty(t, stderr.String())

	session, err = client.NewSession()
	require.NoError(t, err)
	stdout.Reset()
	session.Stdout, session.Stderr = &stdout, &stderr
	err = session.Run("ls -l")
	var exit *ssh.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 127, exit.ExitStatus())
	require.Empty(t, stdout.String())
	require.Equal(t, "ls -l: command not found\n", stderr.String())

	require.NoError(t, client.Close())
	require.NoError(t, <-done)
}

// TestUnknownKeyRefused: a client whose key the server does not know
// fails to authenticate, and both ends report it.
func TestUnknownKeyRefused(t *testing.T) {
	defer test.CheckRoutines(t)()
	hostKey, clientKey := newKey(), newKey()
	addr, done := startServer(t, hostKey, newKey().PublicKey())
	_, err := connect(t, addr, clientKey, hostKey.PublicKey())
	require.ErrorContains(t, err, "ssh: unable to authenticate")
	var authErr *ssh.ServerAuthError
	require.ErrorAs(t, <-done, &authErr)
}
