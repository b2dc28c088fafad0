package congestion

// lossCount adds up bytes acknowledged and lost, and lost datagrams.
type lossCount struct {
	acked, lost int
	losses      int
}

func (l *lossCount) addLost(n int) {
	l.lost += n
	l.losses++
}

func (l *lossCount) add(o lossCount) {
	l.acked += o.acked
	l.lost += o.lost
	l.losses += o.losses
}

// rate returns the loss rate in thousandths of the bytes resolved, and
// whether at least minBytes were resolved.
func (l *lossCount) rate(minBytes int) (uint64, bool) {
	total := l.acked + l.lost
	if total < minBytes || total == 0 {
		return 0, false
	}
	return uint64(l.lost) * gainUnit / uint64(total), true
}
