package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

func TestParseFsyncPolicy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in      string
		want    FsyncPolicy
		wantErr bool
	}{
		{"never", FsyncPolicy{Mode: FsyncNever}, false},
		{"always", FsyncPolicy{Mode: FsyncAlways}, false},
		{"interval:200ms", FsyncPolicy{Mode: FsyncInterval, Interval: 200 * time.Millisecond}, false},
		{"interval:0s", FsyncPolicy{}, true},
		{"interval:x", FsyncPolicy{}, true},
		{"sometimes", FsyncPolicy{}, true},
	}
	for _, c := range cases {
		got, err := ParseFsyncPolicy(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("ParseFsyncPolicy(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.wantErr)
		}
		if err == nil && got.String() != c.in {
			t.Errorf("String() = %q, want %q", got.String(), c.in)
		}
	}
}

// appendRandom appends n batches of 1..5 records with seqs starting at seq.
func appendRandom(t *testing.T, l *Log, random *rand.Rand, seq, n int) []AppendResult {
	var results []AppendResult
	for i := range n {
		batch := testBatch(t, int32(seq+i), 1+random.IntN(5), 10+random.IntN(200), int64(1000+seq+i))
		results = append(results, mustAppend(t, l, batch))
	}
	return results
}

func TestAppendReadAcrossRolls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, _ := openTestLog(t, dir, Options{SegmentBytes: 4096, IndexIntervalBytes: 300})
	random := rand.New(rand.NewPCG(1, 2))
	results := appendRandom(t, l, random, 0, 300)
	if l.SegmentCount() < 10 {
		t.Fatalf("segments = %d, want many rolls", l.SegmentCount())
	}
	for i, r := range results {
		if i > 0 && r.FirstOffset != results[i-1].LastOffset+1 {
			t.Fatalf("append %d got offset %d after %d", i, r.FirstOffset, results[i-1].LastOffset)
		}
	}
	stored := readAll(t, l)
	if len(stored) != len(results) {
		t.Fatalf("read %d batches, appended %d", len(stored), len(results))
	}
	// Every offset, including segment boundaries and the middle of batches,
	// starts a read at the whole batch containing it.
	for i, r := range results {
		for offset := r.FirstOffset; offset <= r.LastOffset; offset++ {
			data, err := l.ReadBatches(offset, l.LogEndOffset(), 1)
			if err != nil {
				t.Fatalf("read at %d: %v", offset, err)
			}
			view, err := wire.ParseBatch(data)
			if err != nil || view.BaseOffset() != r.FirstOffset || view.BaseSequence() != int32(i) || view.Size() != len(data) {
				t.Fatalf("read at %d: got base %d seq %d (%v), want batch %d at %d", offset, view.BaseOffset(), view.BaseSequence(), err, i, r.FirstOffset)
			}
		}
	}
	// Survives a clean reopen with the same answers.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, report := openTestLog(t, dir, Options{SegmentBytes: 4096, IndexIntervalBytes: 300})
	if !report.CleanShutdown || report.SegmentsScanned != 0 || report.IndexesRebuilt != 0 {
		t.Fatalf("clean reopen report %+v", report)
	}
	if got := readAll(t, reopened); fmt.Sprint(got) != fmt.Sprint(stored) {
		t.Fatalf("after reopen read %v, want %v", got, stored)
	}
	next := mustAppend(t, reopened, testBatch(t, 999, 1, 10, 5000))
	if next.FirstOffset != results[len(results)-1].LastOffset+1 {
		t.Fatalf("append after reopen at %d, want %d", next.FirstOffset, results[len(results)-1].LastOffset+1)
	}
}

func TestReadBoundAndBudget(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 1 << 20, IndexIntervalBytes: 100})
	var sizes []int64
	for i := range 10 { // batches of 3 records: offsets 3i..3i+2
		result := mustAppend(t, l, testBatch(t, int32(i), 3, 50, 1))
		_ = result
		sizes = append(sizes, int64(len(testBatch(t, int32(i), 3, 50, 1))))
	}
	size := sizes[0]
	cases := []struct {
		name          string
		from, bound   int64
		maxBytes      int
		minOne        bool
		wantBatches   int
		wantNext      int64
		wantFirstBase int64
	}{
		{"all", 0, 30, 1 << 20, false, 10, 30, 0},
		{"bound excludes the batch it cuts", 0, 8, 1 << 20, false, 2, 6, 0},
		{"bound at a boundary", 0, 9, 1 << 20, false, 3, 9, 0},
		{"from inside a batch", 4, 30, 1 << 20, false, 9, 30, 3},
		{"budget of two batches and a bit", 0, 30, int(2*size + 10), false, 2, 6, 0},
		{"budget below one batch", 0, 30, int(size - 1), false, 0, 0, 0},
		{"minOneBatch overrides the budget", 0, 30, 1, true, 1, 3, 0},
		{"from at the bound", 9, 9, 1 << 20, true, 0, 9, 0},
		{"from at the log end", 30, 30, 1 << 20, true, 0, 30, 0},
		{"bound beyond the end is clamped", 27, 1000, 1 << 20, false, 1, 30, 27},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			result, err := l.Read(c.from, c.bound, c.maxBytes, c.minOne)
			if err != nil {
				t.Fatal(err)
			}
			defer result.Release()
			if got := result.Bytes(); got != int64(c.wantBatches)*size {
				t.Errorf("bytes = %d, want %d batches of %d", got, c.wantBatches, size)
			}
			if result.NextOffset != c.wantNext {
				t.Errorf("next = %d, want %d", result.NextOffset, c.wantNext)
			}
			if c.wantBatches > 0 && result.Regions[0].FirstOffset != c.wantFirstBase {
				t.Errorf("first offset = %d, want %d", result.Regions[0].FirstOffset, c.wantFirstBase)
			}
			if c.wantBatches > 0 && result.Regions[0].File == nil {
				t.Errorf("region has no *os.File")
			}
		})
	}
	for _, from := range []int64{-1, 31} {
		if _, err := l.Read(from, 30, 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
			t.Errorf("read at %d: %v, want ErrOffsetOutOfRange", from, err)
		}
	}
}

func TestAppendRejectsMalformedInput(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{})
	good := testBatch(t, 0, 1, 10, 1)
	cases := map[string][]byte{
		"empty":          nil,
		"short header":   good[:30],
		"torn body":      good[:len(good)-1],
		"trailing bytes": append(append([]byte(nil), good...), 1, 2, 3),
		"bad magic":      func() []byte { b := append([]byte(nil), good...); b[16] = 1; return b }(),
	}
	for name, input := range cases {
		if _, err := l.Append(input); err == nil {
			t.Errorf("%s: append accepted", name)
		}
	}
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("rejected appends changed the log: end %d size %d", l.LogEndOffset(), l.Size())
	}
	two := append(append([]byte(nil), good...), testBatch(t, 1, 4, 10, 1)...)
	result := mustAppend(t, l, two)
	if result.FirstOffset != 0 || result.LastOffset != 4 {
		t.Fatalf("two batches got %+v, want offsets 0..4", result)
	}
}

func TestRetentionBySize(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 2000, RetentionBytes: 5000})
	random := rand.New(rand.NewPCG(3, 4))
	appendRandom(t, l, random, 0, 100)
	segmentsBefore, sizeBefore := l.SegmentCount(), l.Size()
	deleted, err := l.ApplyRetention()
	if err != nil {
		t.Fatal(err)
	}
	if deleted == 0 || l.SegmentCount() != segmentsBefore-deleted {
		t.Fatalf("deleted %d of %d segments, %d left", deleted, segmentsBefore, l.SegmentCount())
	}
	if l.Size() >= sizeBefore || l.Size() < 5000-2000 {
		t.Fatalf("size %d after retention (before %d, limit 5000)", l.Size(), sizeBefore)
	}
	if l.Size()-l.segments[0].size >= 5000 {
		t.Fatalf("one more segment could have gone: size %d, first %d", l.Size(), l.segments[0].size)
	}
	if l.LogStartOffset() != l.segments[0].base {
		t.Fatalf("log start %d, first segment %d", l.LogStartOffset(), l.segments[0].base)
	}
	if _, err := l.Read(l.LogStartOffset()-1, l.LogEndOffset(), 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the log start: %v", err)
	}
	readAll(t, l)
}

func TestRetentionByTime(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.UnixMilli(1_000_000)}
	dir := t.TempDir()
	options := Options{SegmentBytes: 1 << 20, RetentionAge: time.Hour, Now: clock.Now}
	l, _ := openTestLog(t, dir, options)
	// Three segments written an hour apart, timestamps from the clock.
	for i := range 3 {
		mustAppend(t, l, testBatch(t, int32(i), 2, 10, clock.now.UnixMilli()))
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		clock.now = clock.now.Add(time.Hour)
	}
	mustAppend(t, l, testBatch(t, 3, 2, 10, clock.now.UnixMilli()))
	// Now the first segment's newest record is 3h old, the second 2h, the third 1h.
	deleted, err := l.ApplyRetention()
	if err != nil || deleted != 2 {
		t.Fatalf("retention deleted %d (%v), want the two segments older than 1h", deleted, err)
	}
	if l.LogStartOffset() != 4 {
		t.Fatalf("log start %d, want 4", l.LogStartOffset())
	}
	clock.now = clock.now.Add(10 * time.Hour)
	deleted, err = l.ApplyRetention()
	if err != nil || deleted != 1 || l.SegmentCount() != 1 {
		t.Fatalf("retention deleted %d (%v), %d segments left: the active one must stay", deleted, err, l.SegmentCount())
	}
	// The log start offset survives a crash (no clean shutdown).
	l.abandon()
	reopened, _ := openTestLog(t, dir, options)
	if reopened.LogStartOffset() != 6 || reopened.LogEndOffset() != 8 {
		t.Fatalf("after reopen log %d..%d, want 6..8", reopened.LogStartOffset(), reopened.LogEndOffset())
	}
}

