package loadgen

import (
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/livemetrics"
)

// BenchmarkRecordAck is the runner's cost per acknowledged record, with
// the loadgen's /metrics off and on: the difference is what serving them
// adds to the hot path.
func BenchmarkRecordAck(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "metrics-off"
		metrics := newRunMetrics(time.Now().Add(-time.Second))
		if on {
			name, metrics.live = "metrics-on", livemetrics.New().Mode("transactional")
		}
		b.Run(name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				sent := time.Now()
				for pb.Next() {
					metrics.recordAck(ackTimes{sent: sent, created: sent}, sent.Add(3*time.Millisecond), 100)
				}
			})
		})
	}
}
