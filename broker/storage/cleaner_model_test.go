package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/wire"
)

// Transaction states of a model record.
const (
	txnNone = iota
	txnOpen
	txnCommitted
	txnAborted
)

// modelRecord is one record the compaction model knows.
type modelRecord struct {
	offset    int64
	key       string
	value     []byte // nil: tombstone
	timestamp int64
	txn       *modelTxn // nil outside transactions
	// horizon is a tombstone's delete horizon: 0 until the first clean
	// covering it stamps its batch with that clean's time plus the
	// delete retention (KIP-534).
	horizon int64
	expired bool // a tombstone whose horizon had passed at a clean

}

// modelTxn is one transaction of the model.
type modelTxn struct {
	producer     int64
	state        int
	batches      []int64 // base offsets of its data batches
	first        int64
	marker       int64 // offset of its marker, -1 while open
	markerTs     int64
	markerExpiry bool
}

// cleanModel is what a compacted log must show (see checkCleanModel).
type cleanModel struct {
	records     map[int64]*modelRecord
	byKey       map[string][]*modelRecord // in offset order
	open        map[int64]*modelTxn       // per transactional producer
	txns        []*modelTxn
	lastBatch   map[int64]storedBatch // per producer: its newest data batch (base, last, seq)
	sequence    map[int64]int32
	logEnd      int64
	cleanedUpTo int64 // FirstDirtyOffset of the last successful clean
}

// lso is the last stable offset: the first offset of the oldest open transaction.
func (m *cleanModel) lso() int64 {
	lso := m.logEnd
	for _, txn := range m.open {
		lso = min(lso, txn.first)
	}
	return lso
}

// cleanRun is one random run of the compaction property test.
type cleanRun struct {
	t         *testing.T
	random    *rand.Rand
	fs        *FaultFS
	dir       string
	options   Options
	clock     *fakeClock
	log       *Log
	model     *cleanModel
	history   []string
	retention time.Duration
	counter   int
	cleans    int
}

// TestCleanAgainstModel runs random keyed, transactional (committed and
// aborted) and tombstone appends with rolls, clock steps, cleanings and
// crashes in the middle of cleanings (a write, sync or rename of the clean
// fails, then the machine loses every unsynced write) and after every
// cleaning checks read_committed and read_uncommitted reads against the
// model: the latest value of every key, tombstones gone once expired,
// aborted data gone, every record at its original offset, markers kept
// while their transaction has batches, each producer's last batch kept.
func TestCleanAgainstModel(t *testing.T) {
	t.Parallel()
	seeds, steps := uint64(40), 160
	if testing.Short() {
		seeds = 8
	}
	cleans := 0
	for seed := range seeds {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { cleans += runCleanModel(t, seed, steps) })
	}
	t.Logf("%d runs of %d steps, %d cleanings checked", seeds, steps, cleans)
}

func runCleanModel(t *testing.T, seed uint64, steps int) int {
	random := rand.New(rand.NewPCG(seed, 2024))
	run := &cleanRun{t: t, random: random, fs: NewFaultFS(), dir: t.TempDir(), clock: &fakeClock{now: time.UnixMilli(1_000_000)},
		retention: time.Duration(50+random.IntN(200)) * time.Millisecond,
		model: &cleanModel{records: map[int64]*modelRecord{}, byKey: map[string][]*modelRecord{}, open: map[int64]*modelTxn{},
			lastBatch: map[int64]storedBatch{}, sequence: map[int64]int32{}}}
	run.options = Options{FS: run.fs, SegmentBytes: int64(400 + random.IntN(1500)), IndexIntervalBytes: 64 + random.IntN(256),
		Fsync: FsyncPolicy{Mode: FsyncAlways}, Now: run.clock.Now}
	run.log, _ = openTestLog(t, run.dir, run.options)
	for range steps {
		run.step()
	}
	run.finalChecks()
	return run.cleans
}