func TestSegmentAgeRoll(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.UnixMilli(5_000_000)}
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentAge: time.Minute, Now: clock.Now})
	mustAppend(t, l, testBatch(t, 0, 1, 10, clock.now.UnixMilli()))
	clock.now = clock.now.Add(59 * time.Second)
	mustAppend(t, l, testBatch(t, 1, 1, 10, clock.now.UnixMilli()))
	if l.SegmentCount() != 1 {
		t.Fatalf("rolled before the segment age")
	}
	clock.now = clock.now.Add(2 * time.Second)
	result := mustAppend(t, l, testBatch(t, 2, 1, 10, clock.now.UnixMilli()))
	if l.SegmentCount() != 2 || result.SegmentBase != 2 || result.Position != 0 {
		t.Fatalf("after the segment age: %d segments, append %+v", l.SegmentCount(), result)
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, _ := openTestLog(t, dir, Options{SegmentBytes: 1000})
	random := rand.New(rand.NewPCG(5, 6))
	appendRandom(t, l, random, 0, 40)
	middle := l.LogEndOffset() / 2
	if err := l.DeleteRecordsBefore(middle); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != middle || l.segments[0].end <= middle {
		t.Fatalf("log start %d, first segment ends at %d", l.LogStartOffset(), l.segments[0].end)
	}
	if _, err := l.Read(middle-1, l.LogEndOffset(), 100, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below the new log start: %v", err)
	}
	if err := l.DeleteRecordsBefore(l.LogEndOffset() + 1); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("delete beyond the end: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, _ := openTestLog(t, dir, Options{SegmentBytes: 1000})
	if reopened.LogStartOffset() != middle {
		t.Fatalf("log start after reopen %d, want %d", reopened.LogStartOffset(), middle)
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	options := Options{SegmentBytes: 1500, IndexIntervalBytes: 200}
	l, _ := openTestLog(t, dir, options)
	random := rand.New(rand.NewPCG(7, 8))
	results := appendRandom(t, l, random, 0, 60)
	// At a batch boundary in an older segment, in the middle of a batch, then fully.
	target := results[40]
	if err := l.Truncate(target.FirstOffset); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != target.FirstOffset || len(readAll(t, l)) != 40 {
		t.Fatalf("after truncating to %d: end %d", target.FirstOffset, l.LogEndOffset())
	}
	middle := results[30]
	if err := l.Truncate(middle.LastOffset); err != nil {
		t.Fatal(err)
	}
	if want := middle.FirstOffset; l.LogEndOffset() != want {
		t.Fatalf("truncating inside a batch: end %d, want its base %d", l.LogEndOffset(), want)
	}
	// Appends continue at the new end and reuse the offsets.
	again := mustAppend(t, l, testBatch(t, 1000, 2, 10, 1))
	if again.FirstOffset != middle.FirstOffset {
		t.Fatalf("append after truncation at %d, want %d", again.FirstOffset, middle.FirstOffset)
	}
	stored := readAll(t, l)
	if len(stored) != 31 || stored[30].seq != 1000 {
		t.Fatalf("after truncation and append: %d batches, last seq %d", len(stored), stored[len(stored)-1].seq)
	}
	// A crash after truncation recovers the same log.
	l.abandon()
	reopened, report := openTestLog(t, dir, options)
	if got := readAll(t, reopened); fmt.Sprint(got) != fmt.Sprint(stored) {
		t.Fatalf("after crash (%+v): %v, want %v", report, got, stored)
	}
	if err := reopened.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if reopened.LogEndOffset() != 0 || reopened.SegmentCount() != 1 || reopened.Size() != 0 {
		t.Fatalf("full truncation left end %d, %d segments, %d bytes", reopened.LogEndOffset(), reopened.SegmentCount(), reopened.Size())
	}
}

func TestOffsetForTimestamp(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 3000, IndexIntervalBytes: 200})
	var results []AppendResult
	for i := range 100 { // timestamps 10, 20, ... with a dip every 7th batch
		ts := int64(10 * (i + 1))
		if i%7 == 6 {
			ts = 5
		}
		results = append(results, mustAppend(t, l, testBatch(t, int32(i), 2, 20, ts)))
	}
	check := func(name string) {
		for _, ts := range []int64{0, 5, 6, 10, 11, 500, 505, 1000, 1001} {
			offset, timestamp, found := l.OffsetForTimestamp(ts)
			// The model: the first batch with max timestamp >= ts.
			wantFound := false
			var want AppendResult
			for _, r := range results {
				if r.MaxTimestamp >= ts {
					want, wantFound = r, true
					break
				}
			}
			if found != wantFound || (found && (offset != want.FirstOffset || timestamp != want.MaxTimestamp)) {
				t.Errorf("%s: OffsetForTimestamp(%d) = %d, %d, %v; want %d, %d, %v", name, ts, offset, timestamp, found, want.FirstOffset, want.MaxTimestamp, wantFound)
			}
		}
	}
	check("open")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, _ := openTestLog(t, l.Dir(), Options{SegmentBytes: 3000, IndexIntervalBytes: 200})
	l = reopened
	check("reopened")
}

func TestAbortedTxnIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, _ := openTestLog(t, dir, Options{SegmentBytes: 1000})
	random := rand.New(rand.NewPCG(9, 10))
	appendRandom(t, l, random, 0, 20)
	first := AbortedTxn{ProducerID: 7, FirstOffset: 2, LastOffset: 10, LastStableOffset: 2}
	if err := l.AppendAbortedTxn(first); err != nil {
		t.Fatal(err)
	}
	appendRandom(t, l, random, 20, 20)
	second := AbortedTxn{ProducerID: 8, FirstOffset: 30, LastOffset: l.LogEndOffset() - 1, LastStableOffset: 30}
	if err := l.AppendAbortedTxn(second); err != nil {
		t.Fatal(err)
	}
	if err := l.AppendAbortedTxn(AbortedTxn{FirstOffset: 0, LastOffset: l.LogEndOffset()}); err == nil {
		t.Fatal("aborted transaction beyond the log end accepted")
	}
	check := func(name string, from, to int64, want ...AbortedTxn) {
		got := l.AbortedTxns(from, to)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: AbortedTxns(%d, %d) = %v, want %v", name, from, to, got, want)
		}
	}
	check("both", 0, 1000, first, second)
	check("before both", 0, 2)
	check("first only", 5, 30, first)
	check("second only", 11, 1000, second)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, _ = openTestLog(t, dir, Options{SegmentBytes: 1000})
	check("after reopen", 0, 1000, first, second)
	if err := l.Truncate(second.LastOffset); err != nil {
		t.Fatal(err)
	}
	check("after truncating the second marker", 0, 1000, first)
	l.abandon()
	l, _ = openTestLog(t, dir, Options{SegmentBytes: 1000})
	check("after crash", 0, 1000, first)
}

func TestScanHeaders(t *testing.T) {
	t.Parallel()
	l, _ := openTestLog(t, t.TempDir(), Options{SegmentBytes: 2000})
	random := rand.New(rand.NewPCG(11, 12))
	results := appendRandom(t, l, random, 0, 30)
	options := wire.PlainBatchOptions()
	options.Control, options.Transactional, options.ProducerID = true, true, 42
	marker, err := wire.BuildBatch(options, []wire.BuilderRecord{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	markerResult := mustAppend(t, l, marker)
	from := results[10].LastOffset // inside (the end of) batch 10
	var seen []int64
	err = l.ScanBatchHeaders(from, func(h BatchHeader) error {
		v := h.View
		seen = append(seen, v.BaseOffset())
		if v.Control() {
			if !h.Complete || v.ProducerID() != 42 || len(v.Records()) == 0 || v.Validate() != nil {
				t.Errorf("control batch view incomplete: complete %v pid %d", h.Complete, v.ProducerID())
			}
		} else if h.Complete || v.Size() != headerSize || h.Size <= headerSize {
			t.Errorf("data batch at %d: complete %v, view size %d, size %d", v.BaseOffset(), h.Complete, v.Size(), h.Size)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 21 || seen[0] != results[10].FirstOffset || seen[20] != markerResult.FirstOffset {
		t.Fatalf("scanned %v", seen)
	}
	stop := errors.New("stop")
	calls := 0
	if err := l.ScanHeaders(0, func(wire.BatchView) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("callback error: %v after %d calls", err, calls)
	}
}

func TestDeleteRemovesTheDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "partition-0")
	l, _, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, testBatch(t, 0, 1, 10, 1))
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory after Delete: %v", err)
	}
	if _, err := l.Append(testBatch(t, 1, 1, 10, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after Delete: %v", err)
	}
}
