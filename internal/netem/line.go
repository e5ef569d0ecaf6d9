package netem

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/bytebufferpool"
)

// MaxQueued bounds the bytes a Line holds undelivered; Send blocks beyond
// it (unless the line is empty), so a capped or delayed line back-pressures
// its reader the way a full TCP window does.
const MaxQueued = 8 << 20

// ErrClosed is returned by Send on a closed line.
var ErrClosed = errors.New("netem: line closed")

// Pacer is the transmitter of one link: lines that share a link share a
// Pacer, so a bandwidth cap holds for all of them together. The zero
// Pacer is ready; it is safe for concurrent use.
type Pacer struct {
	mu   sync.Mutex
	free time.Time // when the link has transmitted everything reserved
}

// reserve books n bytes at rate from now and returns when they have been
// transmitted.
func (p *Pacer) reserve(now time.Time, n int, rate int64) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := now
	if p.free.After(start) {
		start = p.free
	}
	p.free = start.Add(time.Duration(float64(n) / float64(rate) * float64(time.Second)))
	return p.free
}

// Stats counts what a line did.
type Stats struct {
	Sends       int64 // Send calls that queued data
	Bytes       int64 // bytes queued
	Lost        int64 // sends held for a retransmission
	Delivered   int64 // sends written to the destination
	MaxLateness time.Duration
}

// Line delivers what it is sent to its destination after the link's
// impairment, in order (see the package doc).
//
// Goroutines: Send is called by one sender (the reader of the other side
// of the connection); the line's own goroutine writes to the
// destination. They share the queue under mu.
type Line struct {
	dst    io.Writer
	pacer  *Pacer
	seed   uint64
	onFail func(error) // called once, from the line's goroutine, when a write fails

	mu      sync.Mutex
	wake    *sync.Cond // signalled on enqueue, dequeue and close
	queue   []item
	queued  int
	last    time.Time // delivery time of the last queued send
	ordinal uint64    // sends so far, for the samples
	closed  bool
	err     error

	stats struct {
		sends, bytes, lost, delivered atomic.Int64
		maxLateness                   atomic.Int64
	}
	done chan struct{} // closed when the line's goroutine ends
}

type item struct {
	at     time.Time
	buffer *bytebufferpool.ByteBuffer
}

// NewLine starts a line writing to dst. pacer may be nil (a bandwidth cap
// then holds for this line alone); seed fixes the samples; onFail, when
// not nil, learns of a failed write (the line is closed by then).
func NewLine(dst io.Writer, pacer *Pacer, seed uint64, onFail func(error)) *Line {
	if pacer == nil {
		pacer = &Pacer{}
	}
	l := &Line{dst: dst, pacer: pacer, seed: seed, onFail: onFail, done: make(chan struct{})}
	l.wake = sync.NewCond(&l.mu)
	go l.deliver()
	return l
}

// Send copies b and queues it for delivery under link, as sent at now. It
// blocks while MaxQueued bytes are undelivered, and fails once the line is
// closed (by Close or a failed write).
func (l *Line) Send(now time.Time, link Link, b []byte) error { return l.SendParts(now, link, b) }

// SendParts is Send of the concatenated parts, delivered in one write (a
// frame's size prefix and body).
func (l *Line) SendParts(now time.Time, link Link, parts ...[]byte) error {
	buffer := bytebufferpool.Get()
	buffer.B = buffer.B[:0]
	for _, part := range parts {
		buffer.B = append(buffer.B, part...)
	}
	b := buffer.B
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.closed && l.queued > 0 && l.queued+len(b) > MaxQueued {
		l.wake.Wait()
	}
	if l.closed {
		bytebufferpool.Put(buffer)
		if l.err != nil {
			return l.err
		}
		return ErrClosed
	}
	ready := now
	if link.Rate > 0 {
		ready = l.pacer.reserve(now, len(b), link.Rate)
	}
	n := l.ordinal
	l.ordinal++
	delay, lost := link.sample(len(b), Unit(l.seed, n, 1), Unit(l.seed, n, 2), Unit(l.seed, n, 3))
	at := ready.Add(delay)
	if at.Before(l.last) { // TCP delivers in order: wait for what was sent before
		at = l.last
	}
	l.last = at
	l.queue = append(l.queue, item{at: at, buffer: buffer})
	l.queued += len(b)
	l.stats.sends.Add(1)
	l.stats.bytes.Add(int64(len(b)))
	if lost {
		l.stats.lost.Add(1)
	}
	l.wake.Broadcast()
	return nil
}

// deliver is the line's goroutine: it writes each queued send at its time.
// It takes a send off the queue before sleeping on it, so Close never
// returns a buffer to the pool that a write is still reading; the bytes
// stay counted in queued until written, for Send's back-pressure.
func (l *Line) deliver() {
	defer close(l.done)
	for {
		l.mu.Lock()
		for !l.closed && len(l.queue) == 0 {
			l.wake.Wait()
		}
		if l.closed {
			l.releaseLocked()
			l.mu.Unlock()
			return
		}
		next := l.queue[0]
		l.queue = l.queue[1:]
		l.mu.Unlock()
		if !sleepUntil(next.at, l) {
			bytebufferpool.Put(next.buffer)
			return
		}
		late := time.Since(next.at)
		_, err := l.dst.Write(next.buffer.B)
		size := len(next.buffer.B)
		bytebufferpool.Put(next.buffer)
		l.mu.Lock()
		if l.closed { // closed while writing: Close released the rest
			l.mu.Unlock()
			return
		}
		l.queued -= size
		l.stats.delivered.Add(1)
		if late > time.Duration(l.stats.maxLateness.Load()) {
			l.stats.maxLateness.Store(int64(late))
		}
		if err != nil {
			l.err = err
			l.closed = true
			l.releaseLocked()
		}
		l.wake.Broadcast()
		l.mu.Unlock()
		if err != nil {
			if l.onFail != nil {
				l.onFail(err)
			}
			return
		}
	}
}

// releaseLocked returns the undelivered buffers to the pool (l.mu held).
func (l *Line) releaseLocked() {
	for _, queued := range l.queue {
		bytebufferpool.Put(queued.buffer)
	}
	l.queue, l.queued = nil, 0
}

// isClosed reports whether Close was called (sleepUntil's stop check).
func (l *Line) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Drain waits until everything sent has been delivered, the line is
// closed, or timeout passes; it reports whether the queue emptied.
func (l *Line) Drain(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		l.mu.Lock()
		l.wake.Broadcast()
		l.mu.Unlock()
	})
	defer timer.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.closed && l.queued > 0 && time.Now().Before(deadline) {
		l.wake.Wait()
	}
	return l.queued == 0 && l.err == nil
}

// Close drops what is undelivered and stops the line's goroutine (Done
// says when it has ended: a write in progress finishes first). It is
// idempotent.
func (l *Line) Close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		l.releaseLocked()
		l.wake.Broadcast()
	}
	l.mu.Unlock()
}

// Done is closed when the line's goroutine has ended.
func (l *Line) Done() <-chan struct{} { return l.done }

// Stats returns the line's counts so far.
func (l *Line) Stats() Stats {
	return Stats{Sends: l.stats.sends.Load(), Bytes: l.stats.bytes.Load(), Lost: l.stats.lost.Load(),
		Delivered: l.stats.delivered.Load(), MaxLateness: time.Duration(l.stats.maxLateness.Load())}
}
