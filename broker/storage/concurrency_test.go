package storage

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

func TestConcurrentReadsDuringAppends(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 8000, IndexIntervalBytes: 500, RetentionBytes: 60000})
	const appends = 800
	var done atomic.Bool
	var group sync.WaitGroup
	group.Go(func() {
		defer done.Store(true)
		random := rand.New(rand.NewPCG(41, 42))
		for i := range appends {
			if _, err := l.Append(testBatch(t, int32(i), 1+random.IntN(4), random.IntN(200), int64(i))); err != nil {
				t.Errorf("append: %v", err)
				return
			}
			if i%100 == 0 {
				if _, err := l.ApplyRetention(); err != nil {
					t.Errorf("retention: %v", err)
					return
				}
			}
		}
	})
	var reads atomic.Int64
	for reader := range 4 {
		group.Go(func() {
			random := rand.New(rand.NewPCG(43, uint64(reader)))
			for !done.Load() {
				start, end := l.LogStartOffset(), l.LogEndOffset()
				from := start + random.Int64N(end-start+1)
				data, err := l.ReadBatches(from, end, 1+random.IntN(20000))
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // retention moved the log start meanwhile
				}
				if err != nil {
					t.Errorf("read at %d: %v", from, err)
					return
				}
				checkConcurrentRead(t, data, from, end)
				reads.Add(1)
			}
		})
	}
	group.Wait()
	if reads.Load() == 0 {
		t.Fatal("no read completed during the appends")
	}
	if l.LogStartOffset() == 0 {
		t.Fatal("retention never ran")
	}
}

// checkConcurrentRead checks a read result: whole intact batches, the first
// containing from, contiguous, all below end.
func checkConcurrentRead(t *testing.T, data []byte, from, end int64) {
	t.Helper()
	next := int64(-1)
	for len(data) > 0 {
		view, err := wire.ParseBatch(data)
		if err != nil {
			t.Errorf("read at %d: %v", from, err)
			return
		}
		checkBatchIntact(t, view)
		if next < 0 && (view.BaseOffset() > from || view.LastOffset() < from) {
			t.Errorf("read at %d started with batch %d..%d", from, view.BaseOffset(), view.LastOffset())
		}
		if next >= 0 && view.BaseOffset() != next {
			t.Errorf("read at %d: batch at %d after %d", from, view.BaseOffset(), next)
		}
		if view.LastOffset() >= end {
			t.Errorf("read at %d returned offset %d beyond the end %d", from, view.LastOffset(), end)
		}
		next = view.LastOffset() + 1
		data = data[view.Size():]
	}
}

func TestRegionOutlivesRetention(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 1000, RetentionBytes: 1})
	random := rand.New(rand.NewPCG(45, 46))
	appendRandom(t, l, random, 0, 30)
	result, err := l.Read(0, l.LogEndOffset(), 500, true)
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := l.ApplyRetention()
	if err != nil || deleted == 0 {
		t.Fatalf("retention deleted %d: %v", deleted, err)
	}
	if _, err := l.Read(0, l.LogEndOffset(), 500, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read of a deleted segment: %v", err)
	}
	region := result.Regions[0]
	data := make([]byte, region.Size)
	if _, err := region.ReadAt(data, 0); err != nil {
		t.Fatalf("region of a deleted segment: %v", err)
	}
	if _, err := region.File.ReadAt(data[:1], region.Position); err != nil {
		t.Fatalf("region file closed before release: %v", err)
	}
	checkConcurrentRead(t, data, 0, 1<<62)
	// The background sync of a rolled segment holds the file too, until
	// it is done: wait for those, so the region's is the last reference.
	l.appendMu.Lock()
	err = l.drainRollFlushes()
	l.appendMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	result.Release()
	if _, err := region.File.ReadAt(data[:1], region.Position); err == nil {
		t.Fatal("file still open after the last release")
	}
}

