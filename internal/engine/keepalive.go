package engine

import "time"

// KeepAliveAt returns when an established session's next keepalive is
// due: every after the later of lastRecv, when the last datagram from the
// peer arrived, and lastSent, when the last keepalive left. An end that
// hears from its peer therefore sends none, and a quiet one sends one per
// every. It reports false when every is not positive (keepalives off).
func KeepAliveAt(every time.Duration, lastRecv, lastSent time.Time) (time.Time, bool) {
	if every <= 0 {
		return time.Time{}, false
	}
	if lastSent.After(lastRecv) {
		lastRecv = lastSent
	}
	return lastRecv.Add(every), true
}
