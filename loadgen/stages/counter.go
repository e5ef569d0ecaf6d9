package stages

import (
	"sync/atomic"
	"time"
)

// Counter is a counter that a waiter can block on until it reaches a
// target. Add may be called from any goroutine; notify holds at most one
// pending wake-up, so adders never block.
type Counter struct {
	value  *atomic.Int64
	notify chan struct{}
}

func NewCounter() Counter {
	return Counter{value: new(atomic.Int64), notify: make(chan struct{}, 1)}
}

// Add increases the counter and wakes a waiter.
func (c *Counter) Add(n int64) {
	if n == 0 {
		return
	}
	c.value.Add(n)
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// Load returns the counter.
func (c *Counter) Load() int64 { return c.value.Load() }

// WaitFor returns true once the counter reaches target, false if deadline
// passes first.
func (c *Counter) WaitFor(target int64, deadline time.Time) bool {
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
