package stages

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/internal/wait"
	"github.com/exactly-eos/exactly/loadgen/appdb"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/pollwatch"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// DBSpec is one database stage worker, in process or in a worker
// subprocess.
type DBSpec struct {
	// Mode is the run's delivery mode, whose Stage (modes.DedupStage or
	// modes.StoredOffsetsStage) the worker runs.
	Mode     string
	Options  []kgo.Opt // seed brokers and fault settings
	ClientID string
	Group    string
	Input    string
	// Run keys the run's rows in the database (the input topic).
	Run string
	// Worker names the worker in its output rows.
	Worker string
	// Window is the dedup stage's window in offsets per partition.
	Window int64
	// ShortSession sets a ShortSessionTimeout session (classic protocol),
	// so the group notices a killed worker quickly.
	ShortSession bool
	// OnAssignment, when set, is told how many input partitions the
	// worker holds after each change.
	OnAssignment func(count int)
}

// DBStage is one database stage worker. Its Work method runs on one
// goroutine, which owns the client and processes polls; kgo's group
// goroutine calls seekToStored (it touches only the database and stats).
// The hooks are set before Work starts.
type DBStage struct {
	spec DBSpec
	// kind is the mode's database stage: dedup or stored offsets.
	kind    modes.Stage
	db      *appdb.DB
	client  *kgo.Client
	metrics Metrics
	stats   *Stats
	// OnOpen is called when a transaction with records begins; OnCommit
	// after each commit with the rows it delivered, their send times and
	// how long the commit took (unset: the stage records them in its
	// Metrics); CrashAt(point, rows) is called at each crash point (in a
	// worker subprocess, it kills the worker when the runner asked).
	OnOpen   func()
	OnCommit func(rows int64, sendTimes []int64, took time.Duration)
	CrashAt  func(point int, rows int) bool
}

// Crash points of a database stage worker (DBStage.CrashAt).
const (
	// CrashAfterCommit: the database transaction committed, the next
	// poll (and the Kafka offset commit) not begun.
	CrashAfterCommit = iota + 1
	// CrashInTransaction: output rows inserted, not committed.
	CrashInTransaction
)

// Close closes the worker's client (a worker that never ran: Work closes
// it otherwise).
func (s *DBStage) Close() { s.client.Close() }

// NewDBStage creates a worker's group client.
func NewDBStage(spec DBSpec, db *appdb.DB, metrics Metrics, stats *Stats) (*DBStage, error) {
	stage := &DBStage{spec: spec, db: db, metrics: metrics, stats: stats}
	if mode, ok := modes.Lookup(spec.Mode); ok {
		stage.kind = mode.Stage
	}
	options := append(append([]kgo.Opt(nil), spec.Options...),
		kgo.ClientID(spec.ClientID),
		kgo.ConsumerGroup(spec.Group),
		kgo.ConsumeTopics(spec.Input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond),
		// A rebalance waits until the poll being processed is committed
		// to the database: a partition moves with its stored offsets.
		kgo.BlockRebalanceOnPoll(),
		kgo.WithLogger(metrics.Logger()),
	)
	options = append(options, AssignmentOptions(spec.Input, stage.kind == modes.DedupStage, spec.OnAssignment)...)
	switch stage.kind {
	case modes.StoredOffsetsStage:
		options = append(options, kgo.DisableAutoCommit(), kgo.AdjustFetchOffsetsFn(stage.seekToStored))
	case modes.DedupStage:
		options = append(options, kgo.AutoCommitMarks(), kgo.AutoCommitInterval(time.Second))
	default:
		return nil, fmt.Errorf("mode %s has no database stage", spec.Mode)
	}
	if spec.ShortSession {
		options = append(options, kgo.SessionTimeout(ShortSessionTimeout), kgo.HeartbeatInterval(ShortHeartbeatInterval))
	}
	client, err := kgo.NewClient(options...)
	if err != nil {
		return nil, fmt.Errorf("%s consumer %s: %w", spec.Mode, spec.Worker, err)
	}
	stage.client = client
	return stage, nil
}

