// Package wait holds the one way the loadgen's goroutines sleep: until a
// deadline or until their context ends, whichever comes first.
package wait

import (
	"context"
	"time"
)

// Until waits for deadline; false means ctx ended first. With a deadline
// already past and ctx already ended, either answer may come (as with any
// select).
func Until(ctx context.Context, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
