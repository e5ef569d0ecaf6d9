package netem

import (
	"syscall"
	"time"
)

// preciseSleep sleeps d in the nanosleep system call: the calling thread
// blocks (the Go scheduler hands its processor to another thread), and
// wakes within tens of microseconds of d, where a Go timer of an idle
// process wakes at millisecond granularity.
func preciseSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var left syscall.Timespec
		if err := syscall.Nanosleep(&ts, &left); err != syscall.EINTR {
			return
		}
		ts = left
	}
}
