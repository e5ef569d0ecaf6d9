package loadgen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/appdb"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/pollwatch"
	"github.com/exactly-eos/exactly/loadgen/verify"
	"github.com/exactly-eos/exactly/loadgen/worker"
)

// dbStageSpec is one consume worker of the consumer-dedup or
// external-offsets mode, in process or in a worker subprocess.
type dbStageSpec struct {
	mode     string
	options  []kgo.Opt // seed brokers and fault settings
	clientID string
	group    string
	input    string
	// run keys the run's rows in the database (the input topic).
	run string
	// worker names the worker in its output rows.
	worker string
	// window is consumer-dedup's window in offsets per partition.
	window int64
	// shortSession sets a 6 s session timeout, so the group notices a
	// killed worker quickly.
	shortSession bool
	// onAssignment, when set, is told how many input partitions the
	// worker holds after each change.
	onAssignment func(count int)
}

// dbStageSpec returns worker index's settings in plan.
func (plan runPlan) dbStageSpec(index int) dbStageSpec {
	return dbStageSpec{
		mode: plan.mode, options: append(plan.clientOptions(), plan.observations.watch(consumersDatabase)),
		clientID: fmt.Sprintf("exactly-loadgen-%s-consumer-%d", plan.topicSuffix, index),
		group:    "exactly-" + plan.runIDText + "-" + plan.topicSuffix, input: plan.topic, run: plan.topic,
		worker: fmt.Sprintf("w%d", index), window: plan.workload.Application.DedupWindow,
	}
}

// dbStage is one consume worker. Its work method runs on one goroutine,
// which owns the client and processes polls; kgo's group goroutine calls
// seekToStored (it touches only the database and stats). The hooks are set
// in a worker subprocess, before work starts.
type dbStage struct {
	spec dbStageSpec
	// kind is the mode's database stage: dedup or stored offsets.
	kind    modes.Stage
	db      *appdb.DB
	client  *kgo.Client
	metrics *runMetrics
	stats   *applicationStats
	// onOpen is called when a transaction with records begins; onCommit
	// after each commit with the rows it delivered, their send times and
	// how long the commit took; crashAt(point) returns true to make the
	// worker die at point (a worker.Crash point).
	onOpen   func()
	onCommit func(rows int64, sendTimes []int64, took time.Duration)
	crashAt  func(point int, rows int) bool
}

