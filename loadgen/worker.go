package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/appdb"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Worker roles: a subprocess the runner can stop (SIGSTOP) or kill.
const (
	// workerRoleProducer is a transactional load producer (zombie-producer).
	workerRoleProducer = "producer"
	// workerRolePipeline is a consume-transform-produce worker
	// (consumer-crash).
	workerRolePipeline = "pipeline"
	// workerRoleDBStage is a consumer-dedup or external-offsets consume
	// worker writing to the application database (consumer-crash).
	workerRoleDBStage = "db-stage"
)

// Commands the runner writes to a worker's stdin, one per line; closing
// stdin asks the worker to finish.
const (
	// workerCommandCrashAfterCommit: kill yourself right after your next
	// database commit, before the next poll.
	workerCommandCrashAfterCommit = "crash-after-commit"
	// workerCommandCrashInTransaction: kill yourself inside your next
	// database transaction, before it commits.
	workerCommandCrashInTransaction = "crash-in-transaction"
)

// workerSpec is what a worker subprocess is told, as JSON in its --spec
// argument. Durations are nanoseconds.
type workerSpec struct {
	Role               string        `json:"role"`
	Bootstrap          []string      `json:"bootstrap"`
	FastRetries        bool          `json:"fast_retries"`
	ClientID           string        `json:"client_id"`
	TransactionalID    string        `json:"transactional_id"`
	TransactionTimeout time.Duration `json:"transaction_timeout"`
	// Producer role.
	Topic          string        `json:"topic,omitempty"`
	RunID          uint64        `json:"run_id,omitempty"`
	Producer       uint32        `json:"producer,omitempty"`
	RecordSize     int           `json:"record_size,omitempty"`
	Keys           KeySpec       `json:"keys"`
	Rate           float64       `json:"rate,omitempty"`
	Budget         uint64        `json:"budget,omitempty"`
	Deadline       time.Time     `json:"deadline"`
	CommitInterval time.Duration `json:"commit_interval,omitempty"`
	CommitRecords  int           `json:"commit_records,omitempty"`
	// Pipeline role.
	Group      string `json:"group,omitempty"`
	InstanceID string `json:"instance_id,omitempty"`
	Input      string `json:"input,omitempty"`
	Output     string `json:"output,omitempty"`
	// The run's delivery mode (producer and database stage roles).
	Mode string `json:"mode,omitempty"`
	// Database stage role (also Group, Input).
	Database string `json:"database,omitempty"` // where the worker connects: an SQLite path or a postgres:// URL
	Run      string `json:"run,omitempty"`
	Worker   string `json:"worker,omitempty"`
	Window   int64  `json:"window,omitempty"`
}

// clientOptions are the worker's seed brokers and fault settings.
func (s workerSpec) clientOptions() []kgo.Opt {
	options := []kgo.Opt{kgo.SeedBrokers(s.Bootstrap...)}
	if s.FastRetries {
		options = append(options, kgo.MetadataMinAge(faultMetadataMinAge), kgo.RetryBackoffFn(faultRetryBackoff))
	}
	return options
}

// workerEvent is one line a worker writes to stdout, as JSON.
type workerEvent struct {
	// Event is ready, sent, ack, err, ending, end (producer), assigned,
	// open, committed (pipeline, database stage), crashing (database
	// stage), poll-assigned, poll-revoked, poll-rewound, polled (a
	// consume worker's polls, polls.go) or fatal.
	Event   string `json:"e"`
	Seq     uint64 `json:"s,omitempty"`
	First   uint64 `json:"first,omitempty"`
	End     uint64 `json:"end,omitempty"`
	Outcome string `json:"o,omitempty"` // committed, aborted, unknown
	Time    int64  `json:"t,omitempty"` // Unix nanoseconds
	Count   int64  `json:"n,omitempty"`
	Message string `json:"m,omitempty"`
	// Database stage commits: the send times of the rows delivered, how
	// long the commit took (ns), and what happened since the last report.
	SendTimes []int64 `json:"st,omitempty"`
	Took      int64   `json:"took,omitempty"`
	Dropped   int64   `json:"d,omitempty"`
	Conflicts int64   `json:"c,omitempty"`
	Seeks     int64   `json:"k,omitempty"`
	// Acknowledged positions and consume workers' polls (polls.go).
	verifyEvent
}

