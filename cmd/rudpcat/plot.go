package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rudpkit/rudp/qlog"
)

// plotUsage is the usage text of rudpcat plot.
const plotUsage = `usage: rudpcat plot [-o OUT.png|OUT.svg] [-width 8in] [-height 6in] TRACE.sqlog

Draws a qlog trace written by package qlog (QLOGDIR) as three panels over
time in seconds: throughput sent and received in Mbit/s per 100 ms, the
congestion window and bytes in flight in KiB with lost packets marked,
and the smoothed and latest RTT in ms. The output's extension picks PNG
(96 dpi) or SVG; the default is TRACE with .png for its extension.
Lengths take in, cm, mm or pt, up to 40in.
`

// Plot geometry.
const (
	plotDPI     = 96            // dots per inch of a PNG
	plotBin     = 0.1           // throughput bin, seconds
	plotMaxSide = 40 * vg.Inch  // largest -width or -height
	plotMaxBins = 1 << 20       // bins of the throughput panel at most
	plotMinSide = vg.Length(72) // smallest -width or -height: 1in
	kib         = 1024.0        // bytes in a KiB
	mbit        = 1e6           // bits in a Mbit
)

// runPlot runs rudpcat plot with args (those after "plot") and reports
// the file written on stdout. It returns flag.ErrHelp after writing the
// usage for -h, and an error naming the problem for bad flags, a missing
// or unreadable trace, an empty trace and a trace without
// recovery:metrics_updated events.
func runPlot(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "", "output file, .png or .svg (default: TRACE with .png)")
	width := fs.String("width", "8in", "image width")
	height := fs.String("height", "6in", "image height")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = io.WriteString(stdout, plotUsage)
			return flag.ErrHelp
		}
		return fmt.Errorf("%w\n%s", err, plotUsage)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("want one TRACE file\n%s", plotUsage)
	}
	in := fs.Arg(0)
	w, err := parseSide("width", *width)
	if err != nil {
		return err
	}
	h, err := parseSide("height", *height)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = strings.TrimSuffix(in, filepath.Ext(in)) + ".png"
	}
	ext := strings.ToLower(filepath.Ext(*out))
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("output %s: want a .png or .svg name", *out)
	}

	f, err := os.Open(in)
	if err != nil {
		return err
	}
	_, events, err := qlog.ReadEvents(f)
	f.Close()
	if errors.Is(err, qlog.ErrNoHeader) {
		return fmt.Errorf("%s: empty trace", in)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	s, err := collect(events)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	plots, err := s.plots()
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}

	var canvas vg.CanvasWriterTo
	if ext == ".svg" {
		canvas = vgsvg.New(w, h)
	} else {
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(plotDPI))}
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: 4, PadBottom: 4, PadLeft: 4, PadRight: 8, PadY: 6}
	grid := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		grid[i] = []*plot.Plot{p}
	}
	for i, c := range plot.Align(grid, tiles, dc) {
		grid[i][0].Draw(c[0])
	}

	o, err := os.Create(*out)
	if err != nil {
		return err
	}
	if _, err := canvas.WriteTo(o); err != nil {
		o.Close()
		return fmt.Errorf("%s: %w", *out, err)
	}
	if err := o.Close(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wrote %s\n", *out)
	return err
}

// parseSide parses a -width or -height length.
func parseSide(name, s string) (vg.Length, error) {
	l, err := vg.ParseLength(s)
	if err != nil {
		return 0, fmt.Errorf("-%s %q: %v", name, s, err)
	}
	if !(l >= plotMinSide && l <= plotMaxSide) {
		return 0, fmt.Errorf("-%s %q: want 1in to 40in", name, s)
	}
	return l, nil
}

// series are the figures of a trace the panels draw; times in seconds.
type series struct {
	sentBytes, recvBytes []float64 // per plotBin
	cwnd, inflight       plotter.XYs
	srtt, latest         plotter.XYs
	lost                 plotter.XYs // at the congestion window then, KiB
}

