package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rudpkit/rudp"
	"github.com/rudpkit/rudp/qlog"
	"github.com/rudpkit/rudp/trace"
)

// demoTimeout bounds each demo transfer, so that the demo cannot hang.
const demoTimeout = 10 * time.Minute

// demoRow is the outcome of one demo transfer.
type demoRow struct {
	protocol rudp.Protocol
	path     demoPath
	size     int64
	sent     result // the sender's account
	err      error  // nil: the receiver got every byte and both digests match
}

// demo runs "rudpcat demo".
func (c *cli) demo(o *options, _ []string) error {
	rows := runDemo(c.ctx, o, c.stderr)
	if c.ctx.Err() != nil {
		return errInterrupted
	}
	printTable(c.stdout, rows)
	failed := 0
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(c.stderr, "rudpcat demo: %v, %v: %v\n", r.protocol, r.path, r.err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d transfers failed", failed, len(rows))
	}
	return nil
}

// runDemo runs one transfer for each protocol (or the one --protocol
// names) and each loss rate, drawing a progress bar for each on w, until
// ctx ends.
func runDemo(ctx context.Context, o *options, w io.Writer) []demoRow {
	protocols := rudp.Protocols()
	if o.protocol != 0 {
		protocols = []rudp.Protocol{o.protocol}
	}
	var rows []demoRow
	for _, p := range protocols {
		for _, path := range o.paths {
			if ctx.Err() != nil {
				return rows
			}
			bar := newProgress(w, fmt.Sprintf("%v %v", p, path), showProgress(w, o))
			rows = append(rows, demoTransfer(ctx, o, p, path, bar))
			bar.done()
		}
	}
	return rows
}

// demoTransfer sends o.size pseudo-random bytes from a dialer to a
// listener in this process, over two UDP sockets on 127.0.0.1 that both
// lose the fraction path.loss of the datagrams they send and delay them
// by path.delay, and checks that the receiver got the same bytes. The
// end of ctx resets both streams.
func demoTransfer(ctx context.Context, o *options, p rudp.Protocol, path demoPath, progress *progressBar) demoRow {
	row := demoRow{protocol: p, path: path, size: o.size}
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	cfg := o.config()
	cfg.Protocol = p
	var traceFile string // the sender's qlog trace, with --plot
	if o.plotDir != "" {
		traceFile = filepath.Join(o.plotDir, demoName(p, path)+".sqlog")
		cfg.Tracer = senderTracer(traceFile)
	}

	l, err := listenStream("127.0.0.1:0", cfg, o.impairment(path.loss, path.delay, o.seed+1))
	if err != nil {
		row.err = err
		return row
	}
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()
	type outcome struct {
		r   result
		err error
	}
	received := make(chan outcome, 1)
	go func() {
		r, err := demoReceive(ctx, l, deadline)
		received <- outcome{r, err}
	}()

	sent, err := demoSend(ctx, l.Addr().(*net.UDPAddr), cfg, o, path, progress)
	if err != nil {
		_ = l.Close() // in case the dialer never reached it
	}
	got := <-received
	row.sent = sent
	switch {
	case err != nil:
		row.err = fmt.Errorf("sender: %w", err)
	case got.err != nil:
		row.err = fmt.Errorf("receiver: %w", got.err)
	case got.r.bytes != o.size || sent.bytes != o.size:
		row.err = fmt.Errorf("sent %d bytes, received %d, want %d", sent.bytes, got.r.bytes, o.size)
	case got.r.sum != sent.sum:
		row.err = errors.New("SHA-256 mismatch")
	}
	if traceFile != "" && row.err == nil {
		png := strings.TrimSuffix(traceFile, ".sqlog") + ".png"
		if err := runPlot([]string{"-o", png, traceFile}, io.Discard); err != nil {
			row.err = fmt.Errorf("plot: %w", err)
		}
	}
	return row
}

// demoName names the files of a transfer over path with p, as
// "porous-loss0.02_20msRTT".
func demoName(p rudp.Protocol, path demoPath) string {
	return p.String() + "-" + strings.NewReplacer(" ", "", ",", "_").Replace(path.String())
}

// senderTracer returns a Config.Tracer that writes the dialing conn's
// qlog trace to the file name (replacing it) and traces no other conn.
func senderTracer(name string) func(trace.ConnInfo) *trace.ConnTracer {
	return func(info trace.ConnInfo) *trace.ConnTracer {
		if !info.Client {
			return nil
		}
		f, err := os.Create(name)
		if err != nil {
			return nil
		}
		return qlog.NewConnTracer(f, info)
	}
}

// demoSend dials addr and sends o.size bytes of a seeded pseudo-random
// stream, generated as it goes.
func demoSend(ctx context.Context, addr *net.UDPAddr, cfg *rudp.Config, o *options, path demoPath, progress *progressBar) (result, error) {
	conn, err := dialStream(ctx, addr, cfg, o.impairment(path.loss, path.delay, o.seed))
	if err != nil {
		return result{}, err
	}
	defer closeAndWait(conn)
	defer abortOn(ctx, conn)()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], o.seed)
	data := io.LimitReader(rand.NewChaCha8(seed), o.size)
	return sendStream(conn, data, o.size, progress)
}

// demoReceive accepts one conn from l, reads it to the end and confirms
// the digest.
func demoReceive(ctx context.Context, l *rudp.Listener, deadline time.Time) (result, error) {
	conn, err := acceptOne(l)
	if err != nil {
		return result{}, err
	}
	defer closeAndWait(conn)
	defer abortOn(ctx, conn)()
	_ = conn.SetDeadline(deadline)
	r, err := receive(conn, io.Discard, newProgress(io.Discard, "", false))
	if err != nil {
		return r, err
	}
	return r, confirm(conn, r.sum)
}

// String describes the path as the demo's messages name it.
func (p demoPath) String() string {
	if p.delay > 0 {
		return fmt.Sprintf("loss %g, %v RTT", p.loss, 2*p.delay)
	}
	return fmt.Sprintf("loss %g", p.loss)
}

// printTable writes the demo's results as a table.
func printTable(w io.Writer, rows []demoRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\tloss\tRTT\tMB\tseconds\tMB/s\tretransmits\tverified\t")
	for _, r := range rows {
		secs, rate, verified := "-", "-", "no"
		if r.err == nil {
			secs = fmt.Sprintf("%.2f", r.sent.elapsed.Seconds())
			rate = fmt.Sprintf("%.1f", r.sent.mbps())
			verified = "yes"
		}
		fmt.Fprintf(tw, "%v\t%g\t%v\t%.1f\t%s\t%s\t%d\t%s\t\n",
			r.protocol, r.path.loss, 2*max(r.path.delay, 0), float64(r.size)/1e6, secs, rate, r.sent.retransmits, verified)
	}
	_ = tw.Flush()
}