// newDBStage creates a worker's group client.
func newDBStage(spec dbStageSpec, db *appdb.DB, metrics *runMetrics, stats *applicationStats) (*dbStage, error) {
	stage := &dbStage{spec: spec, kind: specOf(spec.mode).Stage, db: db, metrics: metrics, stats: stats}
	options := append(append([]kgo.Opt(nil), spec.options...),
		kgo.ClientID(spec.clientID),
		kgo.ConsumerGroup(spec.group),
		kgo.ConsumeTopics(spec.input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond),
		// A rebalance waits until the poll being processed is committed
		// to the database: a partition moves with its stored offsets.
		kgo.BlockRebalanceOnPoll(),
		kgo.WithLogger(clientLogger{metrics: metrics}),
	)
	options = append(options, assignmentOptions(spec.input, stage.kind == modes.DedupStage, spec.onAssignment)...)
	switch stage.kind {
	case modes.StoredOffsetsStage:
		options = append(options, kgo.DisableAutoCommit(), kgo.AdjustFetchOffsetsFn(stage.seekToStored))
	case modes.DedupStage:
		options = append(options, kgo.AutoCommitMarks(), kgo.AutoCommitInterval(time.Second))
	default:
		return nil, fmt.Errorf("mode %s has no database stage", spec.mode)
	}
	if spec.shortSession {
		options = append(options, kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	}
	client, err := kgo.NewClient(options...)
	if err != nil {
		return nil, fmt.Errorf("%s consumer %s: %w", spec.mode, spec.worker, err)
	}
	stage.client = client
	return stage, nil
}

// seekToStored is the external-offsets stage's seek on assignment (the
// seed's KafkaConsumer.seek() in onPartitionsAssigned): every partition
// assigned starts at the offset stored in the database, or at the log
// start when none is stored. kgo calls it after each assignment, before
// fetching begins (SetOffsets in OnPartitionsAssigned would be skipped:
// the partitions are not consumed yet).
func (s *dbStage) seekToStored(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	partitions := make([]int32, 0, len(assigned[s.spec.input]))
	for partition := range assigned[s.spec.input] {
		partitions = append(partitions, partition)
	}
	stored, err := s.db.LoadOffsets(ctx, s.spec.run, partitions)
	if err != nil {
		s.metrics.recordError(err)
		return nil, err
	}
	s.stats.seeks.Add(1)
	return seekOffsets(assigned, s.spec.input, stored), nil
}

// seekOffsets returns assigned with the input topic's partitions moved to
// their stored offsets (without a leader epoch: no log-truncation check
// against a position the broker did not give).
func seekOffsets(assigned map[string]map[int32]kgo.Offset, input string, stored map[int32]int64) map[string]map[int32]kgo.Offset {
	for partition := range assigned[input] {
		if offset, ok := stored[partition]; ok {
			assigned[input][partition] = kgo.NewOffset().At(offset).WithEpoch(-1)
		}
	}
	return assigned
}

// work polls and processes until ctx ends or processing fails, or, under
// group-churn (leave not nil), until it ends a database transaction with
// a rollback to leave the group.
func (s *dbStage) work(ctx context.Context, leave *departure) error {
	defer s.client.Close()
	polls := pollwatch.Of(s.client) // the poll checker's (package pollwatch)
	for ctx.Err() == nil {
		pollCtx, cancel := leave.pollContext(ctx)
		fetches := s.client.PollFetches(pollCtx)
		cancel()
		polls.Fetched(fetches)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			s.client.AllowRebalance()
			return nil
		}
		for _, fetchErr := range fetches.Errors() {
			if !errors.Is(fetchErr.Err, context.Canceled) && !errors.Is(fetchErr.Err, context.DeadlineExceeded) {
				s.metrics.recordError(fetchErr.Err)
			}
		}
		if fetches.NumRecords() == 0 {
			s.client.AllowRebalance()
			if leave.requested() {
				leave.leftIdle()
				return nil
			}
			if reason := s.metrics.unsupportedMode(); reason != "" {
				return errors.New(reason)
			}
			continue
		}
		commit := leave.commitNext()
		committed, err := s.process(ctx, fetches, commit)
		s.client.AllowRebalance()
		if err != nil {
			return err
		}
		if !commit {
			leave.aborted(fetches.NumRecords())
			return nil
		}
		if committed {
			leave.committed(fetches)
		}
	}
	return nil
}

// errOffsetConflict means the stored offsets moved under the worker: its
// poll is dropped and it seeks to the stored offsets again.
var errOffsetConflict = errors.New("stored offsets changed under this worker")

// maxTransactionAttempts bounds the retries of one poll's transaction
// (lock timeouts, a unique-key race with another worker).
const maxTransactionAttempts = 5

// errLeaving ends a database transaction with a rollback: its worker
// leaves the group (group-churn).
var errLeaving = errors.New("rolled back: the worker leaves the group")

// process commits one poll's records to the database (retrying transient
// failures), then marks them for Kafka's commit (consumer-dedup). When
// commit is false (a worker leaving under group-churn) it writes them in a
// database transaction and rolls it back, marking nothing. It reports
// whether the poll was committed to the database.
func (s *dbStage) process(ctx context.Context, fetches kgo.Fetches, commit bool) (bool, error) {
	byPartition := make(map[int32][]*kgo.Record)
	var all []*kgo.Record
	fetches.EachRecord(func(record *kgo.Record) {
		if record.Topic == s.spec.input {
			byPartition[record.Partition] = append(byPartition[record.Partition], record)
			all = append(all, record)
		}
	})
	var err error
	for attempt := range maxTransactionAttempts {
		err = s.transact(ctx, byPartition, commit)
		switch {
		case err == nil:
			if s.kind == modes.DedupStage {
				s.client.MarkCommitRecords(all...)
			}
			return true, nil
		case errors.Is(err, errLeaving):
			return false, nil
		case errors.Is(err, errOffsetConflict):
			s.stats.conflicts.Add(1)
			return false, s.seekAgain(ctx, byPartition)
		case ctx.Err() != nil:
			return false, nil // stopping: the poll stays uncommitted, as after a crash
		}
		s.metrics.recordError(err)
		if !sleepUntil(ctx, time.Now().Add(faultRetryBackoff(attempt))) {
			return false, nil
		}
	}
	return false, fmt.Errorf("%s worker %s: %w", s.spec.mode, s.spec.worker, err)
}

