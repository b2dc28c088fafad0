package main

import (
	"cmp"
	"io"

	"github.com/rudpkit/rudp"
)

// listen runs "rudpcat listen ADDR".
func (c *cli) listen(o *options, args []string) error {
	l, err := listenAddr(args[0], o)
	if err != nil {
		return err
	}
	conn, err := c.accept(l, o)
	if err != nil {
		return err
	}
	return c.pipe(conn)
}

// dial runs "rudpcat dial ADDR".
func (c *cli) dial(o *options, args []string) error {
	conn, err := c.dialAddr(args[0], o)
	if err != nil {
		return err
	}
	return c.pipe(conn)
}

// pipe copies conn to stdout and stdin to conn, half-closing conn when
// stdin ends, until the peer has finished too (like nc -N). It then closes
// conn and waits for the close to complete. A failure of either direction
// ends it at once; c.ctx's end resets the stream.
func (c *cli) pipe(conn *rudp.Conn) error {
	defer closeAndWait(conn)
	defer abortOn(c.ctx, conn)()
	sent := make(chan error, 1)
	go func() {
		if _, err := io.Copy(conn, c.stdin); err != nil {
			sent <- err      // first, so that the reading side finds it
			_ = conn.Close() // unblocks the reading side
			return
		}
		sent <- conn.CloseWrite()
	}()
	if _, err := io.Copy(c.stdout, conn); err != nil {
		select {
		case serr := <-sent:
			return cmp.Or(serr, err) // stdin's failure is the cause
		default:
			return err
		}
	}
	return <-sent
}
