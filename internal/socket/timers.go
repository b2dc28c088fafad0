package socket

import (
	"container/heap"
	"sync"
	"time"
)

// Timers runs the timers of an Endpoint's associations from one runtime
// timer, armed at the earliest deadline: when it fires, one goroutine runs
// every association then due, in deadline order. A timer of its own per
// association would make the runtime start a goroutine for each one that
// fires: a thousand busy streams firing their pacing and retransmission
// timers at once start a thousand goroutines, and the runtime keeps the
// room of the most goroutines it ever ran at once for the life of the
// process.
//
// Arming is lazy: a deadline moved later leaves the runtime timer where
// it was, and a firing with nothing due arms it again for the earliest;
// an idle listener, whose keepalives move every deadline later, so resets
// no runtime timer per datagram.
type Timers struct {
	mu    sync.Mutex
	q     timerHeap
	rt    *time.Timer // fires run; made at the first Set
	armed time.Time   // when rt fires; zero when it is not armed
	due   []*Timer    // the room run uses, kept for the next run
}

// Timer is one association's deadline in its Endpoint's Timers (see Set).
// The zero value is not usable: make one with MakeTimer.
type Timer struct {
	fire func()
	at   time.Time
	i    int // index in the heap plus one; 0 when not queued
}

// MakeTimer returns a Timer that calls fire, in a goroutine of its
// Timers, once its deadline has passed.
func MakeTimer(fire func()) Timer { return Timer{fire: fire} }

// Set arms t to fire at at, or stops it when at is zero; now is the time
// the caller last read. t fires once per Set that arms it, at or after
// at, unless a later Set moves or stops it first.
func (ts *Timers) Set(t *Timer, at, now time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	switch {
	case at.IsZero():
		if t.i > 0 {
			heap.Remove(&ts.q, t.i-1)
			ts.q = shrunk(ts.q)
		}
		return
	case t.i > 0:
		t.at = at
		heap.Fix(&ts.q, t.i-1)
	default:
		t.at = at
		heap.Push(&ts.q, t)
	}
	ts.arm(now)
}

// arm makes the runtime timer fire no later than the earliest deadline.
func (ts *Timers) arm(now time.Time) {
	if len(ts.q) == 0 {
		return
	}
	at := ts.q[0].at
	if !ts.armed.IsZero() && !at.Before(ts.armed) {
		return
	}
	ts.armed = at
	if ts.rt == nil {
		ts.rt = time.AfterFunc(at.Sub(now), ts.run)
	} else {
		ts.rt.Reset(at.Sub(now))
	}
}

// run fires the timers due, in deadline order, outside the lock (a
// timer's function takes its association's lock, which is held while it
// calls Set), and arms the runtime timer for the next.
func (ts *Timers) run() {
	now := time.Now()
	ts.mu.Lock()
	ts.armed = time.Time{}
	due := ts.due[:0]
	ts.due = nil
	for len(ts.q) > 0 && !ts.q[0].at.After(now) {
		due = append(due, heap.Pop(&ts.q).(*Timer))
	}
	ts.q = shrunk(ts.q)
	ts.arm(now)
	ts.mu.Unlock()
	for i, t := range due {
		t.fire()
		due[i] = nil
	}
	ts.mu.Lock()
	if ts.due == nil && cap(due) <= 4*len(ts.q)+64 {
		ts.due = due // kept only while the queue could fill it
	}
	ts.mu.Unlock()
}

// shrunk returns q, or a copy without the room it no longer needs once
// it holds a quarter of its capacity or less (of more than 64), so that a
// listener whose conns ended gives that room back.
func shrunk(q timerHeap) timerHeap {
	if cap(q) <= 64 || len(q) > cap(q)/4 {
		return q
	}
	return append(make(timerHeap, 0, 2*len(q)), q...)
}

// timerHeap orders Timers by deadline: its methods implement
// heap.Interface, and keep each Timer's index (Timer.i) up to date.
type timerHeap []*Timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i+1, j+1
}

func (h *timerHeap) Push(x any) {
	t := x.(*Timer)
	t.i = len(*h) + 1
	*h = append(*h, t)
}

func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.i = 0
	return t
}
