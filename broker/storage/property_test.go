package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/exactly-eos/exactly/wire"
)

// logModel is the in-memory model the property test checks the log against.
type logModel struct {
	batches    []storedBatch // every batch appended and not truncated, in order
	logStart   int64
	logEnd     int64
	durableEnd int64 // offsets below it must survive a crash
}

// cut drops the batches from the one containing offset on.
func (m *logModel) cut(offset int64) {
	for i, b := range m.batches {
		if b.last >= offset {
			m.logEnd = b.base
			m.batches = m.batches[:i]
			break
		}
	}
	m.durableEnd = min(m.durableEnd, m.logEnd)
	m.logStart = min(m.logStart, m.logEnd)
}

// visible is what a reader from the log start must see.
func (m *logModel) visible() []storedBatch {
	for i, b := range m.batches {
		if b.last >= m.logStart {
			return m.batches[i:]
		}
	}
	return nil
}

// TestLogAgainstModel runs random sequences of appends, rolls, truncations,
// syncs, log-start moves, clean reopens and crashes (dropping unsynced
// writes, or keeping a torn prefix of them) and checks the log against the model.
func TestLogAgainstModel(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { runModel(t, seed, 60) })
	}
}

func runModel(t *testing.T, seed uint64, steps int) {
	random := rand.New(rand.NewPCG(seed, 77))
	fs := NewFaultFS()
	dir := t.TempDir()
	options := Options{FS: fs, SegmentBytes: int64(500 + random.IntN(3000)), IndexIntervalBytes: 64 + random.IntN(512), Fsync: FsyncPolicy{Mode: FsyncAlways}}
	if seed%2 == 1 {
		options.Fsync.Mode = FsyncNever // WaitDurable promises nothing; only roll, flush and close sync
	}
	l, _ := openTestLog(t, dir, options)
	model := &logModel{}
	var history []string
	seq := int32(0)
	for step := range steps {
		switch choice := random.IntN(100); {
		case choice < 45:
			var data []byte
			for range 1 + random.IntN(3) {
				data = append(data, testBatch(t, seq, 1+random.IntN(4), random.IntN(300), int64(seq))...)
				seq++
			}
			result := mustAppend(t, l, data)
			for rest := data; len(rest) > 0; {
				view, _ := wire.ParseBatch(rest)
				model.batches = append(model.batches, storedBatch{base: view.BaseOffset(), last: view.LastOffset(), seq: view.BaseSequence(), size: view.Size()})
				rest = rest[view.Size():]
			}
			model.logEnd = result.LastOffset + 1
			history = append(history, fmt.Sprintf("append %d..%d", result.FirstOffset, result.LastOffset))
		case choice < 55:
			if model.logEnd > 0 {
				if err := l.WaitDurable(context.Background(), model.logEnd-1); err != nil {
					t.Fatal(err)
				}
				if options.Fsync.Mode == FsyncAlways {
					model.durableEnd = model.logEnd
				}
			}
			history = append(history, "wait durable")
		case choice < 58:
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			model.durableEnd = model.logEnd
			history = append(history, "flush")
		case choice < 62:
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			model.durableEnd = model.logEnd
			history = append(history, "roll")
		case choice < 72:
			offset := model.logStart + random.Int64N(model.logEnd-model.logStart+1)
			if err := l.Truncate(offset); err != nil {
				t.Fatal(err)
			}
			if offset < model.logEnd {
				model.cut(offset)
			}
			history = append(history, fmt.Sprintf("truncate %d", offset))
		case choice < 77:
			offset := model.logStart + random.Int64N(model.logEnd-model.logStart+1)
			if err := l.DeleteRecordsBefore(offset); err != nil {
				t.Fatal(err)
			}
			model.logStart = max(model.logStart, offset)
			history = append(history, fmt.Sprintf("delete records before %d", offset))
		case choice < 85:
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l, _ = openTestLog(t, dir, options)
			model.durableEnd = model.logEnd
			history = append(history, "clean reopen")
		default:
			torn := random.IntN(2) == 0
			if err := fs.Crash(seed*1000+uint64(step), torn); err != nil {
				t.Fatal(err)
			}
			l.abandon()
			var report RecoveryReport
			l, report = openTestLog(t, dir, options)
			history = append(history, fmt.Sprintf("crash (torn %v) → %+v", torn, report))
			if l.LogEndOffset() < model.durableEnd || l.LogEndOffset() > max(model.logEnd, model.logStart) {
				t.Fatalf("after crash: log end %d, durable %d, appended up to %d\n%v", l.LogEndOffset(), model.durableEnd, model.logEnd, history)
			}
			if l.LogEndOffset() <= model.logStart {
				// The log start offset was persisted beyond what survived: the
				// log restarts empty there, never reusing deleted offsets.
				model.batches, model.logEnd = nil, model.logStart
			} else {
				model.cut(l.LogEndOffset())
			}
			model.durableEnd = model.logEnd
		}
		checkAgainstModel(t, l, model, history)
	}
}

// checkAgainstModel compares offsets and every visible batch.
func checkAgainstModel(t *testing.T, l *Log, model *logModel, history []string) {
	t.Helper()
	if l.LogStartOffset() != model.logStart || l.LogEndOffset() != model.logEnd {
		t.Fatalf("log %d..%d, model %d..%d\n%v", l.LogStartOffset(), l.LogEndOffset(), model.logStart, model.logEnd, history)
	}
	got, want := readAll(t, l), model.visible()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("log holds %v\nmodel %v\n%v", got, want, history)
	}
}