// step runs one random operation.
func (r *cleanRun) step() {
	switch choice := r.random.IntN(100); {
	case choice < 40:
		r.appendKeyed(nil)
	case choice < 55:
		r.appendTxnData()
	case choice < 63:
		r.endTxn(r.random.IntN(2) == 0)
	case choice < 72:
		if err := r.log.Roll(); err != nil {
			r.t.Fatal(err)
		}
		r.history = append(r.history, "roll")
	case choice < 80:
		step := time.Duration(r.random.IntN(120)) * time.Millisecond
		r.clock.now = r.clock.now.Add(step)
		r.history = append(r.history, fmt.Sprintf("clock +%v", step))
	case choice < 93:
		r.clean()
	case choice < 97:
		r.crashDuringClean()
	default:
		if err := r.log.Close(); err != nil {
			r.t.Fatal(err)
		}
		r.log, _ = openTestLog(r.t, r.dir, r.options)
		r.history = append(r.history, "clean reopen")
		r.check()
	}
}

// recordBatch builds a batch of 1..4 keyed records (some tombstones) from
// producer (-1: plain) and returns the records it holds.
func (r *cleanRun) recordBatch(producer int64, transactional bool) ([]byte, []*modelRecord) {
	options := wire.PlainBatchOptions()
	if producer >= 0 {
		options.ProducerID, options.ProducerEpoch, options.BaseSequence = producer, 0, r.model.sequence[producer]
	}
	options.Transactional = transactional
	options.Compression = []wire.Compression{wire.CompressionNone, wire.CompressionNone, wire.CompressionLZ4, wire.CompressionSnappy}[r.random.IntN(4)]
	var list []wire.BuilderRecord
	var records []*modelRecord
	for i := range 1 + r.random.IntN(4) {
		key := fmt.Sprintf("k%d", r.random.IntN(12))
		var value []byte
		if r.random.IntN(6) != 0 {
			r.counter++
			value = fmt.Appendf(nil, "%s=%d", key, r.counter)
		}
		ts := r.clock.now.UnixMilli() - int64(r.random.IntN(20)) + int64(i)
		list = append(list, wire.BuilderRecord{TimestampMillis: ts, Key: []byte(key), Value: value})
		records = append(records, &modelRecord{key: key, value: value, timestamp: ts})
	}
	batch, err := wire.BuildBatch(options, list)
	if err != nil {
		r.t.Fatal(err)
	}
	return batch, records
}

// appendKeyed appends one batch of plain or idempotent records (txn nil)
// or of the open transaction txn.
func (r *cleanRun) appendKeyed(txn *modelTxn) {
	producer := int64(-1)
	if txn != nil {
		producer = txn.producer
	} else if r.random.IntN(2) == 0 {
		producer = 100 // an idempotent producer
	}
	batch, records := r.recordBatch(producer, txn != nil)
	result := mustAppend(r.t, r.log, batch)
	for i, record := range records {
		record.offset, record.txn = result.FirstOffset+int64(i), txn
		r.model.records[record.offset] = record
		r.model.byKey[record.key] = append(r.model.byKey[record.key], record)
	}
	if producer >= 0 {
		view, _ := wire.ParseBatch(batch)
		r.model.lastBatch[producer] = storedBatch{base: result.FirstOffset, last: result.LastOffset, seq: view.BaseSequence()}
		r.model.sequence[producer] += int32(len(records))
	}
	if txn != nil {
		txn.batches = append(txn.batches, result.FirstOffset)
	}
	r.model.logEnd = result.LastOffset + 1
	r.history = append(r.history, fmt.Sprintf("append %d..%d producer %d", result.FirstOffset, result.LastOffset, producer))
}

// appendTxnData appends a batch to a transaction of producer 1..3, opening it if needed.
func (r *cleanRun) appendTxnData() {
	producer := int64(1 + r.random.IntN(3))
	txn := r.model.open[producer]
	if txn == nil {
		txn = &modelTxn{producer: producer, state: txnOpen, first: r.model.logEnd, marker: -1}
		r.model.open[producer] = txn
		r.model.txns = append(r.model.txns, txn)
	}
	r.appendKeyed(txn)
}

