package storage

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const benchBatchBytes = 16 << 10

// benchBatch builds one batch of about 16 KiB.
func benchBatch(b *testing.B) []byte {
	valueSize := benchBatchBytes / 16
	batch := testBatch(b, 1, 16, valueSize, time.Now().UnixMilli())
	valueSize -= (len(batch) - benchBatchBytes + 15) / 16
	batch = testBatch(b, 1, 16, valueSize, time.Now().UnixMilli())
	if len(batch) > benchBatchBytes || len(batch) < benchBatchBytes-512 {
		b.Fatalf("bench batch is %d bytes", len(batch))
	}
	return batch
}

// BenchmarkAppend compares appends of 16 KiB batches under each fsync
// policy with a plain os.File.Write loop of the same bytes, in one run.
func BenchmarkAppend(b *testing.B) {
	b.Run("plain-write", func(b *testing.B) {
		batch := benchBatch(b)
		file, err := os.Create(filepath.Join(b.TempDir(), "plain"))
		if err != nil {
			b.Fatal(err)
		}
		defer file.Close()
		b.SetBytes(int64(len(batch)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := file.Write(batch); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, policy := range []string{"never", "interval:10ms"} {
		b.Run("fsync="+policy, func(b *testing.B) {
			fsync, err := ParseFsyncPolicy(policy)
			if err != nil {
				b.Fatal(err)
			}
			l, _ := openTestLog(b, b.TempDir(), Options{Fsync: fsync})
			batch := benchBatch(b)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Append(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("fsync=always/concurrent-16", func(b *testing.B) {
		l, _ := openTestLog(b, b.TempDir(), Options{Fsync: FsyncPolicy{Mode: FsyncAlways}})
		b.SetBytes(benchBatchBytes)
		b.ReportAllocs()
		b.SetParallelism(8) // 8 × GOMAXPROCS producers share each fdatasync
		b.RunParallel(func(pb *testing.PB) {
			batch := benchBatch(b)
			for pb.Next() {
				result, err := l.Append(batch)
				if err == nil {
					err = l.WaitDurable(context.Background(), result.LastOffset)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/float64(l.durability.syncs.Load()), "appends/fdatasync")
	})
	b.Run("never-vs-plain", benchmarkNeverVersusPlain)
}

// benchmarkNeverVersusPlain alternates rounds of log appends (fsync never)
// and plain writes of the same batch and reports the throughput ratio, so
// noise from the shared machine hits both sides alike.
func benchmarkNeverVersusPlain(b *testing.B) {
	const round = 256
	batch := benchBatch(b)
	l, _ := openTestLog(b, b.TempDir(), Options{})
	file, err := os.Create(filepath.Join(b.TempDir(), "plain"))
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	var logTime, plainTime time.Duration
	b.SetBytes(int64(2 * round * len(batch)))
	for b.Loop() {
		start := time.Now()
		for range round {
			if _, err := l.Append(batch); err != nil {
				b.Fatal(err)
			}
		}
		logTime += time.Since(start)
		start = time.Now()
		for range round {
			if _, err := file.Write(batch); err != nil {
				b.Fatal(err)
			}
		}
		plainTime += time.Since(start)
	}
	b.ReportMetric(plainTime.Seconds()/logTime.Seconds(), "never/plain")
}

// BenchmarkRead measures Read of 1 MiB regions (what a fetch sends with
// sendfile) and ReadBatches (a copy into user space) at random offsets of a
// 64 MiB log.
func BenchmarkRead(b *testing.B) {
	l, _ := openTestLog(b, b.TempDir(), Options{SegmentBytes: 16 << 20})
	batch := benchBatch(b)
	for range (64 << 20) / len(batch) {
		mustAppend(b, l, batch)
	}
	end := l.LogEndOffset()
	random := rand.New(rand.NewPCG(61, 62))
	b.Run("regions-1MiB", func(b *testing.B) {
		b.SetBytes(1 << 20)
		b.ReportAllocs()
		for b.Loop() {
			result, err := l.Read(random.Int64N(end), end, 1<<20, true)
			if err != nil {
				b.Fatal(err)
			}
			result.Release()
		}
	})
	b.Run("copy-1MiB", func(b *testing.B) {
		b.SetBytes(1 << 20)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.ReadBatches(random.Int64N(end), end, 1<<20); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRecovery opens a 1 GiB log (one 1 GiB segment plus a bit, the
// worst case) after a clean shutdown and after a crash, with fsync never
// (the whole active segment is rescanned) and always (checkpoints every 64
// MiB bound the rescan).
func BenchmarkRecovery(b *testing.B) {
	b.Run("clean", func(b *testing.B) {
		dir := buildBenchLog(b, FsyncNever, true)
		b.SetBytes(1 << 30)
		for b.Loop() {
			l, report, err := Open(dir, Options{})
			if err != nil || !report.CleanShutdown {
				b.Fatalf("open: %v %+v", err, report)
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, mode := range []FsyncMode{FsyncNever, FsyncAlways} {
		b.Run("crash/fsync="+mode.String(), func(b *testing.B) {
			dir := buildBenchLog(b, mode, false)
			crashed, err := os.ReadFile(filepath.Join(dir, checkpointFileName))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(1 << 30)
			var scanned int64
			for b.Loop() {
				b.StopTimer() // put the crashed recovery point back
				if err := os.WriteFile(filepath.Join(dir, checkpointFileName), crashed, 0o644); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				l, report, err := Open(dir, Options{Fsync: FsyncPolicy{Mode: mode}})
				if err != nil || report.CleanShutdown {
					b.Fatalf("open: %v %+v", err, report)
				}
				scanned = report.BytesScanned
				l.abandon()
			}
			b.ReportMetric(float64(scanned)/(1<<20), "MiB-rescanned")
		})
	}
}

// buildBenchLog writes 1 GiB of 16 KiB batches into one segment and closes
// the log cleanly, or leaves it as a killed process would.
func buildBenchLog(b *testing.B, mode FsyncMode, clean bool) string {
	b.Helper()
	dir := b.TempDir()
	l, _, err := Open(dir, Options{Fsync: FsyncPolicy{Mode: mode}})
	if err != nil {
		b.Fatal(err)
	}
	batch := benchBatch(b)
	for range (1 << 30) / len(batch) {
		mustAppend(b, l, batch)
	}
	if clean {
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	} else {
		l.abandon()
	}
	return dir
}