// seekAgain moves the poll's partitions back to their stored offsets.
func (s *dbStage) seekAgain(ctx context.Context, byPartition map[int32][]*kgo.Record) error {
	partitions := make([]int32, 0, len(byPartition))
	for partition := range byPartition {
		partitions = append(partitions, partition)
	}
	stored, err := s.db.LoadOffsets(ctx, s.spec.run, partitions)
	if err != nil {
		return fmt.Errorf("seek after an offset conflict: %w", err)
	}
	seek := map[string]map[int32]kgo.EpochOffset{s.spec.input: {}}
	for partition, offset := range stored {
		seek[s.spec.input][partition] = kgo.EpochOffset{Epoch: -1, Offset: offset}
	}
	s.client.SetOffsets(seek)
	pollwatch.Of(s.client).Rewound(partitions) // a seek: the poll checker must not compare across it
	return nil
}

// transact writes one poll in one database transaction: for
// external-offsets the rows and the advanced offsets, for consumer-dedup
// the rows of keys not seen and the keys. Without commit it rolls the
// transaction back once everything is written and returns errLeaving.
func (s *dbStage) transact(ctx context.Context, byPartition map[int32][]*kgo.Record, commit bool) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if s.onOpen != nil {
		s.onOpen()
	}
	partitions := make([]int32, 0, len(byPartition))
	for partition := range byPartition {
		partitions = append(partitions, partition)
	}
	slices.Sort(partitions) // one lock order for every worker
	var rows []appdb.Row
	for _, partition := range partitions {
		var partitionRows []appdb.Row
		if s.kind == modes.StoredOffsetsStage {
			partitionRows, err = s.advance(ctx, tx, partition, byPartition[partition])
		} else {
			partitionRows, err = s.deduplicate(ctx, tx, partition, byPartition[partition])
		}
		if err != nil {
			return err
		}
		rows = append(rows, partitionRows...)
	}
	if err := s.db.InsertOutput(ctx, tx, s.spec.run, s.spec.worker, rows); err != nil {
		return err
	}
	if s.crashAt != nil {
		s.crashAt(worker.CrashInTransaction, len(rows))
	}
	if !commit {
		return errLeaving // the deferred Rollback ends it
	}
	started := time.Now()
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	s.committed(rows, time.Since(started))
	if s.crashAt != nil {
		s.crashAt(worker.CrashAfterCommit, len(rows))
	}
	return nil
}

// committed records a commit's measurements.
func (s *dbStage) committed(rows []appdb.Row, took time.Duration) {
	s.stats.databaseCommits.Add(1)
	if s.onCommit != nil {
		sendTimes := make([]int64, len(rows))
		for i, row := range rows {
			sendTimes[i] = row.SendTime
		}
		s.onCommit(int64(len(rows)), sendTimes, took)
		return
	}
	now := time.Now()
	for _, row := range rows {
		s.metrics.recordEndToEnd(time.Unix(0, row.SendTime), now)
	}
	s.metrics.recordTransactionEnd(true, false, took)
}

// advance turns one partition's records into rows and moves its stored
// offset past them. Records below the stored offset were processed
// already (a redelivery) and are skipped; records starting beyond it mean
// this worker's position is ahead of the database: a conflict.
func (s *dbStage) advance(ctx context.Context, tx *sql.Tx, partition int32, records []*kgo.Record) ([]appdb.Row, error) {
	stored, found, err := s.db.StoredOffset(ctx, tx, s.spec.run, partition)
	if err != nil {
		return nil, err
	}
	if found {
		first := 0
		for first < len(records) && records[first].Offset < stored {
			first++
		}
		records = records[first:]
		if len(records) == 0 {
			return nil, nil
		}
		if records[0].Offset > stored {
			return nil, fmt.Errorf("%w: partition %d stored at %d, records start at %d", errOffsetConflict, partition, stored, records[0].Offset)
		}
	}
	rows := make([]appdb.Row, 0, len(records))
	for _, record := range records {
		if row, ok := rowOf(record, -1); ok {
			rows = append(rows, row)
		}
	}
	moved, err := s.db.AdvanceOffset(ctx, tx, s.spec.run, partition, stored, found, records[len(records)-1].Offset+1)
	if err != nil {
		return nil, err
	}
	if !moved {
		return nil, fmt.Errorf("%w: partition %d moved from %d by another worker", errOffsetConflict, partition, stored)
	}
	return rows, nil
}

