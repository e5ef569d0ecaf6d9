package partition

import (
	"log/slog"
	"testing"

	"github.com/exactly-eos/exactly/broker/storage"
)

// openTestPartition opens a fresh single-replica partition "test-0" in
// dir with the storage defaults (segment bytes from segmentBytes when
// positive), closed when the test ends.
func openTestPartition(tb testing.TB, dir string, segmentBytes int64) *Partition {
	tb.Helper()
	p, err := Open(Config{Topic: "test", Index: 0, Dir: dir, Fresh: true,
		Storage: storage.Options{SegmentBytes: segmentBytes}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Error(err)
		}
	})
	return p
}
