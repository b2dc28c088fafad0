package main

import (
	"crypto/ecdh"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rudpkit/rudp"
	"github.com/rudpkit/rudp/internal/impair"
	"github.com/rudpkit/rudp/internal/porous"
	"github.com/rudpkit/rudp/qlog"
)

// options are the parsed flags of one subcommand.
type options struct {
	protocol    rudp.Protocol // 0: the library's default
	loss        float64       // not demo
	delay       time.Duration
	jitter      time.Duration
	seed        uint64
	mtu         int
	idleTimeout time.Duration
	handshake   time.Duration
	password    string           // Avara
	encrypt     bool             // Wirefox
	identity    *ecdh.PrivateKey // Wirefox listener
	serverKey   *ecdh.PublicKey  // Wirefox dialer
	quiet       bool
	qlogDir     string // write qlog traces here

	output  string     // recv
	size    int64      // demo
	paths   []demoPath // demo
	plotDir string     // demo
}

// Demo defaults.
const (
	defaultDemoSize  = 64 << 20
	defaultDemoPaths = "0,0.05,0.02@10ms"
)

// newFlagSet returns the flag set of subcommand cmd, storing into o, and
// sets o to the defaults.
func newFlagSet(cmd string, o *options) *flag.FlagSet {
	*o = options{seed: 1, mtu: rudp.DefaultMTU, idleTimeout: rudp.DefaultIdleTimeout, handshake: rudp.DefaultHandshakeTimeout}
	fs := flag.NewFlagSet("rudpcat "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports errors and usage itself
	fs.Usage = func() {}

	fs.Func("protocol", "wire protocol `NAME`: "+protocolNames()+", in any case (default: the library's default)", func(s string) error {
		p, err := rudp.ParseProtocol(s)
		o.protocol = p
		return err
	})
	if cmd == "demo" {
		o.size = defaultDemoSize
		o.paths, _ = parsePaths(defaultDemoPaths, 0)
		fs.Func("size", "send `BYTES` bytes per transfer (default "+strconv.Itoa(defaultDemoSize)+", 64 MiB)", func(s string) error {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf("not a positive number of bytes: %q", s)
			}
			o.size = n
			return nil
		})
		fs.Func("loss", "comma-separated `LIST` of paths, one transfer each: a loss rate 0..1, optionally @ a one-way delay (0.02@10ms: 2 % loss and 20 ms round trip; default --delay) (default "+defaultDemoPaths+")", func(s string) error {
			l, err := parsePaths(s, -1)
			o.paths = l
			return err
		})
	} else {
		fs.Func("loss", "drop this `FRACTION` (0..1) of the datagrams sent (default 0)", func(s string) error {
			l, err := parseLoss(s)
			o.loss = l
			return err
		})
	}
	fs.DurationVar(&o.delay, "delay", 0, "add `DURATION` of one-way delay to the datagrams sent")
	fs.DurationVar(&o.jitter, "jitter", 0, "add a random 0..`DURATION` to each datagram's delay (reorders them)")
	fs.Uint64Var(&o.seed, "seed", o.seed, "seed `N` of the random loss and jitter decisions")
	fs.IntVar(&o.mtu, "mtu", o.mtu, "largest datagram sent, `N` bytes of UDP payload")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", o.idleTimeout, "fail after `DURATION` without a datagram from the peer")
	fs.DurationVar(&o.handshake, "handshake-timeout", o.handshake, "fail a dial, or drop a half-open peer, after `DURATION` without a completed handshake")
	fs.StringVar(&o.password, "password", "", "Avara login `PASSWORD` (--protocol avara): both ends give the same, at most 255 bytes")
	fs.BoolVar(&o.encrypt, "encrypt", false, "Wirefox (--protocol wirefox): encrypt as the reference's libsodium build; both ends must give it")
	if cmd != "send" && cmd != "dial" && cmd != "demo" {
		fs.Func("identity", "Wirefox listener with --encrypt: prove its identity with the X25519 private key in `FILE` (64 hex digits); its public key is printed", func(s string) error {
			k, err := readIdentity(s)
			o.identity = k
			return err
		})
	}
	if cmd != "recv" && cmd != "listen" && cmd != "demo" {
		fs.Func("server-key", "Wirefox dialer with --encrypt: the server's X25519 public `KEY` (64 hex digits) it must prove it holds", func(s string) error {
			k, err := parseKey(s)
			o.serverKey = k
			return err
		})
	}
	fs.BoolVar(&o.quiet, "quiet", false, "no progress bar (there is none unless stderr is a terminal)")
	fs.StringVar(&o.qlogDir, "qlog", "", "write a qlog trace of each conn into `DIR` (see rudpcat plot; QLOGDIR in the environment does the same)")
	if cmd == "demo" {
		fs.StringVar(&o.plotDir, "plot", "", "write each transfer's sender trace and its plot (PNG) into `DIR`")
	}
	if cmd == "recv" {
		fs.StringVar(&o.output, "o", "", "write the data to `FILE` instead of stdout")
	}
	return fs
}

// parseCommand parses the flags and positional arguments of cmd, which may
// be interleaved. "--" ends the flags.
func parseCommand(cmd command, args []string) (*options, []string, error) {
	o := new(options)
	fs := newFlagSet(cmd.name, o)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, nil, respell(err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) != cmd.nargs {
		if cmd.nargs == 0 {
			return nil, nil, fmt.Errorf("takes no arguments, got %q", pos)
		}
		return nil, nil, fmt.Errorf("want arguments %s, got %q", cmd.args, pos)
	}
	if err := o.validate(); err != nil {
		return nil, nil, err
	}
	return o, pos, nil
}