// Reads scan the segment files without the log's read lock (Read). This
// races them with a roll on almost every append, retention deleting the
// oldest segments after every append, and a truncation every 40 appends:
// a read must never find a file closed under it (the view holds each
// segment's file by reference) and never return bytes a truncation
// rewrote (it retries when Log.truncations moved), only intact batches
// contiguous from where it started, or ErrOffsetOutOfRange.
func TestReadsRaceRollRetentionAndTruncation(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 600, IndexIntervalBytes: 100, RetentionBytes: 3000})
	const appends = 300
	var done atomic.Bool
	var group sync.WaitGroup
	var truncations, deleted atomic.Int64
	group.Go(func() {
		defer done.Store(true)
		random := rand.New(rand.NewPCG(51, 52))
		for i := range appends {
			if _, err := l.Append(testBatch(t, int32(i), 1+random.IntN(3), random.IntN(150), int64(i))); err != nil {
				t.Errorf("append: %v", err)
				return
			}
			n, err := l.ApplyRetention()
			if err != nil {
				t.Errorf("retention: %v", err)
				return
			}
			deleted.Add(int64(n))
			if i%40 == 39 {
				if err := l.Truncate(l.LogEndOffset() - 1 - random.Int64N(3)); err != nil {
					t.Errorf("truncate: %v", err)
					return
				}
				truncations.Add(1)
			}
		}
	})
	var reads atomic.Int64
	for reader := range 3 {
		group.Go(func() {
			random := rand.New(rand.NewPCG(53, uint64(reader)))
			for !done.Load() {
				truncationsBefore := l.truncations.Load()
				start, end := l.LogStartOffset(), l.LogEndOffset()
				from := start + random.Int64N(end-start+1)
				data, err := l.ReadBatches(from, end, 1+random.IntN(4000))
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue
				}
				if err != nil {
					t.Errorf("read at %d: %v", from, err)
					return
				}
				if truncationsBefore%2 == 1 || l.truncations.Load() != truncationsBefore {
					// ReadBatches copies the regions after Read returned;
					// a truncation may rewrite a region's bytes then (see
					// Region), and end may be past the new log end.
					continue
				}
				checkConcurrentRead(t, data, from, end)
				reads.Add(1)
			}
		})
	}
	group.Wait()
	if reads.Load() == 0 || truncations.Load() == 0 || deleted.Load() == 0 {
		t.Fatalf("reads %d, truncations %d, segments deleted %d: the race did not happen", reads.Load(), truncations.Load(), deleted.Load())
	}
}

// removeGateFS blocks the removal of the first segment file it sees until
// released, after reporting it on reached.
type removeGateFS struct {
	OSFS
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (f *removeGateFS) Remove(name string) error {
	if strings.HasSuffix(name, logSuffix) {
		f.once.Do(func() {
			f.reached <- struct{}{}
			<-f.release
		})
	}
	return f.OSFS.Remove(name)
}

// ApplyRetention unlinks the expired segments without the append lock:
// while a segment file's removal hangs, appends and reads go on, and the
// log start has already moved past the detached segment.
func TestRetentionUnlinksWithoutAppendLock(t *testing.T) {
	t.Parallel()
	fsys := &removeGateFS{reached: make(chan struct{}, 1), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(fsys.release) }) }
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 1000, RetentionBytes: 1, FS: fsys})
	t.Cleanup(release) // runs before the log closes, also when the test fails
	random := rand.New(rand.NewPCG(61, 62))
	appendRandom(t, l, random, 0, 30)
	retention := make(chan error, 1)
	go func() { _, err := l.ApplyRetention(); retention <- err }()
	<-fsys.reached
	appended := make(chan error, 1)
	go func() { _, err := l.Append(testBatch(t, 30, 1, 10, 1030)); appended <- err }()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatalf("append during retention: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an append waited for retention's file removal")
	}
	if _, err := l.ReadBatches(l.LogStartOffset(), l.LogEndOffset(), 1<<20); err != nil {
		t.Fatalf("read during retention: %v", err)
	}
	if l.LogStartOffset() == 0 {
		t.Fatal("the log start did not move before the files were removed")
	}
	release()
	if err := <-retention; err != nil {
		t.Fatalf("retention: %v", err)
	}
}

