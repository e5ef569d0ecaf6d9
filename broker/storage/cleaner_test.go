package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

// keyedBatch builds a batch of records with the given keys (value nil for
// a key prefixed "-": a tombstone) from idempotent producer 7.
func keyedBatch(t testing.TB, seq int32, ts int64, valueSize int, keys ...string) []byte {
	t.Helper()
	options := wire.PlainBatchOptions()
	options.ProducerID, options.ProducerEpoch, options.BaseSequence = 7, 0, seq
	var records []wire.BuilderRecord
	for _, key := range keys {
		record := wire.BuilderRecord{TimestampMillis: ts, Key: []byte(key), Value: make([]byte, valueSize)}
		if key[0] == '-' {
			record.Key, record.Value = []byte(key[1:]), nil
		}
		records = append(records, record)
	}
	batch, err := wire.BuildBatch(options, records)
	if err != nil {
		t.Fatal(err)
	}
	return batch
}

// TestCleanKeepsLatestAndLeavesGaps: after a clean, a read from a removed
// offset returns the next batch, offsets keep their values, the stats see
// nothing dirty, and the next clean starts at the checkpointed offset.
func TestCleanKeepsLatestAndLeavesGaps(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.UnixMilli(10_000)}
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 1 << 20, Now: clock.Now})
	for i := range 10 {
		mustAppend(t, l, keyedBatch(t, int32(i), 10_000, 10, "a", "b")) // offsets 2i, 2i+1
	}
	last := mustAppend(t, l, keyedBatch(t, 10, 10_000, 10, "a"))
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil { // fsync never: the recovery point passes the rolled segment
		t.Fatal(err)
	}
	stats, err := l.CleanableStats(CleanOptions{UpperBound: l.LogEndOffset()})
	if err != nil || stats.DirtyRatio() != 1 || stats.CleanableEnd != last.LastOffset+1 {
		t.Fatalf("stats before the clean: %+v (ratio %v), %v", stats, stats.DirtyRatio(), err)
	}
	result, err := l.Clean(CleanOptions{UpperBound: l.LogEndOffset(), DeleteRetention: time.Hour})
	if err != nil || result.FirstDirtyOffset != last.LastOffset+1 || result.RecordsRemoved != 19 || result.SegmentsRewritten != 1 {
		t.Fatalf("clean: %+v, %v", result, err)
	}
	// Offset 0 holds a removed "a": the read starts at the batch holding the last "b" (18..19).
	data, err := l.ReadBatches(0, l.LogEndOffset(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	view, _ := wire.ParseBatch(data)
	if view.BaseOffset() != 18 || view.LastOffset() != 19 || view.RecordCount() != 1 {
		t.Fatalf("first batch after the clean: %d..%d with %d records", view.BaseOffset(), view.LastOffset(), view.RecordCount())
	}
	if stats, _ := l.CleanableStats(CleanOptions{UpperBound: l.LogEndOffset()}); stats.DirtyBytes != 0 || stats.FirstDirtyOffset != 21 {
		t.Fatalf("stats after the clean: %+v", stats)
	}
	// A clean restart keeps the compacted segment (with its gaps) and the checkpoint.
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, report := openTestLog(t, dir, Options{SegmentBytes: 1 << 20, Now: clock.Now})
	if !report.CleanShutdown || reopened.LogEndOffset() != 21 {
		t.Fatalf("reopen: %+v, end %d", report, reopened.LogEndOffset())
	}
	if stats, _ := reopened.CleanableStats(CleanOptions{UpperBound: 21}); stats.FirstDirtyOffset != 21 {
		t.Fatalf("checkpoint lost: %+v", stats)
	}
}

// TestCleanCrashAtEveryStep fails every write, sync and rename of a clean
// in turn, crashes, and checks that recovery yields the log either before
// or after the clean — never a mix, never a lost record.
func TestCleanCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	points := 0
	for _, kind := range []string{"write", "sync", "rename"} {
		for n := 1; n < 200; n++ {
			fs := NewFaultFS()
			dir := t.TempDir()
			options := Options{FS: fs, SegmentBytes: 600, Fsync: FsyncPolicy{Mode: FsyncAlways}}
			l, _ := openTestLog(t, dir, options)
			for i := range 40 {
				mustAppend(t, l, keyedBatch(t, int32(i), time.Now().UnixMilli(), 20, fmt.Sprint("k", i%5), fmt.Sprint("-k", (i+1)%7)))
			}
			end := l.LogEndOffset()
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			before := latestRead(cleanRunFor(t, l).readLog(end))
			map[string]func(int){"write": fs.FailWrite, "sync": fs.FailSync, "rename": fs.FailRename}[kind](n)
			_, cleanErr := l.Clean(CleanOptions{UpperBound: end, DeleteRetention: time.Hour})
			if cleanErr == nil {
				break // the clean has fewer steps of this kind
			}
			points++
			if err := fs.Crash(uint64(n), n%2 == 0); err != nil {
				t.Fatal(err)
			}
			l.abandon()
			reopened, report := openTestLog(t, dir, options)
			if reopened.LogEndOffset() != end || report.TruncatedAt >= 0 {
				t.Fatalf("%s %d: recovered end %d (%+v), want %d", kind, n, reopened.LogEndOffset(), report, end)
			}
			after := latestRead(cleanRunFor(t, reopened).readLog(end))
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("%s %d (%v): latest values %v, want %v", kind, n, cleanErr, after, before)
			}
			entries, _ := os.ReadDir(dir)
			for _, entry := range entries {
				if filepath.Ext(entry.Name()) == cleanedSuffix || filepath.Ext(entry.Name()) == swapSuffix {
					t.Fatalf("%s %d: leftover %s after recovery", kind, n, entry.Name())
				}
			}
			if _, err := reopened.Clean(CleanOptions{UpperBound: end, DeleteRetention: time.Hour}); err != nil {
				t.Fatalf("%s %d: clean after recovery: %v", kind, n, err)
			}
		}
	}
	t.Logf("%d crash points", points)
	if points < 10 {
		t.Fatalf("only %d crash points", points)
	}
}

