//go:build !linux

package netem

import "time"

// preciseSleep sleeps d on a Go timer: on systems other than Linux the
// delays are as precise as the runtime's timers.
func preciseSleep(d time.Duration) { time.Sleep(d) }