// collect gathers the series of events.
func collect(events []qlog.Event) (*series, error) {
	if len(events) == 0 {
		return nil, errors.New("no events")
	}
	s := &series{}
	cwnd := 0.0
	for i, e := range events {
		sec := e.Time / 1e3
		if math.IsNaN(sec) || sec < 0 {
			continue
		}
		switch e.Name {
		case qlog.NamePacketSent, qlog.NamePacketReceived:
			var p qlog.PacketData
			if err := json.Unmarshal(e.Data, &p); err != nil {
				return nil, fmt.Errorf("event %d (%s): %w", i+1, e.Name, err)
			}
			bin := int(e.Time / (plotBin * 1e3)) // from ms: exact for whole ms
			if bin >= plotMaxBins {
				return nil, fmt.Errorf("event %d: trace longer than %.0f s", i+1, plotMaxBins*plotBin)
			}
			b := &s.sentBytes
			if e.Name == qlog.NamePacketReceived {
				b = &s.recvBytes
			}
			for len(*b) <= bin {
				*b = append(*b, 0)
			}
			(*b)[bin] += float64(p.Raw.Length)
		case qlog.NameMetricsUpdated:
			var m qlog.MetricsData
			if err := json.Unmarshal(e.Data, &m); err != nil {
				return nil, fmt.Errorf("event %d (%s): %w", i+1, e.Name, err)
			}
			cwnd = float64(m.CongestionWindow) / kib
			s.cwnd = append(s.cwnd, plotter.XY{X: sec, Y: cwnd})
			s.inflight = append(s.inflight, plotter.XY{X: sec, Y: float64(m.BytesInFlight) / kib})
			s.srtt = append(s.srtt, plotter.XY{X: sec, Y: m.SmoothedRTT})
			if m.LatestRTT > 0 { // 0: no sample in this update
				s.latest = append(s.latest, plotter.XY{X: sec, Y: m.LatestRTT})
			}
		case qlog.NamePacketLost:
			s.lost = append(s.lost, plotter.XY{X: sec, Y: cwnd})
		}
	}
	if len(s.cwnd) == 0 {
		return nil, errors.New("no recovery:metrics_updated events: nothing to plot")
	}
	return s, nil
}

// throughput returns the Mbit/s of each bin of b, as a step line.
func throughput(b []float64) plotter.XYs {
	xy := make(plotter.XYs, 0, 2*len(b))
	for i, n := range b {
		y := n * 8 / plotBin / mbit
		xy = append(xy, plotter.XY{X: float64(i) * plotBin, Y: y}, plotter.XY{X: float64(i+1) * plotBin, Y: y})
	}
	return xy
}

var (
	colorSent   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorRecv   = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colorLost   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorSecond = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// plots builds the three panels.
func (s *series) plots() ([]*plot.Plot, error) {
	thr := plot.New()
	thr.Title.Text = "Throughput"
	thr.Y.Label.Text = "Mbit/s"
	thr.Y.Min = 0
	if err := addLine(thr, "sent", throughput(s.sentBytes), colorSent); err != nil {
		return nil, err
	}
	if err := addLine(thr, "received", throughput(s.recvBytes), colorRecv); err != nil {
		return nil, err
	}

	cw := plot.New()
	cw.Title.Text = "Congestion window"
	cw.Y.Label.Text = "KiB"
	cw.Y.Min = 0
	if err := addLine(cw, "cwnd", s.cwnd, colorSent); err != nil {
		return nil, err
	}
	if err := addLine(cw, "bytes in flight", s.inflight, colorSecond); err != nil {
		return nil, err
	}
	if len(s.lost) > 0 {
		sc, err := plotter.NewScatter(s.lost)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color = colorLost
		sc.GlyphStyle.Shape = draw.CrossGlyph{}
		sc.GlyphStyle.Radius = vg.Points(3)
		cw.Add(sc)
		cw.Legend.Add("lost", sc)
	}

	rtt := plot.New()
	rtt.Title.Text = "RTT"
	rtt.Y.Label.Text = "ms"
	rtt.X.Label.Text = "time (s)"
	rtt.Y.Min = 0
	if err := addLine(rtt, "smoothed", s.srtt, colorSent); err != nil {
		return nil, err
	}
	if err := addLine(rtt, "latest", s.latest, colorRecv); err != nil {
		return nil, err
	}

	// One time axis for all.
	maxX := 0.0
	for _, p := range []*plot.Plot{thr, cw, rtt} {
		maxX = math.Max(maxX, p.X.Max)
	}
	for _, p := range []*plot.Plot{thr, cw, rtt} {
		p.X.Min, p.X.Max = 0, maxX
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Legend.Left = false
	}
	return []*plot.Plot{thr, cw, rtt}, nil
}

// addLine adds a line of xy to p, and to its legend; nothing for no
// points.
func addLine(p *plot.Plot, name string, xy plotter.XYs, c color.Color) error {
	if len(xy) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color = c
	l.Width = vg.Points(1)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}
