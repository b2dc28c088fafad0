package porous

// deque is a FIFO on a slice that reuses its storage: popped slots are
// zeroed (so that they keep nothing reachable) and the live part is moved
// to the front when the slice is full.
type deque[T any] struct {
	buf  []T
	head int
}

func (q *deque[T]) len() int { return len(q.buf) - q.head }

// front returns the oldest element; the deque must not be empty.
func (q *deque[T]) front() *T { return &q.buf[q.head] }

func (q *deque[T]) push(v T) {
	if q.head > 0 && len(q.buf) == cap(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, v)
}

// pop removes the oldest element; the deque must not be empty.
func (q *deque[T]) pop() {
	var zero T
	q.buf[q.head] = zero
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
}

// reset empties the deque, keeping its storage.
func (q *deque[T]) reset() {
	clear(q.buf)
	q.buf, q.head = q.buf[:0], 0
}