// syncGateFS hands out files whose Sync, for a .log file while armed,
// reports itself on reached and waits for release (once).
type syncGateFS struct {
	OSFS
	armed   atomic.Bool
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

type syncGateFile struct {
	File
	fs *syncGateFS
}

func (f *syncGateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.OSFS.OpenFile(name, flag, perm)
	if err != nil || !strings.HasSuffix(name, logSuffix) {
		return file, err
	}
	return syncGateFile{File: file, fs: f}, nil
}

func (f syncGateFile) Sync() error {
	if f.fs.armed.Load() {
		f.fs.once.Do(func() {
			f.fs.reached <- struct{}{}
			<-f.fs.release
		})
	}
	return f.File.Sync()
}

// With fsync=always the append that puts 64 MiB past the last checkpoint
// flushes; the bulk of that fsync runs without the append lock, so
// another append completes while it is in progress, and the checkpoint
// still moves once it is done.
func TestFlushSyncsWithoutAppendLock(t *testing.T) {
	t.Parallel()
	fsys := &syncGateFS{reached: make(chan struct{}, 1), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(fsys.release) }) }
	l, _ := openTestLog(t, t.TempDir(), Options{Fsync: FsyncPolicy{Mode: FsyncAlways}, FS: fsys})
	t.Cleanup(release)
	const batchBytes = 1 << 20
	seq := int32(0)
	for ; int64(seq+1)*batchBytes < checkpointBytes; seq++ {
		mustAppend(t, l, testBatch(t, seq, 1, batchBytes, int64(seq)))
	}
	if l.lastCheckpoint.recoveryPosition != 0 {
		t.Fatalf("flushed before 64 MiB: checkpoint %+v", l.lastCheckpoint)
	}
	fsys.armed.Store(true)
	flushing := make(chan error, 1)
	go func() { _, err := l.Append(testBatch(t, seq, 1, batchBytes, int64(seq))); flushing <- err }()
	<-fsys.reached
	appended := make(chan error, 1)
	go func() { _, err := l.Append(testBatch(t, seq+1, 1, 10, int64(seq+1))); appended <- err }()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatalf("append during the flush: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an append waited for the 64 MiB flush's fsync")
	}
	release()
	if err := <-flushing; err != nil {
		t.Fatalf("flushing append: %v", err)
	}
	if l.lastCheckpoint.recoveryPosition < checkpointBytes {
		t.Fatalf("checkpoint did not move past 64 MiB: %+v", l.lastCheckpoint)
	}
}

// renameGateFS blocks the first rename onto the checkpoint file, once
// armed, until released, after reporting it on reached.
type renameGateFS struct {
	OSFS
	armed   atomic.Bool
	once    sync.Once
	reached chan struct{}
	release chan struct{}
}

func (f *renameGateFS) Rename(oldName, newName string) error {
	if f.armed.Load() && strings.HasSuffix(newName, string(os.PathSeparator)+checkpointFileName) {
		f.once.Do(func() {
			f.reached <- struct{}{}
			<-f.release
		})
	}
	return f.OSFS.Rename(oldName, newName)
}

// With fsync=never the flusher goroutine writes a rolled segment's index
// files and the checkpoint past it without the append lock: while that
// checkpoint's rename hangs, appends (rolls included) go on; once
// released, the checkpoint reaches the rolled segment's successor.
func TestRollFlushCollectsWithoutAppendLock(t *testing.T) {
	t.Parallel()
	fsys := &renameGateFS{reached: make(chan struct{}, 1), release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(fsys.release) }) }
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 1000, FS: fsys})
	t.Cleanup(release)
	random := rand.New(rand.NewPCG(71, 72))
	appendRandom(t, l, random, 0, 3)
	fsys.armed.Store(true)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fsys.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the flusher did not write the checkpoint after the roll")
	}
	appended := make(chan error, 1)
	go func() {
		for i := range 20 { // rolls a few times at 1000-byte segments
			if _, err := l.Append(testBatch(t, int32(3+i), 1, 100, int64(3+i))); err != nil {
				appended <- err
				return
			}
		}
		appended <- nil
	}()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatalf("append during the checkpoint write: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("appends waited for the roll flusher's checkpoint")
	}
	release()
	if err := l.Flush(); err != nil { // drains the flusher
		t.Fatal(err)
	}
	saved, err := l.readCheckpoint()
	if err != nil || saved.recoverySegment != l.active().base {
		t.Fatalf("checkpoint %+v, %v after the flush; want the active segment %d", saved, err, l.active().base)
	}
}

// A rolled segment whose sync completes while removeMu is held (a clean
// or retention running) is still collected once the lock is free, with no
// further roll: the checkpoint's recovery point, which the log cleaner
// cleans up to, reaches the active segment of a quiet partition.
func TestRollFlushCollectsAfterRemoveLockIsFree(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 1000})
	random := rand.New(rand.NewPCG(81, 82))
	appendRandom(t, l, random, 0, 3)
	l.removeMu.Lock() // as a running clean holds it
	if err := l.Roll(); err != nil {
		l.removeMu.Unlock()
		t.Fatal(err)
	}
	l.flusher.pending.Wait()     // the sync is done; its collection found removeMu taken
	time.Sleep(2 * collectRetry) // the retries find it still taken
	l.removeMu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		saved, err := l.readCheckpoint()
		if err == nil && saved.recoverySegment == l.active().base {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint %+v, %v; want the recovery point at the active segment %d without another roll", saved, err, l.active().base)
		}
		time.Sleep(20 * time.Millisecond) // poll interval; bounded by the deadline
	}
}
