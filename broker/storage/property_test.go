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
	t.Parallel()
	for seed := range uint64(50) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { runModel(t, seed, 70) })
	}
}

// modelRun is one random run: the log under test, its model and the history.
type modelRun struct {
	t       *testing.T
	random  *rand.Rand
	fs      *FaultFS
	dir     string
	options Options
	log     *Log
	model   *logModel
	history []string
	seq     int32
}

func runModel(t *testing.T, seed uint64, steps int) {
	random := rand.New(rand.NewPCG(seed, 77))
	run := &modelRun{t: t, random: random, fs: NewFaultFS(), dir: t.TempDir(), model: &logModel{}}
	run.options = Options{FS: run.fs, SegmentBytes: int64(500 + random.IntN(3000)), IndexIntervalBytes: 64 + random.IntN(512), Fsync: FsyncPolicy{Mode: FsyncAlways}}
	if seed%2 == 1 {
		run.options.Fsync.Mode = FsyncNever // WaitDurable promises nothing; only flush, close (and truncate) sync
	}
	run.log, _ = openTestLog(t, run.dir, run.options)
	for step := range steps {
		run.step(seed*1000 + uint64(step))
		checkAgainstModel(t, run.log, run.model, run.history)
	}
}

// step runs one random operation on the log and the model.
func (r *modelRun) step(crashSeed uint64) {
	t, l, model := r.t, r.log, r.model
	switch choice := r.random.IntN(100); {
	case choice < 45:
		r.append()
	case choice < 55:
		if model.logEnd > 0 {
			if err := l.WaitDurable(context.Background(), model.logEnd-1); err != nil {
				t.Fatal(err)
			}
			if r.options.Fsync.Mode == FsyncAlways {
				model.durableEnd = model.logEnd
			}
		}
		r.history = append(r.history, "wait durable")
	case choice < 58:
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		model.durableEnd = model.logEnd
		r.history = append(r.history, "flush")
	case choice < 62:
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		if r.options.Fsync.Mode != FsyncNever { // never: the rolled segment syncs in the background
			model.durableEnd = model.logEnd
		}
		r.history = append(r.history, "roll")
	case choice < 72:
		offset := model.logStart + r.random.Int64N(model.logEnd-model.logStart+1)
		if err := l.Truncate(offset); err != nil {
			t.Fatal(err)
		}
		if offset < model.logEnd {
			model.cut(offset)
		}
		r.history = append(r.history, fmt.Sprintf("truncate %d", offset))
	case choice < 77:
		offset := model.logStart + r.random.Int64N(model.logEnd-model.logStart+1)
		if err := l.DeleteRecordsBefore(offset); err != nil {
			t.Fatal(err)
		}
		model.logStart = max(model.logStart, offset)
		r.history = append(r.history, fmt.Sprintf("delete records before %d", offset))
	case choice < 85:
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		r.log, _ = openTestLog(t, r.dir, r.options)
		model.durableEnd = model.logEnd
		r.history = append(r.history, "clean reopen")
	default:
		r.crash(crashSeed)
	}
}

// append appends one to three batches in one call.
func (r *modelRun) append() {
	var data []byte
	for range 1 + r.random.IntN(3) {
		data = append(data, testBatch(r.t, r.seq, 1+r.random.IntN(4), r.random.IntN(300), int64(r.seq))...)
		r.seq++
	}
	result := mustAppend(r.t, r.log, data)
	for rest := data; len(rest) > 0; {
		view, _ := wire.ParseBatch(rest)
		r.model.batches = append(r.model.batches, storedBatch{base: view.BaseOffset(), last: view.LastOffset(), seq: view.BaseSequence(), size: view.Size()})
		rest = rest[view.Size():]
	}
	r.model.logEnd = result.LastOffset + 1
	r.history = append(r.history, fmt.Sprintf("append %d..%d", result.FirstOffset, result.LastOffset))
}

// crash drops unsynced writes (or keeps a torn prefix), reopens and checks
// that what survived lies between the durable point and what was appended.
func (r *modelRun) crash(seed uint64) {
	torn := r.random.IntN(2) == 0
	if err := r.fs.Crash(seed, torn); err != nil {
		r.t.Fatal(err)
	}
	r.log.abandon()
	var report RecoveryReport
	r.log, report = openTestLog(r.t, r.dir, r.options)
	r.history = append(r.history, fmt.Sprintf("crash (torn %v) → %+v", torn, report))
	l, model := r.log, r.model
	if l.LogEndOffset() < model.durableEnd || l.LogEndOffset() > max(model.logEnd, model.logStart) {
		r.t.Fatalf("after crash: log end %d, durable %d, appended up to %d\n%v", l.LogEndOffset(), model.durableEnd, model.logEnd, r.history)
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
