package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

// lastSegmentFile is the path of the newest segment's .log file.
func lastSegmentFile(t *testing.T, l *Log) string {
	t.Helper()
	return segmentFileName(l.dir, l.segments[len(l.segments)-1].base, logSuffix)
}

func TestRecoveryRescansOnlyAfterTheRecoveryPoint(t *testing.T) {
	t.Parallel()
	for _, mode := range []FsyncMode{FsyncAlways, FsyncNever} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			options := Options{SegmentBytes: 4000, IndexIntervalBytes: 500, Fsync: FsyncPolicy{Mode: mode}}
			l, _ := openTestLog(t, dir, options)
			random := rand.New(rand.NewPCG(21, 22))
			appendRandom(t, l, random, 0, 200)
			stored := readAll(t, l)
			// With never, rolled segments sync in the background and the
			// checkpoint passes them when the flusher collects the result:
			// the rescan starts at the checkpoint, wherever that got to
			// when the process was killed (read after abandon, which stops
			// the flusher).
			type segmentSize struct{ base, size int64 }
			var sizes []segmentSize
			for _, s := range l.segments {
				sizes = append(sizes, segmentSize{s.base, s.size})
			}
			activeBase := l.active().base
			segments := l.SegmentCount()
			l.abandon() // killed: no clean-shutdown marker
			saved, err := l.readCheckpoint()
			if err != nil {
				t.Fatal(err)
			}
			want := int64(0)
			for _, s := range sizes {
				if s.base >= saved.recoverySegment {
					want += s.size
				}
			}
			if mode == FsyncAlways && saved.recoverySegment != activeBase {
				t.Fatalf("with fsync always the checkpoint is at segment %d, want the active %d", saved.recoverySegment, activeBase)
			}
			reopened, report := openTestLog(t, dir, options)
			if report.CleanShutdown || report.BytesScanned != want || report.TruncatedAt != -1 ||
				(mode == FsyncAlways && report.SegmentsScanned != 1) {
				t.Fatalf("report %+v: want %d bytes from segment %d on (of %d segments) scanned, nothing truncated", report, want, saved.recoverySegment, segments)
			}
			if got := readAll(t, reopened); fmt.Sprint(got) != fmt.Sprint(stored) {
				t.Fatalf("after crash read %d batches, want %d", len(got), len(stored))
			}
			// A flush moves the recovery point: the next crash rescans nothing.
			appendRandom(t, reopened, random, 200, 3)
			if err := reopened.Flush(); err != nil {
				t.Fatal(err)
			}
			reopened.abandon()
			_, report = openTestLog(t, dir, options)
			if report.BytesScanned != 0 || report.TruncatedAt != -1 {
				t.Fatalf("after flush and crash: %+v", report)
			}
		})
	}
}

func TestRecoveryTruncatesTornTail(t *testing.T) {
	t.Parallel()
	for _, cut := range []int{1, 30, 61, 62, 200} {
		t.Run(fmt.Sprint("cut ", cut), func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openTestLog(t, dir, Options{SegmentBytes: 3000})
			random := rand.New(rand.NewPCG(23, uint64(cut)))
			appendRandom(t, l, random, 0, 30)
			last := mustAppend(t, l, testBatch(t, 30, 5, 100, 1)) // at least 500 bytes
			name := lastSegmentFile(t, l)
			l.abandon()
			info, err := os.Stat(name)
			if err != nil {
				t.Fatal(err)
			}
			// A killed process left only part of the last batch.
			if err := os.Truncate(name, info.Size()-int64(cut)); err != nil {
				t.Fatal(err)
			}
			reopened, report := openTestLog(t, dir, Options{SegmentBytes: 3000})
			if report.TruncatedAt != last.FirstOffset || report.TruncatedBytes != int64(len(testBatch(t, 30, 5, 100, 1))-cut) {
				t.Fatalf("report %+v, want truncation at %d", report, last.FirstOffset)
			}
			if stored := readAll(t, reopened); len(stored) != 30 || reopened.LogEndOffset() != last.FirstOffset {
				t.Fatalf("%d batches up to %d after recovery", len(stored), reopened.LogEndOffset())
			}
			if next := mustAppend(t, reopened, testBatch(t, 31, 1, 1, 1)); next.FirstOffset != last.FirstOffset {
				t.Fatalf("append after recovery at %d, want %d", next.FirstOffset, last.FirstOffset)
			}
		})
	}
}

