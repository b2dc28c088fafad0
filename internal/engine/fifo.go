package engine

// FIFO is a first-in first-out queue on a slice that reuses its storage:
// removed slots are zeroed (so that they keep nothing reachable) and the
// live part moves to the front when the slice is full. The zero value is
// an empty queue. Engines use it for their send, timer and receive queues.
type FIFO[T any] struct {
	buf  []T
	head int
}

// Len returns the number of elements queued.
func (q *FIFO[T]) Len() int { return len(q.buf) - q.head }

// Front returns the oldest element; the queue must not be empty.
func (q *FIFO[T]) Front() *T { return &q.buf[q.head] }

// Push appends v.
func (q *FIFO[T]) Push(v T) {
	if q.head > 0 && len(q.buf) == cap(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, v)
}

// Pop removes the oldest element; the queue must not be empty.
func (q *FIFO[T]) Pop() {
	var zero T
	q.buf[q.head] = zero
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
}

// Take removes and returns the oldest element, or false when the queue is
// empty.
func (q *FIFO[T]) Take() (T, bool) {
	if q.Len() == 0 {
		var zero T
		return zero, false
	}
	v := *q.Front()
	q.Pop()
	return v, true
}

// Reset empties the queue, keeping its storage.
func (q *FIFO[T]) Reset() {
	clear(q.buf)
	q.buf, q.head = q.buf[:0], 0
}

// Trim frees the storage of an empty queue; the next Push allocates
// anew.
func (q *FIFO[T]) Trim() {
	if q.Len() == 0 {
		q.buf, q.head = nil, 0
	}
}

// Clone returns a copy of q with its own storage, holding the same
// elements (copied shallowly).
func (q *FIFO[T]) Clone() FIFO[T] {
	return FIFO[T]{buf: append([]T(nil), q.buf[q.head:]...)}
}
