package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"image/png"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rudpkit/rudp/qlog"
	"github.com/rudpkit/rudp/trace"
)

// plotT0 is the time of a scripted trace's first event.
var plotT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// writeTrace writes a scripted 2-second trace of n rounds to dir/name:
// every 10 ms a 1200-byte datagram sent, an ack received and a metrics
// update, and a loss every 50th round.
func writeTrace(t *testing.T, dir, name string, rounds int, metrics bool) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	ct := qlog.NewConnTracer(f, trace.ConnInfo{
		Protocol: "wirefox", Client: true,
		Remote: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000},
	})
	ct.StateChanged(plotT0, "established")
	for i := range rounds {
		at := plotT0.Add(time.Duration(i) * 10 * time.Millisecond)
		ct.DatagramSent(at, 1200, trace.Datagram{Type: "data", Fields: []trace.Field{{Name: "seq", Value: uint32(i)}}})
		ct.DatagramReceived(at.Add(5*time.Millisecond), 40, trace.Datagram{Type: "ack"})
		if i%50 == 49 {
			ct.PacketLost(at.Add(6*time.Millisecond), 1200, trace.LossTime)
		}
		if metrics {
			ct.MetricsUpdated(at.Add(7*time.Millisecond), trace.Metrics{
				LatestRTT: time.Duration(20+i%7) * time.Millisecond, SmoothedRTT: 22 * time.Millisecond,
				MinRTT: 20 * time.Millisecond, Cwnd: 12000 + 100*(i%50), BytesInFlight: 6000 + 50*(i%50),
			})
		}
	}
	ct.Closed(plotT0.Add(time.Duration(rounds)*10*time.Millisecond), nil)
	return path
}

func TestPlotPNGAndSVG(t *testing.T) {
	dir := t.TempDir()
	in := writeTrace(t, dir, "conn.sqlog", 200, true) // 802 events

	var out bytes.Buffer
	if err := runPlot([]string{"-width", "5in", "-height", "4in", in}, &out); err != nil {
		t.Fatal(err)
	}
	pngPath := filepath.Join(dir, "conn.png") // the default name
	if out.String() != "wrote "+pngPath+"\n" {
		t.Fatalf("stdout %q", out.String())
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if b.Dx() != 5*96 || b.Dy() != 4*96 { // 96 dpi
		t.Fatalf("PNG is %dx%d, want 480x384", b.Dx(), b.Dy())
	}
	inked := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r != 0xffff || g != 0xffff || bl != 0xffff {
				inked++
			}
		}
	}
	if total := b.Dx() * b.Dy(); inked*100 <= total { // more than 1 % not white
		t.Fatalf("%d of %d pixels not white: blank plot", inked, total)
	}

	svgPath := filepath.Join(dir, "out.svg")
	out.Reset()
	if err := runPlot([]string{"-o", svgPath, in}, &out); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(svg))
	var root xml.StartElement
	for {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("SVG: no root element: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			root = se
			break
		}
	}
	if root.Name.Local != "svg" {
		t.Fatalf("SVG root <%s>", root.Name.Local)
	}
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG does not parse: %v", err)
			}
			break
		}
	}
	if !bytes.Contains(svg, []byte("Congestion window")) {
		t.Error("SVG has no congestion window panel title")
	}
}

func TestPlotErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.sqlog")
	empty := filepath.Join(dir, "empty.sqlog")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	noMetrics := writeTrace(t, dir, "nometrics.sqlog", 20, false)
	good := writeTrace(t, dir, "good.sqlog", 20, true)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{missing}, "open " + missing + ": no such file or directory"},
		{[]string{empty}, empty + ": empty trace"},
		{[]string{noMetrics}, noMetrics + ": no recovery:metrics_updated events: nothing to plot"},
		{[]string{"-o", filepath.Join(dir, "x.gif"), good}, "output " + filepath.Join(dir, "x.gif") + ": want a .png or .svg name"},
		{[]string{"-width", "0in", good}, `-width "0in": want 1in to 40in`},
		{[]string{"-height", "100in", good}, `-height "100in": want 1in to 40in`},
		{[]string{}, "want one TRACE file\n" + plotUsage},
	} {
		var out bytes.Buffer
		err := runPlot(tc.args, &out)
		if err == nil || err.Error() != tc.want {
			t.Errorf("runPlot(%q) = %v, want %q", tc.args, err, tc.want)
		}
	}
	var out bytes.Buffer
	if err := runPlot([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) || out.String() != plotUsage {
		t.Errorf("-h: %v, %q", err, out.String())
	}
	if !strings.HasPrefix(plotUsage, "usage: rudpcat plot ") {
		t.Error("usage text")
	}
}