// endTxn commits or aborts an open transaction (if any) with a marker.
func (r *cleanRun) endTxn(commit bool) {
	var producers []int64
	for producer := range r.model.open {
		producers = append(producers, producer)
	}
	if len(producers) == 0 {
		return
	}
	slices.Sort(producers)
	txn := r.model.open[producers[r.random.IntN(len(producers))]]
	lso := r.model.lso()
	ts := r.clock.now.UnixMilli()
	result := mustAppend(r.t, r.log, wire.BuildControlBatch(txn.producer, 0, commit, 0, ts))
	txn.marker, txn.markerTs, txn.state = result.FirstOffset, ts, txnCommitted
	if !commit {
		txn.state = txnAborted
		if err := r.log.AppendAbortedTxn(AbortedTxn{ProducerID: txn.producer, FirstOffset: txn.first, LastOffset: txn.marker, LastStableOffset: lso}); err != nil {
			r.t.Fatal(err)
		}
	}
	delete(r.model.open, txn.producer)
	r.model.logEnd = result.LastOffset + 1
	r.history = append(r.history, fmt.Sprintf("end txn of %d at %d (commit %v)", txn.producer, txn.marker, commit))
}

// cleanOptions are the options of every clean of the run.
func (r *cleanRun) cleanOptions() CleanOptions {
	return CleanOptions{UpperBound: r.model.lso(), DeleteRetention: r.retention, MinCompactionLag: 0}
}

// clean runs a clean, updates the model and checks the log.
func (r *cleanRun) clean() {
	result, err := r.log.Clean(r.cleanOptions())
	if err != nil {
		r.t.Fatalf("clean: %v\n%v", err, r.history)
	}
	r.cleaned(result)
}

// cleaned records a successful clean in the model and checks the log.
func (r *cleanRun) cleaned(result CleanResult) {
	r.cleans++
	m := r.model
	if result.FirstDirtyOffset > r.cleanOptions().UpperBound {
		r.t.Fatalf("cleaned up to %d, past the upper bound %d\n%v", result.FirstDirtyOffset, r.cleanOptions().UpperBound, r.history)
	}
	m.cleanedUpTo = max(m.cleanedUpTo, result.FirstDirtyOffset)
	now := r.clock.now.UnixMilli()
	for _, record := range m.records {
		if record.value != nil || record.offset >= m.cleanedUpTo {
			continue
		}
		switch {
		case record.horizon == 0:
			record.horizon = now + r.retention.Milliseconds()
		case record.horizon <= now:
			record.expired = true
		}
	}
	r.history = append(r.history, fmt.Sprintf("clean → %+v", result))
	r.check()
}

// crashDuringClean makes the n-th write, sync or rename of a clean fail,
// crashes (unsynced writes lost, maybe torn), reopens, and cleans again.
func (r *cleanRun) crashDuringClean() {
	if err := r.log.Flush(); err != nil { // the appends are safe: the crash is the clean's
		r.t.Fatal(err)
	}
	n := 1 + r.random.IntN(12)
	kind := r.random.IntN(3)
	switch kind {
	case 0:
		r.fs.FailWrite(n)
	case 1:
		r.fs.FailSync(n)
	default:
		r.fs.FailRename(n)
	}
	_, cleanErr := r.log.Clean(r.cleanOptions())
	torn := r.random.IntN(2) == 0
	if err := r.fs.Crash(r.random.Uint64(), torn); err != nil {
		r.t.Fatal(err)
	}
	r.log.abandon()
	var report RecoveryReport
	r.log, report = openTestLog(r.t, r.dir, r.options)
	r.history = append(r.history, fmt.Sprintf("crash during clean (fault %d #%d, clean error %v) → %+v", kind, n, cleanErr, report))
	if report.TruncatedAt >= 0 || r.log.LogEndOffset() != r.model.logEnd {
		r.t.Fatalf("recovery after a crashed clean lost data: end %d, model %d\n%v", r.log.LogEndOffset(), r.model.logEnd, r.history)
	}
	r.checkOffsets(r.readLog(r.model.logEnd))
	r.clean()
}

