package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// rateWarmup is how long a progress bar counts bytes before it shows them,
// so that the first rate it shows is a mean over at least that long, not
// over the microseconds a first burst into the send buffer takes.
const rateWarmup = time.Second

// progressBar is a byte-counting progress bar. Writes to it count bytes and
// never fail.
type progressBar struct {
	w       io.Writer
	desc    string
	visible bool
	warmup  time.Duration // rateWarmup, but for tests

	bar     *progressbar.ProgressBar // nil until start
	started time.Time
	held    int64 // bytes counted during the warm-up, not yet shown
	warm    bool  // the warm-up is over
}

// newProgress returns a progress bar to be drawn on w, labelled desc; it
// draws nothing unless visible. start draws it.
func newProgress(w io.Writer, desc string, visible bool) *progressBar {
	return &progressBar{w: w, desc: desc, visible: visible, warmup: rateWarmup}
}

// showProgress reports whether a progress bar belongs on w: unless
// --quiet, when w is a terminal, where the bar redraws itself in place
// (elsewhere, as in a log file, its frames would pile up).
func showProgress(w io.Writer, o *options) bool {
	f, ok := w.(*os.File)
	return !o.quiet && ok && term.IsTerminal(int(f.Fd()))
}

// start draws the bar for total bytes (-1 if unknown: a spinner without a
// total or ETA). The rate and the ETA are measured from now. Call it once,
// before Write.
func (p *progressBar) start(total int64) {
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetVisibility(p.visible),
		progressbar.OptionSetDescription(p.desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(20),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionClearOnFinish(),
	)
	p.bar.StartWithoutRender() // the clock starts now, not at the first bytes
	_ = p.bar.RenderBlank()
	p.started = time.Now()
}

// Write counts len(b) bytes.
func (p *progressBar) Write(b []byte) (int, error) {
	n := int64(len(b))
	if !p.warm {
		p.held += n
		if time.Since(p.started) < p.warmup {
			return len(b), nil
		}
		p.warm, n = true, p.held
	}
	_ = p.bar.Add64(n) // only fails when more bytes come than announced
	return len(b), nil
}

// done removes the bar, if it was started.
func (p *progressBar) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
