package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rudpkit/rudp"
	"github.com/stretchr/testify/require"
)

func TestDemo(t *testing.T) {
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	code := c.run([]string{"demo", "--size", "2097152", "--loss", "0,0.05,0.02@5ms", "--quiet"})
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", &out, &errOut)

	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	require.Equal(t, []string{"protocol", "loss", "RTT", "MB", "seconds", "MB/s", "retransmits", "verified"}, strings.Fields(lines[0]))
	var want []string
	for _, p := range rudp.Protocols() {
		for _, path := range []string{"0 0s", "0.05 0s", "0.02 10ms"} {
			want = append(want, fmt.Sprintf("%v %s 2.1", p, path))
		}
	}
	require.Len(t, lines, 1+len(want), out.String())
	for i, w := range want {
		f := strings.Fields(lines[1+i])
		require.Len(t, f, 8, lines[1+i])
		require.Equal(t, w, strings.Join(f[:4], " "))
		require.Equal(t, "yes", f[7], lines[1+i])
	}
}

func TestDemoRowFailsOnBadConfig(t *testing.T) {
	o, _, err := parseCommand(lookup(t, "demo"), []string{"--size", "1000", "--loss", "0", "--mtu", "100"})
	require.NoError(t, err)
	o.quiet = true
	rows := runDemo(context.Background(), o, io.Discard)
	require.NotEmpty(t, rows)
	for _, r := range rows {
		require.Error(t, r.err, "an MTU of 100 is invalid")
	}
	var out bytes.Buffer
	printTable(&out, rows)
	require.Contains(t, out.String(), "no")
}

// TestDemoPlot: demo --plot DIR writes, for each transfer, the sender's
// qlog trace and a PNG drawn from it, named after the protocol and path.
func TestDemoPlot(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	code := c.run([]string{"demo", "--protocol", "wirefox", "--size", "1048576", "--loss", "0.05", "--quiet", "--plot", dir})
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", &out, &errOut)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"wirefox-loss0.05.png", "wirefox-loss0.05.sqlog"}, names)
	f, err := os.Open(filepath.Join(dir, "wirefox-loss0.05.png"))
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 768, 576), img.Bounds(), "8 × 6 in at 96 dpi")
}

// TestQlogFlag: --qlog DIR gives the command's conns a tracer; without
// it they have none.
func TestQlogFlag(t *testing.T) {
	o, _, err := parseCommand(lookup(t, "send"), []string{"--qlog", "/some/dir", "-", "127.0.0.1:1"})
	require.NoError(t, err)
	require.Equal(t, "/some/dir", o.qlogDir)
	require.NotNil(t, o.config().Tracer)
	o, _, err = parseCommand(lookup(t, "send"), []string{"-", "127.0.0.1:1"})
	require.NoError(t, err)
	require.Nil(t, o.config().Tracer)
}