// seekToStored is the stored-offsets stage's seek on assignment (a
// KafkaConsumer.seek() in onPartitionsAssigned): every partition
// assigned starts at the offset stored in the database, or at the log
// start when none is stored. kgo calls it after each assignment, before
// fetching begins (SetOffsets in OnPartitionsAssigned would be skipped:
// the partitions are not consumed yet).
func (s *DBStage) seekToStored(ctx context.Context, assigned map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	partitions := make([]int32, 0, len(assigned[s.spec.Input]))
	for partition := range assigned[s.spec.Input] {
		partitions = append(partitions, partition)
	}
	stored, err := s.db.LoadOffsets(ctx, s.spec.Run, partitions)
	if err != nil {
		s.metrics.RecordError(err)
		return nil, err
	}
	s.stats.Seeks.Add(1)
	return seekOffsets(assigned, s.spec.Input, stored), nil
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

// Work polls and processes until ctx ends or processing fails, or, under
// group-churn (leave not nil), until it ends a database transaction with
// a rollback to leave the group.
func (s *DBStage) Work(ctx context.Context, leave *Departure) error {
	defer s.client.Close()
	polls := pollwatch.Of(s.client) // the poll checker's (package pollwatch)
	loop := pollLoop{
		poll:             s.client.PollFetches,
		allowRebalance:   s.client.AllowRebalance,
		checkUnsupported: true,
		process:          s.process,
	}
	return loop.run(ctx, polls, s.metrics, leave)
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
// failures), then marks them for Kafka's commit (the dedup stage). When
// commit is false (a worker leaving under group-churn) it writes them in a
// database transaction and rolls it back, marking nothing. It reports
// whether the poll was committed to the database.
func (s *DBStage) process(ctx context.Context, fetches kgo.Fetches, commit bool) (bool, error) {
	byPartition := make(map[int32][]*kgo.Record)
	var all []*kgo.Record
	fetches.EachRecord(func(record *kgo.Record) {
		if record.Topic == s.spec.Input {
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
			s.stats.Conflicts.Add(1)
			return false, s.seekAgain(ctx, byPartition)
		case ctx.Err() != nil:
			return false, nil // stopping: the poll stays uncommitted, as after a crash
		}
		s.metrics.RecordError(err)
		if !wait.Until(ctx, time.Now().Add(retryBackoff(attempt))) {
			return false, nil
		}
	}
	return false, fmt.Errorf("%s worker %s: %w", s.spec.Mode, s.spec.Worker, err)
}

// seekAgain moves the poll's partitions back to their stored offsets.
func (s *DBStage) seekAgain(ctx context.Context, byPartition map[int32][]*kgo.Record) error {
	partitions := make([]int32, 0, len(byPartition))
	for partition := range byPartition {
		partitions = append(partitions, partition)
	}
	stored, err := s.db.LoadOffsets(ctx, s.spec.Run, partitions)
	if err != nil {
		return fmt.Errorf("seek after an offset conflict: %w", err)
	}
	seek := map[string]map[int32]kgo.EpochOffset{s.spec.Input: {}}
	for partition, offset := range stored {
		seek[s.spec.Input][partition] = kgo.EpochOffset{Epoch: -1, Offset: offset}
	}
	s.client.SetOffsets(seek)
	pollwatch.Of(s.client).Rewound(partitions) // a seek: the poll checker must not compare across it
	return nil
}

// transact writes one poll in one database transaction: for the
// stored-offsets stage the rows and the advanced offsets, for the dedup
// stage the rows of keys not seen and the keys. Without commit it rolls the
// transaction back once everything is written and returns errLeaving.
func (s *DBStage) transact(ctx context.Context, byPartition map[int32][]*kgo.Record, commit bool) error {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if s.OnOpen != nil {
		s.OnOpen()
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
	if err := s.db.InsertOutput(ctx, tx, s.spec.Run, s.spec.Worker, rows); err != nil {
		return err
	}
	if s.CrashAt != nil {
		s.CrashAt(CrashInTransaction, len(rows))
	}
	if !commit {
		return errLeaving // the deferred Rollback ends it
	}
	started := time.Now()
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	s.committed(rows, time.Since(started))
	if s.stats.Processed != nil {
		for partition, records := range byPartition {
			if len(records) > 0 {
				s.stats.Processed.Advance(partition, records[len(records)-1].Offset+1)
			}
		}
	}
	if s.CrashAt != nil {
		s.CrashAt(CrashAfterCommit, len(rows))
	}
	return nil
}

// committed records a commit's measurements.
func (s *DBStage) committed(rows []appdb.Row, took time.Duration) {
	s.stats.DatabaseCommits.Add(1)
	if s.OnCommit != nil {
		sendTimes := make([]int64, len(rows))
		for i, row := range rows {
			sendTimes[i] = row.SendTime
		}
		s.OnCommit(int64(len(rows)), sendTimes, took)
		return
	}
	now := time.Now()
	for _, row := range rows {
		s.metrics.RecordEndToEnd(time.Unix(0, row.SendTime), now)
	}
	s.metrics.RecordTransactionEnd(true, false, took)
}

// advance turns one partition's records into rows and moves its stored
// offset past them. Records below the stored offset were processed
// already (a redelivery) and are skipped; records starting beyond it mean
// this worker's position is ahead of the database: a conflict.
func (s *DBStage) advance(ctx context.Context, tx *sql.Tx, partition int32, records []*kgo.Record) ([]appdb.Row, error) {
	stored, found, err := s.db.StoredOffset(ctx, tx, s.spec.Run, partition)
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
	moved, err := s.db.AdvanceOffset(ctx, tx, s.spec.Run, partition, stored, found, records[len(records)-1].Offset+1)
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
func (s *DBStage) deduplicate(ctx context.Context, tx *sql.Tx, partition int32, records []*kgo.Record) ([]appdb.Row, error) {
	highest, err := s.db.HighestKeyOffset(ctx, tx, s.spec.Run, partition)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(records))
	for i, record := range records {
		keys[i] = string(record.Key)
	}
	seen, err := s.db.SeenKeys(ctx, tx, s.spec.Run, partition, keys)
	if err != nil {
		return nil, err
	}
	window := dedupWindow{size: s.spec.Window, highest: highest}
	kept := window.filter(records, seen)
	s.stats.Dropped.Add(int64(len(records) - len(kept)))
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
	if err := s.db.RememberKeys(ctx, tx, s.spec.Run, partition, newKeys, newOffsets, window.floor()); err != nil {
		return nil, err
	}
	return rows, nil
}

// dedupWindow is the dedup stage's window over one partition: the keys of
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
