package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rudpkit/rudp"
	"github.com/stretchr/testify/require"
)

// lookup returns the subcommand named name.
func lookup(t *testing.T, name string) command {
	t.Helper()
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd
		}
	}
	t.Fatalf("no command %q", name)
	return command{}
}

func TestParseCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"send", []string{"--protocol", "nope", "f", "127.0.0.1:1"}, "unknown protocol"},
		{"dial", []string{"--protocol=", "127.0.0.1:1"}, "unknown protocol"},
		{"send", []string{"--loss", "1.5", "f", "127.0.0.1:1"}, "not within 0..1"},
		{"recv", []string{"--loss", "-0.1", "127.0.0.1:1"}, "not within 0..1"},
		{"listen", []string{"--loss", "NaN", "127.0.0.1:1"}, "not within 0..1"},
		{"dial", []string{"--loss", "x", "127.0.0.1:1"}, "not a number"},
		{"demo", []string{"--loss", "0,2"}, "not within 0..1"},
		{"demo", []string{"--size", "0"}, "positive"},
		{"dial", []string{"--delay", "-1s", "127.0.0.1:1"}, "negative"},
		{"dial", []string{"--nope", "127.0.0.1:1"}, "flag provided but not defined: --nope"},
		{"dial", []string{"-nope", "127.0.0.1:1"}, "flag provided but not defined: --nope"},
		{"dial", []string{"127.0.0.1:1", "--mtu"}, "flag needs an argument: --mtu"},
		{"recv", []string{"127.0.0.1:1", "-o"}, "flag needs an argument: -o"},
		{"dial", []string{"--loss", "x", "127.0.0.1:1"}, `invalid value "x" for flag --loss: not a number: "x"`},
		{"dial", []string{"--quiet=maybe", "127.0.0.1:1"}, `invalid boolean value "maybe" for --quiet: `},
		{"dial", []string{`--delay=" for -x`, "127.0.0.1:1"}, `invalid value "\" for -x" for flag --delay: `},
		{"send", []string{"f"}, "want arguments FILE ADDR"},
		{"demo", []string{"extra"}, "takes no arguments"},
	} {
		t.Run(strings.Join(append([]string{tc.name}, tc.args...), " "), func(t *testing.T) {
			_, _, err := parseCommand(lookup(t, tc.name), tc.args)
			require.ErrorContains(t, err, tc.want)
			require.NotRegexp(t, `(^|[^-])-(loss|mtu|nope|quiet|delay)\b`, err.Error(), "flags as the usage spells them")
		})
	}
}

func TestParseCommand(t *testing.T) {
	_, _, err := parseCommand(lookup(t, "send"), []string{"--quiet", "f", "--loss", "0.1", "h:1", "--seed=7", "--", "-x"})
	require.EqualError(t, err, `want arguments FILE ADDR, got ["f" "h:1" "-x"]`, "-- ends the flags")

	o, pos, err := parseCommand(lookup(t, "send"), []string{"--quiet", "-", "--loss", "0.1", "h:1", "--seed=7", "--mtu", "1200", "--protocol", "airhook"})
	require.NoError(t, err)
	require.Equal(t, []string{"-", "h:1"}, pos)
	require.True(t, o.quiet)
	require.Equal(t, 0.1, o.loss)
	require.Equal(t, uint64(7), o.seed)
	require.Equal(t, 1200, o.mtu)
	require.Equal(t, rudp.Airhook, o.protocol)

	o, pos, err = parseCommand(lookup(t, "demo"), nil)
	require.NoError(t, err)
	require.Empty(t, pos)
	require.Equal(t, int64(64<<20), o.size)
	require.Equal(t, []demoPath{{0, 0}, {0.05, 0}, {0.02, 10 * time.Millisecond}}, o.paths)

	o, _, err = parseCommand(lookup(t, "demo"), []string{"--loss", "0.1,0.01@50ms", "--delay", "1ms"})
	require.NoError(t, err)
	require.Equal(t, []demoPath{{0.1, -1}, {0.01, 50 * time.Millisecond}}, o.paths, "no @: the --delay flag's")
	require.Equal(t, time.Millisecond, o.impairment(0.1, -1, 1).Delay)
	require.Equal(t, 1472, o.impairment(0.1, -1, 1).MaxDatagram, "a 1500-byte IPv4 path")
	_, _, err = parseCommand(lookup(t, "demo"), []string{"--loss", "0.1@soon"})
	require.Error(t, err)
	require.Equal(t, rudp.Protocol(0), o.protocol, "default: the library's")

	for arg, want := range map[string]rudp.Protocol{"POROUS": rudp.POROUS, "Airhook": rudp.Airhook, "LLUDP": rudp.LLUDP, "AVARA": rudp.Avara} {
		o, _, err = parseCommand(lookup(t, "dial"), []string{"--protocol", arg, "127.0.0.1:1"})
		require.NoError(t, err, "--protocol takes any case")
		require.Equal(t, want, o.protocol)
	}
	o, _, err = parseCommand(lookup(t, "dial"), []string{"--protocol", "avara", "--password", "pw", "127.0.0.1:1"})
	require.NoError(t, err)
	require.Equal(t, "pw", o.config().AvaraPassword)

	o, _, err = parseCommand(lookup(t, "recv"), []string{"-o", "out", "127.0.0.1:0"})
	require.NoError(t, err)
	require.Equal(t, "out", o.output)
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	require.Equal(t, exitOK, c.run([]string{"-h"}))
	for _, cmd := range commands {
		require.Contains(t, out.String(), "rudpcat "+cmd.name)
	}
	for _, f := range []string{"--protocol", "--loss", "--delay", "--jitter", "--seed", "--mtu", "--idle-timeout", "--quiet", "-o FILE", "--size"} {
		require.Contains(t, out.String(), f)
	}

	out.Reset()
	require.Equal(t, exitOK, c.run([]string{"send", "-h"}))
	require.Contains(t, out.String(), "Usage: rudpcat send [flags] FILE ADDR")

	require.Equal(t, exitUsage, c.run(nil))
	require.Equal(t, exitUsage, c.run([]string{"frobnicate"}))
	require.Equal(t, exitUsage, c.run([]string{"send", "--loss", "2", "f", "a:1"}))
	require.Contains(t, errOut.String(), "rudpcat send: invalid value \"2\" for flag --loss: loss 2 is not within 0..1\n")
}
