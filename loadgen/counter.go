package loadgen

import (
	"sync/atomic"
	"time"
)

// liveCounter is a counter that a waiter can block on until it reaches a
// target. add may be called from any goroutine; notify holds at most one
// pending wake-up, so adders never block.
type liveCounter struct {
	value  *atomic.Int64
	notify chan struct{}
}

func newLiveCounter() liveCounter {
	return liveCounter{value: new(atomic.Int64), notify: make(chan struct{}, 1)}
}

// add increases the counter and wakes a waiter.
func (c *liveCounter) add(n int64) {
	if n == 0 {
		return
	}
	c.value.Add(n)
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// load returns the counter.
func (c *liveCounter) load() int64 { return c.value.Load() }

// waitFor returns true once the counter reaches target, false if deadline
// passes first.
func (c *liveCounter) waitFor(target int64, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for c.value.Load() < target {
		select {
		case <-c.notify:
		case <-timer.C:
			return c.value.Load() >= target
		}
	}
	return true
}
