package netem

import (
	"runtime"
	"sync/atomic"
	"time"
)

// coarseMargin is how long before a deadline the timer sleep ends and the
// precise one takes over; Go's timers can fire up to about a millisecond
// late and never early.
const coarseMargin = 2 * time.Millisecond

// pollInterval bounds a single timer sleep, so a closed line notices
// within it.
const pollInterval = 20 * time.Millisecond

// overshoot is the learned mean overshoot of the precise sleep, in
// nanoseconds (an exponential moving average over every line).
var overshoot atomic.Int64

func init() { overshoot.Store(int64(60 * time.Microsecond)) }

// sleepUntil waits until at, never returning before it: on Go timers
// until coarseMargin before it (checking the line every pollInterval),
// then in preciseSleep less the learned overshoot, then yielding the
// processor for whatever is left. It returns false when the line was
// closed meanwhile.
func sleepUntil(at time.Time, l *Line) bool {
	for {
		remaining := time.Until(at)
		if remaining <= coarseMargin {
			break
		}
		time.Sleep(min(remaining-coarseMargin, pollInterval))
		if l.isClosed() {
			return false
		}
	}
	remaining := time.Until(at) - time.Duration(overshoot.Load())
	if remaining > 0 {
		start := time.Now()
		preciseSleep(remaining)
		over := time.Since(start) - remaining
		// Average with weight 1/8; clamp so a descheduled thread does not
		// teach a huge value.
		over = max(0, min(over, 500*time.Microsecond))
		old := overshoot.Load()
		overshoot.Store(old + (int64(over)-old)/8)
	}
	// The learned overshoot can exceed this sleep's: never deliver early,
	// yield the few microseconds left.
	for time.Now().Before(at) {
		runtime.Gosched()
	}
	return !l.isClosed()
}
