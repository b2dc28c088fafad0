package qlog

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rudpkit/rudp/trace"
)

// EnvDir is the environment variable FromEnv reads: the directory to
// write one trace file per conn in, as quic-go's QLOGDIR.
const EnvDir = "QLOGDIR"

// maxNameTries bounds the file names DirTracer tries for one conn.
const maxNameTries = 1000

// FromEnv returns DirTracer of the directory named by $QLOGDIR, or nil
// (no tracing) when the variable is unset or empty.
func FromEnv() func(trace.ConnInfo) *trace.ConnTracer {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		return nil
	}
	return DirTracer(dir)
}

// DirTracer returns a tracer factory that writes each conn's trace to a
// new file in dir (created with its parents if missing), named
//
//	<UTC time yyyymmddThhmmss.nnn>_<protocol>_<client|server>_<remote>.sqlog
//
// where remote is the remote address with ':' replaced by '-' (and path
// separators by '_'). When that name exists, _1, _2, ... is added before
// the extension; a file is never overwritten (O_EXCL). When no file can
// be created the factory returns nil, no tracing for that conn, and
// logs nothing.
func DirTracer(dir string) func(trace.ConnInfo) *trace.ConnTracer {
	return dirTracer(dir, time.Now)
}

func dirTracer(dir string, now func() time.Time) func(trace.ConnInfo) *trace.ConnTracer {
	return func(info trace.ConnInfo) *trace.ConnTracer {
		f, err := createTraceFile(dir, fileBase(now(), info))
		if err != nil {
			return nil
		}
		return NewConnTracer(f, info)
	}
}

// fileBase is a trace file's name without the extension.
func fileBase(at time.Time, info trace.ConnInfo) string {
	clean := strings.NewReplacer(":", "-", "/", "_", "\\", "_", string(filepath.Separator), "_")
	return at.UTC().Format("20060102T150405.000") + "_" + clean.Replace(info.Protocol) + "_" + roleOf(info) + "_" + clean.Replace(remoteOf(info))
}

// createTraceFile creates dir/base.sqlog, or the first free
// dir/base_N.sqlog.
func createTraceFile(dir, base string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for i := 0; i < maxNameTries; i++ {
		name := base
		if i > 0 {
			name += "_" + strconv.Itoa(i)
		}
		f, err := os.OpenFile(filepath.Join(dir, name+".sqlog"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
	}
	return nil, fs.ErrExist
}