// cleanRunFor wraps a log for cleanRun's read helpers.
func cleanRunFor(t *testing.T, l *Log) *cleanRun { return &cleanRun{t: t, log: l} }

// TestCleanThrottle checks log.cleaner.io.max.bytes.per.second bounds the rate.
func TestCleanThrottle(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 64 << 10})
	for i := range 100 {
		mustAppend(t, l, keyedBatch(t, int32(i), 1, 1000, fmt.Sprint("k", i%3)))
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	result, err := l.Clean(CleanOptions{UpperBound: l.LogEndOffset(), MaxBytesPerSecond: 200 << 10})
	if err != nil {
		t.Fatal(err)
	}
	moved := result.BytesRead + result.BytesWritten
	if moved < 100_000 {
		t.Fatalf("clean moved %d bytes: %+v", moved, result)
	}
	if minimum := time.Duration(float64(moved) / float64(200<<10) * float64(time.Second)); time.Since(start) < minimum*9/10 {
		t.Fatalf("%d bytes in %v, faster than 200 KiB/s (at least %v)", moved, time.Since(start), minimum)
	}
}

// BenchmarkClean cleans 8 MiB of dirty keyed log (10,000 keys, 10%
// tombstones, 1 MiB segments); MB/s counts dirty bytes cleaned.
func BenchmarkClean(b *testing.B) {
	template := b.TempDir()
	l, _ := openTestLog(b, template, Options{SegmentBytes: 1 << 20})
	random := rand.New(rand.NewPCG(1, 2))
	for i := 0; l.Size() < 8<<20; i++ {
		keys := make([]string, 16)
		for j := range keys {
			keys[j] = fmt.Sprint("key-", random.IntN(10_000))
			if random.IntN(10) == 0 {
				keys[j] = "-" + keys[j]
			}
		}
		mustAppend(b, l, keyedBatch(b, int32(i*16), time.Now().UnixMilli(), 100, keys...))
	}
	if err := l.Roll(); err != nil {
		b.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	dirty, end := l.Size(), l.LogEndOffset()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(dirty)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		copyDir(b, template, dir)
		copy, _, err := Open(dir, Options{SegmentBytes: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := copy.Clean(CleanOptions{UpperBound: end, DeleteRetention: time.Hour}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := copy.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// copyDir copies the regular files of src into dst.
func copyDir(b *testing.B, src, dst string) {
	entries, err := os.ReadDir(src)
	if err != nil {
		b.Fatal(err)
	}
	for _, entry := range entries {
		in, err := os.Open(filepath.Join(src, entry.Name()))
		if err != nil {
			b.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dst, entry.Name()))
		if err == nil {
			_, err = io.Copy(out, in)
			err = errors.Join(err, out.Close())
		}
		in.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}

// TestCleanAbort: a Clean whose Abort channel is closed stops with
// ErrCleanAborted, changes nothing, and a later Clean does the work.
func TestCleanAbort(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 1 << 20})
	for i := range 10 {
		mustAppend(t, l, keyedBatch(t, int32(i), 10_000, 10, "a", "b"))
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	before := l.Size()
	abort := make(chan struct{})
	close(abort)
	if _, err := l.Clean(CleanOptions{UpperBound: l.LogEndOffset(), Abort: abort}); !errors.Is(err, ErrCleanAborted) {
		t.Fatalf("aborted clean: %v, want ErrCleanAborted", err)
	}
	if after := l.Size(); after != before {
		t.Fatalf("aborted clean changed the log: %d bytes, had %d", after, before)
	}
	result, err := l.Clean(CleanOptions{UpperBound: l.LogEndOffset()})
	if err != nil || result.RecordsRemoved != 18 {
		t.Fatalf("clean after the abort: %+v, %v", result, err)
	}
}

// TestAppendReplicaGaps: a follower appends the leader's compacted batches
// at their offsets, gaps included; a read from inside a gap returns the
// next batch, and recovery (after a crash: no clean-shutdown marker, no
// checkpoint) accepts the gaps and keeps the offsets. A batch below the
// log end is refused.
func TestAppendReplicaGaps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, _ := openTestLog(t, dir, Options{SegmentBytes: 1 << 20})
	mustAppend(t, l, keyedBatch(t, 0, 10_000, 10, "a", "b")) // 0..1
	gapped := keyedBatch(t, 1, 10_000, 10, "c")
	binary.BigEndian.PutUint64(gapped, 7)
	second := keyedBatch(t, 2, 10_000, 10, "d", "e")
	binary.BigEndian.PutUint64(second, 12)
	result, err := l.AppendReplica(append(gapped, second...))
	if err != nil || result.FirstOffset != 7 || result.LastOffset != 13 || l.LogEndOffset() != 14 {
		t.Fatalf("append with gaps: %+v, %v, log end %d", result, err, l.LogEndOffset())
	}
	below := keyedBatch(t, 3, 10_000, 10, "f")
	binary.BigEndian.PutUint64(below, 13)
	if _, err := l.AppendReplica(below); err == nil {
		t.Fatal("a replica batch below the log end was accepted")
	}
	check := func(l *Log, label string) {
		t.Helper()
		data, err := l.ReadBatches(3, l.LogEndOffset(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		view, err := wire.ParseBatch(data)
		if err != nil || view.BaseOffset() != 7 || l.LogEndOffset() != 14 {
			t.Fatalf("%s: read in the gap at 3: %v, first batch at %d, log end %d", label, err, view.BaseOffset(), l.LogEndOffset())
		}
	}
	check(l, "before a restart")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".clean-shutdown", "checkpoint"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	l, report := openTestLog(t, dir, Options{SegmentBytes: 1 << 20})
	check(l, fmt.Sprintf("after recovery %+v", report))
}
