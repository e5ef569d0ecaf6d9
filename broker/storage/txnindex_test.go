package storage

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

// appendAbort appends a few data batches and an abort marker, and returns
// the aborted transaction they make (the entry is not written).
func appendAbort(t *testing.T, l *Log, producer int64) AbortedTxn {
	t.Helper()
	first := mustAppend(t, l, testBatch(t, 0, 2, 20, 1))
	mustAppend(t, l, testBatch(t, 1, 2, 20, 1))
	marker := mustAppend(t, l, wire.BuildControlBatch(producer, 0, false, 0, 1))
	return AbortedTxn{ProducerID: producer, FirstOffset: first.FirstOffset, LastOffset: marker.LastOffset, LastStableOffset: first.FirstOffset}
}

// requireAborted fails unless the log's index holds exactly want.
func requireAborted(t *testing.T, l *Log, context string, want ...AbortedTxn) {
	t.Helper()
	if got := l.AbortedTxns(0, math.MaxInt64); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: aborted transactions %v, want %v", context, got, want)
	}
}

// onDisk decodes the .txnindex file of the segment at base as it is now.
func onDisk(t *testing.T, dir string, base int64) []AbortedTxn {
	t.Helper()
	data, err := os.ReadFile(segmentFileName(dir, base, txnIndexSuffix))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return decodeAbortedTxns(data)
}

// With fsync always or interval, an entry appended before WaitDurable of its
// marker survives a crash that drops every unsynced write once WaitDurable
// returned, and AppendAbortedTxn itself syncs nothing.
func TestAbortedTxnDurableWithMarker(t *testing.T) {
	for _, policy := range []FsyncPolicy{{Mode: FsyncAlways}, {Mode: FsyncInterval, Interval: time.Millisecond}} {
		t.Run(policy.String(), func(t *testing.T) {
			fs := NewFaultFS()
			dir := t.TempDir()
			l, _ := openTestLog(t, dir, Options{FS: fs, Fsync: policy})
			var entries []AbortedTxn
			for producer := range int64(3) {
				txn := appendAbort(t, l, producer)
				_, syncsBefore := fs.Counts()
				if err := l.AppendAbortedTxn(txn); err != nil {
					t.Fatal(err)
				}
				if _, syncs := fs.Counts(); policy.Mode == FsyncAlways && syncs != syncsBefore {
					t.Fatalf("AppendAbortedTxn ran %d syncs, want none", syncs-syncsBefore)
				}
				if err := l.WaitDurable(context.Background(), txn.LastOffset); err != nil {
					t.Fatal(err)
				}
				entries = append(entries, txn)
			}
			if err := fs.Crash(1, false); err != nil {
				t.Fatal(err)
			}
			l.abandon()
			reopened, _ := openTestLog(t, dir, Options{FS: fs, Fsync: policy})
			if end := reopened.LogEndOffset(); end != entries[2].LastOffset+1 {
				t.Fatalf("log end %d after the crash, want %d", end, entries[2].LastOffset+1)
			}
			requireAborted(t, reopened, "after the crash", entries...)
		})
	}
}

// A sync that made the marker durable before its entry was written does
// not cover the entry: WaitDurable called after AppendAbortedTxn syncs
// again, whether that earlier sync had finished or was still running
// when the entry was written.
func TestAbortedTxnWaitDurableAfterEarlierSync(t *testing.T) {
	for _, inFlight := range []bool{false, true} {
		t.Run(fmt.Sprintf("in-flight=%v", inFlight), func(t *testing.T) {
			fs := NewFaultFS()
			dir := t.TempDir()
			var l *Log
			var txn AbortedTxn
			var armed atomic.Bool
			hookErr := make(chan error, 1)
			options := Options{FS: fs, Fsync: FsyncPolicy{Mode: FsyncAlways}, OnSync: func(time.Duration) {
				if armed.CompareAndSwap(true, false) {
					// syncActive captured the log end past the marker and
					// synced the data; the entry is written only now.
					hookErr <- l.AppendAbortedTxn(txn)
				}
			}}
			l, _ = openTestLog(t, dir, options)
			txn = appendAbort(t, l, 5)
			armed.Store(inFlight)
			if err := l.WaitDurable(context.Background(), txn.LastOffset); err != nil {
				t.Fatal(err)
			}
			if inFlight {
				if err := <-hookErr; err != nil {
					t.Fatal(err)
				}
			} else if err := l.AppendAbortedTxn(txn); err != nil {
				t.Fatal(err)
			}
			if err := l.WaitDurable(context.Background(), txn.LastOffset); err != nil {
				t.Fatal(err)
			}
			if err := fs.Crash(2, false); err != nil {
				t.Fatal(err)
			}
			l.abandon()
			reopened, _ := openTestLog(t, dir, Options{FS: fs})
			requireAborted(t, reopened, "after the crash", txn)
		})
	}
}

