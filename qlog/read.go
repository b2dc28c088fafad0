package qlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Limits of ReadEvents.
const (
	// MaxRecordSize is the largest record ReadEvents accepts, in bytes.
	MaxRecordSize = 1 << 20
	// MaxEvents is the most events ReadEvents returns.
	MaxEvents = 1 << 22
)

// ErrNoHeader is returned by ReadEvents for input without a header
// record (an empty file, say).
var ErrNoHeader = errors.New("qlog: empty trace: no header record")

// ReadEvents reads a JSON-SEQ trace as NewConnTracer writes it: the
// header record, then the events in file order. A last record cut short
// (no final line feed, as a process that died mid-write leaves) is
// skipped; any other malformed record is an error naming its number
// (the header is record 1). It returns an error for a record larger than
// MaxRecordSize and for more than MaxEvents events.
func ReadEvents(r io.Reader) (Header, []Event, error) {
	var h Header
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxRecordSize+2)
	sc.Split(splitRecords)
	var events []Event
	n := 0
	for sc.Scan() {
		rec := sc.Bytes()
		if len(bytes.TrimSpace(rec)) == 0 {
			continue // RS RS or trailing blank: no record
		}
		n++
		if rec[len(rec)-1] != lineFeed {
			if err := checkLast(sc); err != nil {
				return h, nil, fmt.Errorf("qlog: record %d: no final line feed", n)
			}
			break // truncated last record
		}
		if n == 1 {
			if err := json.Unmarshal(rec, &h); err != nil {
				return h, nil, fmt.Errorf("qlog: header record: %w", err)
			}
			if h.Trace.CommonFields.TimeFormat == "" {
				return h, nil, fmt.Errorf("qlog: header record: no trace common_fields")
			}
			continue
		}
		if len(events) >= MaxEvents {
			return h, nil, fmt.Errorf("qlog: more than %d events", MaxEvents)
		}
		var e Event
		if err := json.Unmarshal(rec, &e); err != nil {
			return h, nil, fmt.Errorf("qlog: record %d: %w", n, err)
		}
		if e.Name == "" {
			return h, nil, fmt.Errorf("qlog: record %d: event without a name", n)
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return h, nil, fmt.Errorf("qlog: record %d: %w", n+1, err)
	}
	if n == 0 {
		return h, nil, ErrNoHeader
	}
	return h, events, nil
}

// checkLast returns an error when sc has more records.
func checkLast(sc *bufio.Scanner) error {
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) != 0 {
			return errors.New("more records")
		}
	}
	return nil
}

// splitRecords is a bufio.SplitFunc that yields the text between record
// separators (RFC 7464 §2.2), each starting after an RS.
func splitRecords(data []byte, atEOF bool) (int, []byte, error) {
	start := 0
	for start < len(data) && data[start] == recordSeparator {
		start++
	}
	if start > 1 {
		start = 1 // an empty record: yield it so the caller skips it
		return start, data[:0], nil
	}
	if i := bytes.IndexByte(data[start:], recordSeparator); i >= 0 {
		return start + i, data[start : start+i], nil
	}
	if atEOF {
		if len(data) == 0 {
			return 0, nil, nil
		}
		return len(data), data[start:], nil
	}
	return 0, nil, nil
}
