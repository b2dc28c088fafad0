// Command rudpcat moves bytes over rudp streams, like nc over UDP, and
// measures transfers over real, optionally impaired, UDP sockets.
//
//	rudpcat listen ADDR          accept one stream; copy it to stdout and stdin to it
//	rudpcat dial ADDR            connect; copy the stream to stdout and stdin to it
//	rudpcat send FILE ADDR       send FILE to rudpcat recv and check its SHA-256
//	rudpcat recv [-o FILE] ADDR  receive one stream; send back its SHA-256
//	rudpcat demo                 transfer data over 127.0.0.1 for every protocol and loss rate
//
// Run "rudpcat -h" for the flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// Exit statuses.
const (
	exitOK    = 0
	exitFail  = 1 // the transfer failed or was not verified
	exitUsage = 2 // bad command line
)

// cli is one run of the command with its standard streams.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

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

// main runs the command on the process's standard streams.
func main() {
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(c.run(os.Args[1:]))
}

// run dispatches args to a subcommand and returns the exit status.
func (c *cli) run(args []string) int {
	if len(args) == 0 {
		usage(c.stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(c.stdout)
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
}

// impairmentNote explains where the impairment flags apply.
const impairmentNote = `
--loss, --delay and --jitter impair the datagrams this side sends; give
them to both sides to impair both directions. demo impairs both
directions itself.
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