func TestRecoveryTruncatesCorruptTail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		field int // byte of the victim batch to flip
	}{
		{"base offset (not covered by the CRC)", 7},
		{"batch length", 11},
		{"magic", 16},
		{"CRC", 18},
		{"attributes", 22},
		{"payload (last byte)", -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			options := Options{SegmentBytes: 1 << 20, IndexIntervalBytes: 256}
			l, _ := openTestLog(t, dir, options)
			random := rand.New(rand.NewPCG(25, 26))
			results := appendRandom(t, l, random, 0, 40)
			victim := results[30]
			name := lastSegmentFile(t, l)
			l.abandon()
			file, err := os.OpenFile(name, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			at := victim.Position + int64(c.field)
			if c.field < 0 {
				at = results[31].Position + int64(c.field)
			}
			b := make([]byte, 1)
			if _, err := file.ReadAt(b, at); err != nil {
				t.Fatal(err)
			}
			b[0] ^= 0x41
			if _, err := file.WriteAt(b, at); err != nil {
				t.Fatal(err)
			}
			file.Close()
			reopened, report := openTestLog(t, dir, options)
			if report.TruncatedAt != victim.FirstOffset {
				t.Fatalf("report %+v, want truncation at %d", report, victim.FirstOffset)
			}
			stored := readAll(t, reopened) // checks every served batch is intact
			if len(stored) != 30 {
				t.Fatalf("%d batches served, want the 30 before the corrupt one", len(stored))
			}
		})
	}
}

func TestRecoveryRebuildsDamagedIndexes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	options := Options{SegmentBytes: 3000, IndexIntervalBytes: 200}
	l, _ := openTestLog(t, dir, options)
	random := rand.New(rand.NewPCG(27, 28))
	appendRandom(t, l, random, 0, 100)
	stored := readAll(t, l)
	second := l.segments[1].base
	third := l.segments[2].base
	fourth := l.segments[3].base
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Garbage appended to one index, another index deleted, a time index torn.
	index := segmentFileName(dir, second, indexSuffix)
	file, err := os.OpenFile(index, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	file.Write([]byte{0xff, 0xff, 0xff, 0xf0, 0, 0, 0x10, 0})
	file.Close()
	if err := os.Remove(segmentFileName(dir, third, indexSuffix)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segmentFileName(dir, fourth, timeIndexSuffix), 5); err != nil {
		t.Fatal(err)
	}
	reopened, report := openTestLog(t, dir, options)
	if report.IndexesRebuilt != 3 || !report.CleanShutdown {
		t.Fatalf("report %+v, want 3 indexes rebuilt", report)
	}
	if got := readAll(t, reopened); fmt.Sprint(got) != fmt.Sprint(stored) {
		t.Fatal("reads differ after index rebuild")
	}
	for _, b := range stored { // every batch found through the rebuilt indexes
		data, err := reopened.ReadBatches(b.last, reopened.LogEndOffset(), 1)
		if err != nil || len(data) != b.size {
			t.Fatalf("read at %d: %d bytes, %v", b.last, len(data), err)
		}
	}
	if err := reopened.Close(); err != nil {
		t.Fatal(err)
	}
	_, report = openTestLog(t, dir, options)
	if report.IndexesRebuilt != 0 {
		t.Fatalf("rebuilt indexes were not persisted: %+v", report)
	}
}
