package storage

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

// testBatch builds an uncompressed batch of `records` records whose values
// are derived from seq (stored as the base sequence), so a reader can check
// the payload is intact. Every record has timestamp ts.
func testBatch(t testing.TB, seq int32, records, valueSize int, ts int64) []byte {
	t.Helper()
	batch, err := buildTestBatch(seq, records, valueSize, ts)
	if err != nil {
		t.Fatalf("build batch: %v", err)
	}
	return batch
}

// buildTestBatch is testBatch for code without a testing.TB (the crash child).
func buildTestBatch(seq int32, records, valueSize int, ts int64) ([]byte, error) {
	options := wire.PlainBatchOptions()
	options.ProducerID, options.ProducerEpoch, options.BaseSequence = 1, 0, seq
	list := make([]wire.BuilderRecord, records)
	for i := range list {
		list[i] = wire.BuilderRecord{TimestampMillis: ts, Value: testValue(seq, i, valueSize)}
	}
	return wire.BuildBatch(options, list)
}

// testValue is the deterministic value of record i of the batch with seq.
func testValue(seq int32, i, size int) []byte {
	value := make([]byte, size)
	for j := range value {
		value[j] = byte(int(seq)*31 + i*7 + j)
	}
	return value
}

// checkBatchIntact verifies a stored batch: CRC, and values as testBatch made them.
func checkBatchIntact(t testing.TB, view wire.BatchView) {
	t.Helper()
	if err := view.Validate(); err != nil {
		t.Fatalf("batch at offset %d: %v", view.BaseOffset(), err)
	}
	iterator, err := view.RecordIterator()
	if err != nil {
		t.Fatalf("batch at offset %d: records: %v", view.BaseOffset(), err)
	}
	for i := 0; iterator.Next(); i++ {
		value := iterator.Record().Value
		if !bytes.Equal(value, testValue(view.BaseSequence(), i, len(value))) {
			t.Fatalf("batch at offset %d (seq %d): record %d value corrupt", view.BaseOffset(), view.BaseSequence(), i)
		}
	}
	if iterator.Err() != nil {
		t.Fatalf("batch at offset %d: %v", view.BaseOffset(), iterator.Err())
	}
}

// storedBatch is one batch as read back.
type storedBatch struct {
	base, last int64
	seq        int32
	size       int
}

// readAll reads the whole log in chunks, checking every batch is intact and
// the offsets contiguous from the first batch.
func readAll(t testing.TB, l *Log) []storedBatch {
	t.Helper()
	var result []storedBatch
	from, end := l.LogStartOffset(), l.LogEndOffset()
	for from < end {
		data, err := l.ReadBatches(from, end, 64<<10)
		if err != nil {
			t.Fatalf("read from %d: %v", from, err)
		}
		if len(data) == 0 {
			t.Fatalf("read from %d (end %d): no data", from, end)
		}
		for len(data) > 0 {
			view, err := wire.ParseBatch(data)
			if err != nil {
				t.Fatalf("read from %d: %v", from, err)
			}
			checkBatchIntact(t, view)
			if n := len(result); n > 0 && view.BaseOffset() != result[n-1].last+1 {
				t.Fatalf("batch at %d follows batch ending at %d", view.BaseOffset(), result[n-1].last)
			}
			result = append(result, storedBatch{base: view.BaseOffset(), last: view.LastOffset(), seq: view.BaseSequence(), size: view.Size()})
			from = view.LastOffset() + 1
			data = data[view.Size():]
		}
	}
	return result
}

// openTestLog opens a log and fails the test on error; it closes it at cleanup.
func openTestLog(t testing.TB, dir string, options Options) (*Log, RecoveryReport) {
	t.Helper()
	l, report, err := Open(dir, options)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil && !errors.Is(err, ErrInjected) && !errors.Is(err, ErrCrashed) {
			t.Errorf("close: %v", err)
		}
	})
	return l, report
}

// mustAppend appends and fails the test on error.
func mustAppend(t testing.TB, l *Log, batches []byte) AppendResult {
	t.Helper()
	result, err := l.Append(batches)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return result
}

// fakeClock is an injectable clock.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }
