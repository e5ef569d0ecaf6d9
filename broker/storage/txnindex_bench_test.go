package storage

import (
	"context"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

// BenchmarkAppendAbortedTxn measures one aborted transaction as the broker
// writes it: a 1 KiB data batch, the abort marker, its transaction index
// entry (AppendAbortedTxn) and, with fsync always, WaitDurable of the
// marker — under fsync never and always, on the OS file system; and with
// fsync always from 8 goroutines at once (per GOMAXPROCS), whose
// WaitDurable calls may share an fdatasync (group commit). It uses
// only the API the log had before the index stopped syncing per entry, so
// the same file builds against both versions for a before/after run.
//
//	go test ./broker/storage -run '^$' -bench AppendAbortedTxn -benchmem
func BenchmarkAppendAbortedTxn(b *testing.B) {
	for _, policy := range []string{"never", "always"} {
		b.Run("fsync="+policy, func(b *testing.B) {
			fsync, err := ParseFsyncPolicy(policy)
			if err != nil {
				b.Fatal(err)
			}
			l, _ := openTestLog(b, b.TempDir(), Options{Fsync: fsync})
			data := testBatch(b, 1, 4, 256, time.Now().UnixMilli())
			marker := wire.BuildControlBatch(7, 0, false, 0, time.Now().UnixMilli())
			b.ReportAllocs()
			for b.Loop() {
				first, err := l.Append(data)
				if err != nil {
					b.Fatal(err)
				}
				end, err := l.Append(marker)
				if err != nil {
					b.Fatal(err)
				}
				txn := AbortedTxn{ProducerID: 7, FirstOffset: first.FirstOffset, LastOffset: end.LastOffset, LastStableOffset: first.FirstOffset}
				if err := l.AppendAbortedTxn(txn); err != nil {
					b.Fatal(err)
				}
				if fsync.Mode == FsyncAlways {
					if err := l.WaitDurable(context.Background(), end.LastOffset); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	b.Run("fsync=always/concurrent-8", func(b *testing.B) {
		l, _ := openTestLog(b, b.TempDir(), Options{Fsync: FsyncPolicy{Mode: FsyncAlways}})
		b.ReportAllocs()
		b.SetParallelism(8)
		b.RunParallel(func(pb *testing.PB) {
			data := testBatch(b, 1, 4, 256, time.Now().UnixMilli())
			marker := wire.BuildControlBatch(7, 0, false, 0, time.Now().UnixMilli())
			for pb.Next() {
				first, err := l.Append(data)
				if err != nil {
					b.Error(err)
					return
				}
				end, err := l.Append(marker)
				if err == nil {
					err = l.AppendAbortedTxn(AbortedTxn{ProducerID: 7, FirstOffset: first.FirstOffset, LastOffset: end.LastOffset, LastStableOffset: first.FirstOffset})
				}
				if err == nil {
					err = l.WaitDurable(context.Background(), end.LastOffset)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