// finalChecks ends every transaction, lets the delete retention pass and
// cleans until nothing changes: then no marker is left whose transaction
// has no batch, and no expired tombstone.
func (r *cleanRun) finalChecks() {
	for len(r.model.open) > 0 {
		r.endTxn(r.random.IntN(2) == 0)
	}
	if err := r.log.Roll(); err != nil { // the markers' segment becomes cleanable
		r.t.Fatal(err)
	}
	// A pass removing a transaction's last batch keeps its marker; the next may drop it.
	for range 3 {
		r.clock.now = r.clock.now.Add(r.retention + time.Millisecond)
		r.clean()
	}
	present := map[int64]bool{}
	for _, batch := range r.readLog(r.model.logEnd) {
		present[batch.base] = true
	}
	for _, txn := range r.model.txns {
		if txn.marker < 0 || txn.marker >= r.model.cleanedUpTo || !present[txn.marker] {
			continue
		}
		if !slices.ContainsFunc(txn.batches, func(base int64) bool { return present[base] }) {
			r.t.Fatalf("marker at %d kept though no batch of its transaction is left\n%v", txn.marker, r.history)
		}
	}
}

// readBatch is one batch as the test reads it back.
type readBatch struct {
	base, last    int64
	producer      int64
	seq           int32
	transactional bool
	control       bool
	abort         bool
	horizon       int64          // the delete horizon, 0 if none
	records       []*modelRecord // decoded (offset, key, value, timestamp)
}

// readLog reads every batch below bound, in order, checking CRCs.
func (r *cleanRun) readLog(bound int64) []readBatch {
	var batches []readBatch
	var decompressor wire.Decompressor
	for from := r.log.LogStartOffset(); from < bound; {
		data, err := r.log.ReadBatches(from, bound, 1<<20)
		if err != nil {
			r.t.Fatalf("read from %d: %v\n%v", from, err, r.history)
		}
		if len(data) == 0 {
			break
		}
		for len(data) > 0 {
			view, err := wire.ParseBatch(data)
			if err == nil {
				err = view.Validate()
			}
			if err != nil {
				r.t.Fatalf("batch read at %d: %v\n%v", from, err, r.history)
			}
			batch := readBatch{base: view.BaseOffset(), last: view.LastOffset(), producer: view.ProducerID(), seq: view.BaseSequence(),
				transactional: view.Transactional(), control: view.Control()}
			if horizon, ok := view.DeleteHorizon(); ok {
				batch.horizon = horizon
			}
			if n := len(batches); n > 0 && batch.base <= batches[n-1].last {
				r.t.Fatalf("batch at %d after batch ending at %d\n%v", batch.base, batches[n-1].last, r.history)
			}
			iterator, err := decompressor.Records(view)
			if err != nil {
				r.t.Fatal(err)
			}
			for iterator.Next() {
				record := iterator.Record()
				if batch.control {
					control, err := wire.ParseControlRecord(record.Key, record.Value)
					batch.abort = err == nil && control.Type == wire.ControlAbort
					continue
				}
				batch.records = append(batch.records, &modelRecord{offset: record.Offset, key: string(record.Key), value: bytes.Clone(record.Value),
					timestamp: record.Timestamp})
			}
			if iterator.Err() != nil {
				r.t.Fatalf("records of batch %d: %v", batch.base, iterator.Err())
			}
			batches = append(batches, batch)
			from = batch.last + 1
			data = data[view.Size():]
		}
	}
	return batches
}

// checkOffsets checks every record read is the model's record at its
// offset, with its timestamp (a batch stamped with a delete horizon keeps
// its records' timestamps), and that a tombstone the cleaner kept is in a
// batch carrying the model's delete horizon for it.
func (r *cleanRun) checkOffsets(batches []readBatch) {
	for _, batch := range batches {
		for _, got := range batch.records {
			want := r.model.records[got.offset]
			if want == nil || want.key != got.key || !bytes.Equal(want.value, got.value) || (want.value == nil) != (got.value == nil) ||
				want.timestamp != got.timestamp {
				r.t.Fatalf("record at %d is %s=%q at %d, the model has %+v\n%v", got.offset, got.key, got.value, got.timestamp, want, r.history)
			}
			if want.value == nil && want.horizon != 0 && batch.horizon != want.horizon {
				r.t.Fatalf("tombstone at %d: batch %d has delete horizon %d, the model %d\n%v", got.offset, batch.base, batch.horizon, want.horizon, r.history)
			}
		}
	}
}