// workerReporter writes events, one line each, flushed at once so the
// runner sees them before it stops or kills the worker. Producer
// callbacks and the worker goroutine call it at once: mu guards out.
type workerReporter struct {
	mu  sync.Mutex
	out *bufio.Writer
}

func (r *workerReporter) emit(event workerEvent) {
	line, err := json.Marshal(event)
	if err != nil {
		return // cannot happen: the event has only plain fields
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out.Write(append(line, '\n'))
	r.out.Flush()
}

// assigned reports how many input partitions a consume worker holds.
func (r *workerReporter) assigned(count int) {
	r.emit(workerEvent{Event: "assigned", Count: int64(count)})
}

// The reporter is a producer's recordLog: every outcome goes to stdout.

func (r *workerReporter) RecordSent(seq uint64, fate verify.Fate) error {
	r.emit(workerEvent{Event: "sent", Seq: seq, Time: time.Now().UnixNano()})
	return nil
}
func (r *workerReporter) RecordAcknowledged(seq uint64, at verify.Ack) {
	r.emit(workerEvent{Event: "ack", Seq: seq, verifyEvent: ackEvent(at)})
}
func (r *workerReporter) RecordErrored(seq uint64) { r.emit(workerEvent{Event: "err", Seq: seq}) }
func (r *workerReporter) TransactionEnding(first, end uint64) {
	r.emit(workerEvent{Event: "ending", First: first, End: end, Time: time.Now().UnixNano()})
}
func (r *workerReporter) RecordTransactionEnd(first, end uint64, outcome verify.TransactionOutcome) {
	names := map[verify.TransactionOutcome]string{verify.TransactionCommitted: "committed",
		verify.TransactionAborted: "aborted", verify.TransactionUnknown: "unknown"}
	r.emit(workerEvent{Event: "end", First: first, End: end, Outcome: names[outcome]})
}

// RunWorker is `exactly loadgen worker --spec JSON`, a hidden subcommand the
// runner launches for client faults. It runs one producer or pipeline
// worker until its work is done or stdin closes, reporting on stdout.
func RunWorker(args []string, stdin io.Reader, stdout io.Writer) error {
	flags := flag.NewFlagSet("exactly loadgen worker", flag.ContinueOnError)
	specText := flags.String("spec", "", "the worker's settings, JSON")
	if err := flags.Parse(args); err != nil {
		return err
	}
	var spec workerSpec
	if err := json.Unmarshal([]byte(*specText), &spec); err != nil {
		return fmt.Errorf("worker spec: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The runner closes stdin to stop the worker (and so does its death);
	// lines before that are commands.
	var crash atomic.Int32
	go func() {
		readCommands(stdin, &crash)
		cancel()
	}()
	reporter := &workerReporter{out: bufio.NewWriter(stdout)}
	var err error
	switch spec.Role {
	case workerRoleProducer:
		err = runProducerWorker(ctx, spec, reporter)
	case workerRolePipeline:
		err = runPipelineWorker(ctx, spec, reporter)
	case workerRoleDBStage:
		err = runDBStageWorker(ctx, spec, reporter, &crash)
	default:
		err = fmt.Errorf("worker role %q is not %s, %s or %s", spec.Role, workerRoleProducer, workerRolePipeline, workerRoleDBStage)
	}
	if err != nil {
		reporter.emit(workerEvent{Event: "fatal", Message: err.Error()})
	}
	return err
}

// runProducerWorker initialises its transactional id (fencing any earlier
// instance), reports ready, and produces transactions until its deadline.
func runProducerWorker(ctx context.Context, spec workerSpec, reporter *workerReporter) error {
	metrics := newRunMetrics(time.Now())
	p, err := buildProducer(producerSpec{
		options: spec.clientOptions(), clientID: spec.ClientID, mode: spec.Mode,
		transactionalID: spec.TransactionalID, transactionTimeout: spec.TransactionTimeout,
		index: spec.Producer, runID: spec.RunID, topic: spec.Topic, recordSize: spec.RecordSize, keys: spec.Keys,
		rate: spec.Rate, budget: spec.Budget, deadline: spec.Deadline, start: time.Now(),
		commitInterval: spec.CommitInterval, commitRecords: spec.CommitRecords,
	}, reporter, metrics)
	if err != nil {
		return err
	}
	defer p.client.Close()
	initCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	id, epoch, err := p.client.ProducerID(initCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("init producer id for %s: %w", spec.TransactionalID, err)
	}
	reporter.emit(workerEvent{Event: "ready", Message: fmt.Sprintf("producer id %d epoch %d", id, epoch)})
	runCtx, cancelRun := context.WithDeadline(ctx, spec.Deadline.Add(30*time.Second))
	defer cancelRun()
	err = p.runTransactional(runCtx)
	if reason := metrics.unsupportedMode(); reason != "" {
		return errors.New(reason)
	}
	return err
}

// runPipelineWorker runs one consume-transform-produce worker, reporting
// each transaction it opens and the records each commit carried.
func runPipelineWorker(ctx context.Context, spec workerSpec, reporter *workerReporter) error {
	metrics := newRunMetrics(time.Now())
	session, err := newPipelineSession(pipelineSessionSpec{
		options: append(spec.clientOptions(), reporter.pollWatchOption()), clientID: spec.ClientID, transactionalID: spec.TransactionalID,
		transactionTimeout: spec.TransactionTimeout, group: spec.Group, input: spec.Input, instanceID: spec.InstanceID,
		shortSession: true, onAssignment: reporter.assigned,
	}, metrics)
	if err != nil {
		return err
	}
	reporter.emit(workerEvent{Event: "ready"})
	p := &pipeline{committed: newLiveCounter(),
		onBegin: func() { reporter.emit(workerEvent{Event: "open"}) },
		onEnd:   func(committed int64) { reporter.emit(workerEvent{Event: "committed", Count: committed}) },
	}
	return p.work(ctx, session, stageOutput{spec.Output, 1}, metrics, nil)
}

// readCommands reads the runner's command lines until stdin ends, noting a
// requested crash point in crash.
func readCommands(stdin io.Reader, crash *atomic.Int32) {
	scanner := bufio.NewScanner(stdin)
	for scanner.Scan() {
		switch scanner.Text() {
		case workerCommandCrashAfterCommit:
			crash.Store(crashAfterCommit)
		case workerCommandCrashInTransaction:
			crash.Store(crashInTransaction)
		}
	}
}

// runDBStageWorker runs one consumer-dedup or external-offsets consume
// worker, reporting each database commit, and kills itself at the crash
// point the runner asks for.
func runDBStageWorker(ctx context.Context, spec workerSpec, reporter *workerReporter, crash *atomic.Int32) error {
	metrics := newRunMetrics(time.Now())
	db, err := appdb.Open(ctx, spec.Database)
	if err != nil {
		return err
	}
	defer db.Close()
	stats := &applicationStats{}
	stage, err := newDBStage(dbStageSpec{mode: spec.Mode, options: append(spec.clientOptions(), reporter.pollWatchOption()), clientID: spec.ClientID,
		group: spec.Group, input: spec.Input, run: spec.Run, worker: spec.Worker, window: spec.Window, shortSession: true,
		onAssignment: reporter.assigned},
		db, metrics, stats)
	if err != nil {
		return err
	}
	var reported struct{ dropped, conflicts, seeks int64 }
	stage.onOpen = func() { reporter.emit(workerEvent{Event: "open"}) }
	stage.onCommit = func(rows int64, sendTimes []int64, took time.Duration) {
		dropped, conflicts, seeks := stats.dropped.Load(), stats.conflicts.Load(), stats.seeks.Load()
		reporter.emit(workerEvent{Event: "committed", Count: rows, SendTimes: sendTimes, Took: max(took.Nanoseconds(), 1),
			Dropped: dropped - reported.dropped, Conflicts: conflicts - reported.conflicts, Seeks: seeks - reported.seeks})
		reported.dropped, reported.conflicts, reported.seeks = dropped, conflicts, seeks
	}
	stage.crashAt = func(point int, rows int) bool {
		if crash.Load() != int32(point) {
			return false
		}
		where := fmt.Sprintf("killed itself (SIGKILL, pid %d) right after committing %d rows to the database, before its next poll", os.Getpid(), rows)
		if point == crashInTransaction {
			where = fmt.Sprintf("killed itself (SIGKILL, pid %d) inside an open database transaction holding %d rows", os.Getpid(), rows)
		}
		reporter.emit(workerEvent{Event: "crashing", Message: where})
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	reporter.emit(workerEvent{Event: "ready"})
	return stage.work(ctx, nil)
}