// flagNameRE matches the name of the flag in the flag package's errors,
// which spell every flag with one dash.
var flagNameRE = regexp.MustCompile(`^(flag provided but not defined: |flag needs an argument: |invalid (?:boolean )?value "(?:[^"\\]|\\.)*" for (?:flag )?)-(\w[\w-]+)`)

// respell spells a flag named in err as the usage does: --name, or -o for
// a one-letter name.
func respell(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return errors.New(flagNameRE.ReplaceAllString(err.Error(), "${1}--${2}"))
}

// validate checks the values that the flag parsers cannot check alone.
func (o *options) validate() error {
	switch {
	case o.delay < 0 || o.jitter < 0:
		return errors.New("--delay and --jitter must not be negative")
	case o.idleTimeout < 0 || o.handshake < 0:
		return errors.New("--idle-timeout and --handshake-timeout must not be negative")
	case (o.identity != nil || o.serverKey != nil) && !o.encrypt:
		return errors.New("--identity and --server-key need --encrypt")
	case o.mtu < 0:
		return errors.New("--mtu must not be negative")
	}
	return nil
}

// parseLoss parses one loss rate, a fraction within 0..1.
func parseLoss(s string) (float64, error) {
	l, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", s)
	}
	if !(l >= 0 && l <= 1) { // also rejects NaN
		return 0, fmt.Errorf("loss %v is not within 0..1", l)
	}
	return l, nil
}

// demoPath is one demo transfer's path: the loss rate and one-way delay
// of the datagrams each side sends.
type demoPath struct {
	loss  float64
	delay time.Duration // -1: the --delay flag's
}

// parsePaths parses a comma-separated list of LOSS[@DELAY] entries; an
// entry without a delay gets delay.
func parsePaths(s string, delay time.Duration) ([]demoPath, error) {
	var ps []demoPath
	for f := range strings.SplitSeq(s, ",") {
		l, d, found := strings.Cut(f, "@")
		loss, err := parseLoss(l)
		if err != nil {
			return nil, err
		}
		p := demoPath{loss: loss, delay: delay}
		if found {
			if p.delay, err = time.ParseDuration(strings.TrimSpace(d)); err != nil || p.delay < 0 {
				return nil, fmt.Errorf("not a delay: %q", d)
			}
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// protocolNames lists the implemented protocols' names, comma-separated.
func protocolNames() string {
	var names []string
	for _, p := range rudp.Protocols() {
		names = append(names, p.String())
	}
	return strings.Join(names, ", ")
}

// config returns the rudp configuration the flags ask for.
func (o *options) config() *rudp.Config {
	cfg := &rudp.Config{Protocol: o.protocol, MTU: o.mtu, IdleTimeout: o.idleTimeout, HandshakeTimeout: o.handshake,
		AvaraPassword: o.password, WirefoxEncrypt: o.encrypt, WirefoxIdentity: o.identity, WirefoxServerKey: o.serverKey}
	if o.qlogDir != "" {
		cfg.Tracer = qlog.DirTracer(o.qlogDir)
	}
	return cfg
}

// parseKey parses an X25519 public key written as 64 hex digits.
func parseKey(s string) (*ecdh.PublicKey, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("not 64 hex digits: %q", s)
	}
	return ecdh.X25519().NewPublicKey(b)
}

// readIdentity reads an X25519 private key written as 64 hex digits from
// the file name.
func readIdentity(name string) (*ecdh.PrivateKey, error) {
	text, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(text)))
	if err != nil || len(b) != 32 {
		return nil, fmt.Errorf("%s: not 64 hex digits", name)
	}
	return ecdh.X25519().NewPrivateKey(b)
}

// impairment returns the impairment of the datagrams sent, with loss rate
// loss, one-way delay (-1: the --delay flag's) and the given seed, on an
// emulated path of a 1500-byte IPv4 MTU: datagrams above 1472 bytes
// (porous.MaxFrameSize, 1500 less the IPv4 and UDP headers) are dropped
// (see openSocket for when it applies).
func (o *options) impairment(loss float64, delay time.Duration, seed uint64) impair.Config {
	if delay < 0 {
		delay = o.delay
	}
	return impair.Config{Loss: loss, Delay: delay, Jitter: o.jitter, Seed: seed, MaxDatagram: porous.MaxFrameSize}
}

// printFlags writes the flags of fs that are not in skip (nil: none) to w,
// one a line, with their defaults.
func printFlags(w io.Writer, fs, skip *flag.FlagSet) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		if skip != nil && sameFlag(skip.Lookup(f.Name), f) {
			return
		}
		arg, help := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name
		}
		if arg != "" {
			name += " " + arg
		}
		switch f.DefValue {
		case "", "0", "0s", "false":
		default:
			help += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, help)
	})
	_ = tw.Flush()
}

// hasOwnFlags reports whether fs has flags that common lacks or defines
// differently.
func hasOwnFlags(fs, common *flag.FlagSet) bool {
	own := false
	fs.VisitAll(func(f *flag.Flag) {
		if !sameFlag(common.Lookup(f.Name), f) {
			own = true
		}
	})
	return own
}

// sameFlag reports whether a and b are the same flag with the same meaning.
func sameFlag(a, b *flag.Flag) bool {
	return a != nil && b != nil && a.Name == b.Name && a.Usage == b.Usage && a.DefValue == b.DefValue
}
