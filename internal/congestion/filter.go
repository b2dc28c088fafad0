package congestion

// maxFilter is a windowed maximum: the largest value seen over the last
// window ticks (round trips), kept as the best, second-best and
// third-best samples of successive sub-windows (Kathleen Nichols'
// algorithm, as BBR uses for the bottleneck bandwidth,
// draft-ietf-ccwg-bbr-02 §5.5.5).
type maxFilter struct {
	s [3]tick
}

type tick struct {
	v uint64
	t uint64
}

// get returns the current maximum.
func (f *maxFilter) get() uint64 { return f.s[0].v }

// reset forgets everything and starts from v at t.
func (f *maxFilter) reset(v, t uint64) {
	f.s = [3]tick{{v, t}, {v, t}, {v, t}}
}

// update takes sample v at tick t and returns the maximum over the
// window ticks ending at t.
func (f *maxFilter) update(v, t, window uint64) uint64 {
	n := tick{v, t}
	if v >= f.s[0].v || t-f.s[2].t > window {
		f.reset(v, t)
		return v
	}
	if v >= f.s[1].v {
		f.s[1], f.s[2] = n, n
	} else if v >= f.s[2].v {
		f.s[2] = n
	}
	// Age the samples out of the window.
	dt := t - f.s[0].t
	switch {
	case dt > window:
		f.s[0], f.s[1], f.s[2] = f.s[1], f.s[2], n
		if t-f.s[0].t > window {
			f.s[0], f.s[1] = f.s[1], f.s[2]
		}
	case f.s[1].t == f.s[0].t && dt > window/4:
		f.s[1], f.s[2] = n, n
	case f.s[2].t == f.s[1].t && dt > window/2:
		f.s[2] = n
	}
	return f.s[0].v
}
