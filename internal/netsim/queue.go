package netsim

import "time"

// arrival is one datagram in flight: due at at, sent seq-th.
type arrival struct {
	at  time.Time
	seq uint64
	p   []byte
}

// before orders arrivals by due time, then by send order.
func (a *arrival) before(b *arrival) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
}

// arrivals is a binary min-heap of datagrams in flight.
type arrivals []arrival

func (h *arrivals) push(a arrival) {
	*h = append(*h, a)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].before(&s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

// pop removes and returns the earliest arrival; h must not be empty.
func (h *arrivals) pop() arrival {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s[last] = arrival{} // release the datagram
	s = s[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s[l].before(&s[least]) {
			least = l
		}
		if r < len(s) && s[r].before(&s[least]) {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
	return top
}
