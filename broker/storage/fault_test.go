package storage

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func TestWriteFailureIsSticky(t *testing.T) {
	t.Parallel()
	fs := NewFaultFS()
	dir := t.TempDir()
	options := Options{FS: fs, Fsync: FsyncPolicy{Mode: FsyncAlways}}
	l, _ := openTestLog(t, dir, options)
	random := rand.New(rand.NewPCG(31, 32))
	results := appendRandom(t, l, random, 0, 5)
	if err := l.WaitDurable(context.Background(), results[4].LastOffset); err != nil {
		t.Fatal(err)
	}
	fs.FailWrite(1) // the next append's write is torn and fails
	_, err := l.Append(testBatch(t, 5, 3, 100, 1))
	if !errors.Is(err, ErrInjected) {
		t.Fatalf("append: %v, want the injected error", err)
	}
	for name, err := range map[string]error{
		"append":       func() error { _, err := l.Append(testBatch(t, 6, 1, 1, 1)); return err }(),
		"wait durable": l.WaitDurable(context.Background(), results[4].LastOffset),
		"roll":         l.Roll(),
		"flush":        l.Flush(),
	} {
		if !errors.Is(err, ErrInjected) {
			t.Errorf("%s after a write failure: %v, want the same sticky error", name, err)
		}
	}
	// Reads of what was acknowledged still work; the torn bytes are not served.
	if got := readAll(t, l); len(got) != 5 || l.LogEndOffset() != results[4].LastOffset+1 {
		t.Fatalf("read %d batches, end %d", len(got), l.LogEndOffset())
	}
	l.abandon()
	reopened, report := openTestLog(t, dir, Options{FS: fs})
	if report.TruncatedAt != results[4].LastOffset+1 || len(readAll(t, reopened)) != 5 {
		t.Fatalf("recovery after a torn write: %+v", report)
	}
}

func TestSyncFailureIsSticky(t *testing.T) {
	t.Parallel()
	fs := NewFaultFS()
	l, _ := openTestLog(t, t.TempDir(), Options{FS: fs, Fsync: FsyncPolicy{Mode: FsyncAlways}})
	first := mustAppend(t, l, testBatch(t, 0, 1, 10, 1))
	fs.FailSync(1)
	err := l.WaitDurable(context.Background(), first.LastOffset)
	if !errors.Is(err, ErrInjected) {
		t.Fatalf("wait durable: %v, want the injected sync error", err)
	}
	if _, err2 := l.Append(testBatch(t, 1, 1, 10, 1)); !errors.Is(err2, ErrInjected) || err2.Error() != err.Error() {
		t.Fatalf("append after a sync failure: %v, want %v", err2, err)
	}
	if err2 := l.WaitDurable(context.Background(), first.LastOffset); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("wait durable again: %v, want %v", err2, err)
	}
}

func TestGroupCommitSharesOneSync(t *testing.T) {
	t.Parallel()
	fs := NewFaultFS()
	l, _ := openTestLog(t, t.TempDir(), Options{FS: fs, Fsync: FsyncPolicy{Mode: FsyncAlways}})
	var results []AppendResult
	for i := range 20 {
		results = append(results, mustAppend(t, l, testBatch(t, int32(i), 1, 10, 1)))
	}
	_, syncsBefore := fs.Counts()
	var group sync.WaitGroup
	errs := make(chan error, len(results))
	for _, r := range results {
		group.Go(func() { errs <- l.WaitDurable(context.Background(), r.LastOffset) })
	}
	group.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, syncs := fs.Counts(); syncs-syncsBefore != 1 {
		t.Fatalf("%d syncs for 20 concurrent waiters, want 1 shared", syncs-syncsBefore)
	}
	if err := l.WaitDurable(context.Background(), l.LogEndOffset()); !errors.Is(err, ErrNotWritten) {
		t.Fatalf("wait for an unwritten offset: %v", err)
	}
}

func TestIntervalSync(t *testing.T) {
	t.Parallel()
	fs := NewFaultFS()
	l, _ := openTestLog(t, t.TempDir(), Options{FS: fs, Fsync: FsyncPolicy{Mode: FsyncInterval, Interval: 5 * time.Millisecond}})
	result := mustAppend(t, l, testBatch(t, 0, 1, 10, 1))
	_, syncsBefore := fs.Counts()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.WaitDurable(ctx, result.LastOffset); err != nil {
		t.Fatal(err)
	}
	if _, syncs := fs.Counts(); syncs <= syncsBefore {
		t.Fatal("interval wait returned without a sync")
	}
	// A crash now keeps the batch: it was synced.
	if err := fs.Crash(1, false); err != nil {
		t.Fatal(err)
	}
	l.abandon()
	reopened, _ := openTestLog(t, l.Dir(), Options{FS: fs})
	if reopened.LogEndOffset() != result.LastOffset+1 {
		t.Fatalf("synced batch lost: end %d", reopened.LogEndOffset())
	}
}

func TestCrashDropsUnsyncedWrites(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			fs := NewFaultFS()
			dir := t.TempDir()
			options := Options{FS: fs, SegmentBytes: 2000, IndexIntervalBytes: 200, Fsync: FsyncPolicy{Mode: FsyncAlways}}
			l, _ := openTestLog(t, dir, options)
			random := rand.New(rand.NewPCG(seed, 33))
			results := appendRandom(t, l, random, 0, 30)
			durable := results[19].LastOffset
			if err := l.WaitDurable(context.Background(), durable); err != nil {
				t.Fatal(err)
			}
			if seed%2 == 0 {
				if err := l.Truncate(results[15].FirstOffset); err != nil {
					t.Fatal(err)
				}
				durable = results[14].LastOffset
				results = results[:15]
				results = append(results, appendRandom(t, l, random, 100, 10)...)
			}
			if err := fs.Crash(seed, seed%4 < 2); err != nil {
				t.Fatal(err)
			}
			l.abandon()
			reopened, report := openTestLog(t, dir, options)
			stored := readAll(t, reopened)
			// Everything durable is there; whatever else survived is a prefix of what was appended.
			if reopened.LogEndOffset() <= durable {
				t.Fatalf("durable offset %d lost: end %d (%+v)", durable, reopened.LogEndOffset(), report)
			}
			if len(stored) > len(results) {
				t.Fatalf("%d batches after crash, only %d appended", len(stored), len(results))
			}
			for i, b := range stored {
				if b.base != results[i].FirstOffset || b.last != results[i].LastOffset {
					t.Fatalf("batch %d is %d..%d, appended %d..%d", i, b.base, b.last, results[i].FirstOffset, results[i].LastOffset)
				}
			}
		})
	}
}