// deduplicate turns one partition's records into rows, dropping those
// whose key the window holds (or that repeat within the poll), and
// remembers the new keys, forgetting those that fell out of the window.
func (s *dbStage) deduplicate(ctx context.Context, tx *sql.Tx, partition int32, records []*kgo.Record) ([]appdb.Row, error) {
	highest, err := s.db.HighestKeyOffset(ctx, tx, s.spec.run, partition)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(records))
	for i, record := range records {
		keys[i] = string(record.Key)
	}
	seen, err := s.db.SeenKeys(ctx, tx, s.spec.run, partition, keys)
	if err != nil {
		return nil, err
	}
	window := dedupWindow{size: s.spec.window, highest: highest}
	kept := window.filter(records, seen)
	s.stats.dropped.Add(int64(len(records) - len(kept)))
	rows := make([]appdb.Row, 0, len(kept))
	newKeys, newOffsets := make([]string, 0, len(kept)), make([]int64, 0, len(kept))
	for _, record := range kept {
		if row, ok := rowOf(record, window.floor()); ok {
			rows = append(rows, row)
		}
		newKeys, newOffsets = append(newKeys, string(record.Key)), append(newOffsets, record.Offset)
	}
	for _, record := range records {
		window.highest = max(window.highest, record.Offset)
	}
	if err := s.db.RememberKeys(ctx, tx, s.spec.run, partition, newKeys, newOffsets, window.floor()); err != nil {
		return nil, err
	}
	return rows, nil
}

// dedupWindow is consumer-dedup's window over one partition: the keys of
// the records at offsets from floor() up to highest, the highest offset
// processed. A copy of a record whose first copy fell below the floor is
// not detected: the window bounds the store, and the results count such
// copies as unprotected.
type dedupWindow struct {
	size    int64 // offsets per partition
	highest int64 // -1: nothing processed
}

// floor is the lowest offset whose key the window still holds.
func (w dedupWindow) floor() int64 {
	return max(w.highest-w.size+1, 0)
}

// filter returns the records to deliver: those whose key is neither in
// seen (the window's keys) nor earlier in records.
func (w dedupWindow) filter(records []*kgo.Record, seen map[string]bool) []*kgo.Record {
	inPoll := make(map[string]bool, len(records))
	kept := make([]*kgo.Record, 0, len(records))
	for _, record := range records {
		key := string(record.Key)
		if seen[key] || inPoll[key] {
			continue
		}
		inPoll[key] = true
		kept = append(kept, record)
	}
	return kept
}

// rowOf is the output row of an input record, or false for a record
// without a loadgen header.
func rowOf(record *kgo.Record, windowFloor int64) (appdb.Row, bool) {
	header, err := verify.DecodeHeader(record.Value)
	if err != nil {
		return appdb.Row{}, false
	}
	return appdb.Row{Producer: header.Producer, Seq: header.Sequence, SendTime: header.SendTime,
		Partition: record.Partition, Offset: record.Offset, WindowFloor: windowFloor}, true
}

// startDBStage starts the in-process workers of plan's stage.
func startDBStage(ctx context.Context, l *loadRun) (*pipeline, error) {
	workers := l.plan.workload.Pipeline.Workers
	p, ctx := newPipeline(ctx, workers)
	var stages []*dbStage
	for index := range workers {
		spec := l.plan.dbStageSpec(index)
		spec.onAssignment = func(count int) { p.watch.set(index, count) }
		stage, err := newDBStage(spec, l.plan.appDB, l.metrics, l.stats)
		if err != nil {
			p.cancel()
			for _, started := range stages {
				started.client.Close()
			}
			return nil, err
		}
		stage.onCommit = func(rows int64, sendTimes []int64, took time.Duration) {
			now := time.Now()
			for _, sendTime := range sendTimes {
				l.metrics.recordEndToEnd(time.Unix(0, sendTime), now)
			}
			l.metrics.recordTransactionEnd(true, false, took)
			p.committed.add(rows)
		}
		stages = append(stages, stage)
	}
	p.runWorkers(workers, func(index int) error { return stages[index].work(ctx, nil) })
	return p, nil
}