// check compares a read_uncommitted and a read_committed read with the model.
func (r *cleanRun) check() {
	m := r.model
	all := r.readLog(m.logEnd)
	r.checkOffsets(all)
	r.compareLatest("read_uncommitted", latestRead(all), r.expectedUncommitted())
	r.compareLatest("read_committed", latestRead(r.committedView(r.readLog(m.lso()))), r.expectedCommitted())
	seen := map[string]int64{}
	present := map[int64]bool{}
	for _, batch := range all {
		present[batch.base] = true
		for _, record := range batch.records {
			if record.offset >= m.cleanedUpTo {
				continue
			}
			if previous, ok := seen[record.key]; ok {
				r.t.Fatalf("key %s at %d and %d below the cleaned end %d\n%v", record.key, previous, record.offset, m.cleanedUpTo, r.history)
			}
			seen[record.key] = record.offset
		}
	}
	for producer, last := range m.lastBatch {
		i := slices.IndexFunc(all, func(b readBatch) bool { return b.base == last.base })
		if i < 0 || all[i].last != last.last || all[i].seq != last.seq || all[i].producer != producer {
			r.t.Fatalf("last batch %+v of producer %d not kept\n%v", last, producer, r.history)
		}
	}
	for _, txn := range m.txns {
		if txn.marker >= 0 && !present[txn.marker] && slices.ContainsFunc(txn.batches, func(base int64) bool { return present[base] }) {
			r.t.Fatalf("marker at %d removed while its transaction has batches left\n%v", txn.marker, r.history)
		}
	}
}

// committedView filters aborted transactions out as a read_committed
// consumer does, from the log's aborted-transaction index.
func (r *cleanRun) committedView(batches []readBatch) []readBatch {
	aborted := r.log.AbortedTxns(r.log.LogStartOffset(), r.model.lso())
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	abortedProducers := map[int64]bool{}
	var kept []readBatch
	for _, batch := range batches {
		for len(aborted) > 0 && aborted[0].FirstOffset <= batch.last {
			abortedProducers[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		switch {
		case batch.control:
			if batch.abort {
				delete(abortedProducers, batch.producer)
			}
		case batch.transactional && abortedProducers[batch.producer]:
		default:
			kept = append(kept, batch)
		}
	}
	return kept
}

// latestRead is the last value read per key (nil: tombstone).
func latestRead(batches []readBatch) map[string][]byte {
	latest := map[string][]byte{}
	for _, batch := range batches {
		for _, record := range batch.records {
			latest[record.key] = record.value
		}
	}
	return latest
}

// expectedUncommitted is the latest value per key a full read must show:
// the newest record, except that aborted data and expired tombstones below
// the cleaned end are gone.
func (r *cleanRun) expectedUncommitted() map[string][]byte {
	return r.expected(func(record *modelRecord) bool {
		return record.offset >= r.model.cleanedUpTo || record.txn == nil || record.txn.state != txnAborted
	})
}

// expectedCommitted is the latest committed value per key below the LSO.
func (r *cleanRun) expectedCommitted() map[string][]byte {
	lso := r.model.lso()
	return r.expected(func(record *modelRecord) bool {
		return record.offset < lso && (record.txn == nil || record.txn.state == txnCommitted)
	})
}

// expected is the newest visible record per key, absent if it is an expired tombstone.
func (r *cleanRun) expected(visible func(*modelRecord) bool) map[string][]byte {
	expected := map[string][]byte{}
	for key, records := range r.model.byKey {
		for i := len(records) - 1; i >= 0; i-- {
			if record := records[i]; visible(record) {
				if !record.expired || record.offset >= r.model.cleanedUpTo {
					expected[key] = record.value
				}
				break
			}
		}
	}
	return expected
}

// compareLatest fails the test when the latest values differ.
func (r *cleanRun) compareLatest(what string, got, want map[string][]byte) {
	r.t.Helper()
	for key, value := range want {
		if have, ok := got[key]; !ok || !bytes.Equal(have, value) || (have == nil) != (value == nil) {
			r.t.Fatalf("%s: key %s is %q (present %v), want %q\n%v", what, key, have, ok, value, r.history)
		}
	}
	for key, value := range got {
		if _, ok := want[key]; !ok {
			r.t.Fatalf("%s: key %s is %q, want it gone\n%v", what, key, value, r.history)
		}
	}
}
