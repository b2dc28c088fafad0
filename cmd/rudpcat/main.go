// Command rudpcat moves bytes over rudp streams, like nc over UDP, and
// measures transfers over real, optionally impaired, UDP sockets.
//
//	rudpcat listen ADDR          accept one stream; copy it to stdout and stdin to it
//	rudpcat dial ADDR            connect; copy the stream to stdout and stdin to it
//	rudpcat send FILE ADDR       send FILE to rudpcat recv and check its SHA-256
//	rudpcat recv [-o FILE] ADDR  receive one stream; send back its SHA-256
//	rudpcat demo                 transfer data over 127.0.0.1 for every protocol and loss rate
//	rudpcat dump FILE            decode the datagrams of a pcap or pcapng capture
//	rudpcat plot TRACE.sqlog     draw a qlog trace (--qlog, QLOGDIR) as PNG or SVG
//
// Run "rudpcat -h" for the flags.
//
// Ctrl-C or SIGTERM resets the stream (an abortive close: the peer fails at
// once with a reset error rather than after its idle timeout) and exits
// with status 1; a second one exits at once.
//
// # Transfer framing
//
// send writes a 16-byte header, then the data, then half-closes. The
// header is the magic "\x00rudpcat" followed by the data's size in bytes,
// a big-endian uint64, all ones if unknown (stdin); recv uses it only to
// show the total and an ETA. A stream that does not start with the magic
// (from rudpcat dial, say) is data from its first byte. recv reads to the
// end of the stream, writes back the SHA-256 of the data (32 bytes) and
// closes; send compares it with the SHA-256 of what it sent.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // the transfer failed, was not verified or was interrupted
	exitUsage = 2 // bad command line
)

// cli is one run of the command with its standard streams.
type cli struct {
	ctx            context.Context // ends on Ctrl-C or SIGTERM; nil: never
	stdin          io.Reader
	stdout, stderr io.Writer
}

// errInterrupted is the error of a command stopped by Ctrl-C or SIGTERM.
var errInterrupted = errors.New("interrupted")

// command is one subcommand.
type command struct {
	name    string
	args    string // positional arguments, for the usage text
	nargs   int    // how many positional arguments it takes
	summary string
	run     func(c *cli, o *options, args []string) error
}

// commands lists the subcommands in the order of the usage text.
var commands = []command{
	{"listen", "ADDR", 1, "accept one stream on ADDR; copy it to stdout and stdin to it", (*cli).listen},
	{"dial", "ADDR", 1, "connect to ADDR; copy the stream to stdout and stdin to it", (*cli).dial},
	{"send", "FILE ADDR", 2, "send FILE (- for stdin) to rudpcat recv at ADDR; check its SHA-256", (*cli).send},
	{"recv", "ADDR", 1, "accept one stream on ADDR; write it to stdout or -o FILE; send back its SHA-256", (*cli).recv},
	{"demo", "", 0, "transfer data over UDP on 127.0.0.1 for every protocol and loss rate", (*cli).demo},
}

// tool is a subcommand that parses its own flags and does not move
// data: it writes to stdout and returns an error to report.
type tool struct {
	name, args, summary string
	run                 func(args []string, stdout io.Writer) error
}

// tools lists the tool subcommands in the order of the usage text.
var tools = []tool{
	{"dump", "[flags] FILE", "decode the datagrams of a pcap or pcapng capture, or of a UDP port, for a protocol", runDump},
	{"plot", "[flags] TRACE.sqlog", "draw a qlog trace's throughput, cwnd and RTT over time as PNG or SVG", runPlot},
}

// main runs the command on the process's standard streams. The first
// Ctrl-C or SIGTERM ends c.ctx; the next one has its default effect.
func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	c := &cli{ctx: ctx, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	code := c.run(os.Args[1:])
	stop()
	os.Exit(code)
}

// run dispatches args to a subcommand and returns the exit status.
func (c *cli) run(args []string) int {
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	if len(args) == 0 {
		usage(c.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(c.stdout)
		return exitOK
	}
	for _, t := range tools {
		if t.name != args[0] {
			continue
		}
		err := t.run(args[1:], c.stdout)
		switch {
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case err != nil:
			fmt.Fprintf(c.stderr, "rudpcat %s: %v\n", t.name, err)
			return exitFail
		}
		return exitOK
	}
	for _, cmd := range commands {
		if cmd.name != args[0] {
			continue
		}
		o, pos, err := parseCommand(cmd, args[1:])
		if errors.Is(err, flag.ErrHelp) {
			commandUsage(c.stdout, cmd)
			return exitOK
		}
		if err != nil {
			fmt.Fprintf(c.stderr, "rudpcat %s: %v\nRun 'rudpcat %s -h' for usage.\n", cmd.name, err, cmd.name)
			return exitUsage
		}
		if err := cmd.run(c, o, pos); err != nil {
			if c.ctx.Err() != nil && !errors.Is(err, errInterrupted) {
				err = errInterrupted // the failure it caused says less
			}
			fmt.Fprintf(c.stderr, "rudpcat %s: %v\n", cmd.name, err)
			return exitFail
		}
		return exitOK
	}
	fmt.Fprintf(c.stderr, "rudpcat: unknown command %q\nRun 'rudpcat -h' for usage.\n", args[0])
	return exitUsage
}

// usage writes the usage text of the whole command to w.
func usage(w io.Writer) {
	fmt.Fprintln(w, "rudpcat moves bytes over rudp streams (reliable transport over UDP).")
	fmt.Fprintln(w, "\nUsage:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, cmd := range commands {
		fmt.Fprintf(tw, "  rudpcat %s\t%s\n", synopsis(cmd), cmd.summary)
	}
	for _, t := range tools {
		fmt.Fprintf(tw, "  rudpcat %s %s\t%s\n", t.name, t.args, t.summary)
	}
	_ = tw.Flush()

	common := newFlagSet("dial", new(options))
	fmt.Fprintln(w, "\nFlags of every command (before or after the arguments):")
	printFlags(w, common, nil)
	for _, cmd := range commands {
		fs := newFlagSet(cmd.name, new(options))
		if hasOwnFlags(fs, common) {
			fmt.Fprintf(w, "\nFlags of %s only:\n", cmd.name)
			printFlags(w, fs, common)
		}
	}
	fmt.Fprint(w, impairmentNote)
	fmt.Fprintln(w, "\ndump and plot take flags of their own: run 'rudpcat dump -h', 'rudpcat plot -h'.")
}

// impairmentNote explains where the impairment flags apply.
const impairmentNote = `
--loss, --delay and --jitter impair the datagrams this side sends; give
them to both sides to impair both directions. demo impairs both
directions itself. An impaired side also drops the datagrams it sends
above 1472 bytes, as a path with a 1500-byte MTU does; POROUS streams
between peers on one host send larger ones until they find they are
lost.
`

// commandUsage writes the usage text of one subcommand to w.
func commandUsage(w io.Writer, cmd command) {
	fmt.Fprintf(w, "Usage: rudpcat %s\n\n%s.\n\nFlags:\n", synopsis(cmd), capitalize(cmd.summary))
	printFlags(w, newFlagSet(cmd.name, new(options)), nil)
	fmt.Fprint(w, impairmentNote)
}

// synopsis returns the command line of cmd, as in "send [flags] FILE ADDR".
func synopsis(cmd command) string {
	return strings.TrimSpace(cmd.name + " [flags] " + cmd.args)
}

// capitalize upper-cases the first letter of s.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