// With fsync never an entry is not synced when written, but the roll that
// seals its segment syncs it before the Append that rolled returns (a
// producer snapshot at the new segment's base may follow at once), and
// SyncAbortedTxns syncs the active segment's entries on demand.
func TestAbortedTxnSyncedAtRollWithFsyncNever(t *testing.T) {
	fs := NewFaultFS()
	dir := t.TempDir()
	l, _ := openTestLog(t, dir, Options{FS: fs, SegmentBytes: 1 << 20})
	first := appendAbort(t, l, 1)
	_, syncsBefore := fs.Counts()
	if err := l.AppendAbortedTxn(first); err != nil {
		t.Fatal(err)
	}
	if _, syncs := fs.Counts(); syncs != syncsBefore {
		t.Fatalf("AppendAbortedTxn ran %d syncs with fsync never, want none", syncs-syncsBefore)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	second := appendAbort(t, l, 2)
	if err := l.AppendAbortedTxn(second); err != nil {
		t.Fatal(err)
	}
	third := appendAbort(t, l, 3)
	if err := l.AppendAbortedTxn(third); err != nil {
		t.Fatal(err)
	}
	if err := l.SyncAbortedTxns(); err != nil {
		t.Fatal(err)
	}
	fourth := appendAbort(t, l, 4)
	if err := l.AppendAbortedTxn(fourth); err != nil {
		t.Fatal(err)
	}
	base := l.active().base
	if err := fs.Crash(3, false); err != nil {
		t.Fatal(err)
	}
	l.abandon()
	if got := onDisk(t, dir, 0); fmt.Sprint(got) != fmt.Sprint([]AbortedTxn{first}) {
		t.Fatalf("rolled segment's index after the crash: %v, want %v", got, []AbortedTxn{first})
	}
	if got := onDisk(t, dir, base); fmt.Sprint(got) != fmt.Sprint([]AbortedTxn{second, third}) {
		t.Fatalf("active segment's index after the crash: %v, want the entries synced by SyncAbortedTxns %v", got, []AbortedTxn{second, third})
	}
}

// The index is synced before the segment's data: when the data's sync
// fails, a crash keeps the entry and loses its marker, never the reverse.
// Recovery then drops the entry and rewrites the file, so that it does
// not come back when later batches take the marker's offset.
func TestAbortedTxnIndexSyncedBeforeData(t *testing.T) {
	fs := NewFaultFS()
	dir := t.TempDir()
	options := Options{FS: fs, Fsync: FsyncPolicy{Mode: FsyncAlways}}
	l, _ := openTestLog(t, dir, options)
	kept := appendAbort(t, l, 1)
	if err := l.AppendAbortedTxn(kept); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitDurable(context.Background(), kept.LastOffset); err != nil {
		t.Fatal(err)
	}
	lost := appendAbort(t, l, 2)
	if err := l.AppendAbortedTxn(lost); err != nil {
		t.Fatal(err)
	}
	fs.FailSync(2) // the index's sync succeeds, the data's fails
	if err := l.WaitDurable(context.Background(), lost.LastOffset); err == nil {
		t.Fatal("WaitDurable succeeded with a failing sync")
	}
	if err := fs.Crash(4, false); err != nil {
		t.Fatal(err)
	}
	l.abandon()
	if got := onDisk(t, dir, 0); fmt.Sprint(got) != fmt.Sprint([]AbortedTxn{kept, lost}) {
		t.Fatalf("index after the crash: %v, want both entries (synced before the data)", got)
	}
	reopened, _ := openTestLog(t, dir, options)
	if end := reopened.LogEndOffset(); end != kept.LastOffset+1 {
		t.Fatalf("log end %d after the crash, want %d (the second transaction's batches unsynced)", end, kept.LastOffset+1)
	}
	requireAborted(t, reopened, "after the crash", kept)
	for reopened.LogEndOffset() <= lost.LastOffset {
		mustAppend(t, reopened, testBatch(t, 9, 1, 20, 1))
	}
	if err := reopened.Close(); err != nil {
		t.Fatal(err)
	}
	again, _ := openTestLog(t, dir, options)
	requireAborted(t, again, "after the marker's offset was reused", kept)
}

// An entry written but not yet synced is lost in a crash with its marker
// or without it; the caller's replay restores it (see doc.go). What a
// torn crash may never do is keep an entry beyond the recovered end.
func TestAbortedTxnTornCrashKeepsNoEntryBeyondTheEnd(t *testing.T) {
	for seed := range uint64(20) {
		fs := NewFaultFS()
		dir := t.TempDir()
		l, _ := openTestLog(t, dir, Options{FS: fs, SegmentBytes: 600})
		for producer := range int64(6) {
			txn := appendAbort(t, l, producer)
			if err := l.AppendAbortedTxn(txn); err != nil {
				t.Fatal(err)
			}
		}
		if err := fs.Crash(seed, true); err != nil {
			t.Fatal(err)
		}
		l.abandon()
		reopened, _ := openTestLog(t, dir, Options{FS: fs, SegmentBytes: 600})
		for _, txn := range reopened.AbortedTxns(0, math.MaxInt64) {
			if txn.LastOffset >= reopened.LogEndOffset() {
				t.Fatalf("seed %d: entry %+v beyond the recovered end %d", seed, txn, reopened.LogEndOffset())
			}
		}
		reopened.Close()
	}
}
