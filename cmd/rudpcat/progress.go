package main

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressBar is a byte-counting progress bar. Writes to it count bytes and
// never fail.
type progressBar struct {
	bar *progressbar.ProgressBar
}

// newProgress returns a progress bar drawn on w, for total bytes (-1 if
// unknown), labelled desc; it draws nothing unless visible.
func newProgress(w io.Writer, total int64, desc string, visible bool) *progressBar {
	return &progressBar{bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetVisibility(visible),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(20),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionClearOnFinish(),
	)}
}

// Write counts len(b) bytes.
func (p *progressBar) Write(b []byte) (int, error) {
	_ = p.bar.Add(len(b)) // only fails when more bytes come than announced
	return len(b), nil
}

// done removes the bar.
func (p *progressBar) done() {
	_ = p.bar.Finish()
}
