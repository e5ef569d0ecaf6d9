package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/appdb"
	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/pollwatch"
	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/verify"
	"github.com/exactly-eos/exactly/loadgen/worker"
)

// The roles a worker subprocess runs (the protocol, the process and its
// supervision live in package worker): a transactional producer of the
// zombie-producer chain, a transact worker or a database stage worker
// under consumer-crash.

// workerRoles are the roles RunWorker serves.
var workerRoles = map[string]worker.Role{
	worker.RoleProducer: runProducerWorker,
	worker.RolePipeline: runPipelineWorker,
	worker.RoleDBStage:  runDBStageWorker,
	worker.RoleLoad:     runLoadWorker,
	worker.RoleConsumer: runConsumerWorker,
}

// RunWorker is `exactly loadgen worker --spec JSON`, a hidden subcommand the
// runner launches for client faults. It runs one producer or consume
// worker until its work is done or stdin closes, reporting on stdout.
func RunWorker(args []string, stdin io.Reader, stdout io.Writer) error {
	return worker.Serve(args, stdin, stdout, workerRoles)
}

// workerLaunch starts self as `exactly loadgen worker` (or the operator's
// --worker-exec command), with the SASL password of security (if any) in
// its handshake, not its arguments or environment.
func workerLaunch(self SelfCommand, transport WorkerTransport, security *clientsec.Settings) worker.Launch {
	return worker.Launch{Path: self.Path, Args: self.command("loadgen", "worker"), Env: self.Env,
		Exec: transport.Exec, Hosts: transport.Hosts, Password: security.Config().Password}
}

// workerClientOptions are a worker's seed brokers, security and fault
// settings; the SASL password comes from the handshake.
func workerClientOptions(spec worker.Spec) ([]kgo.Opt, error) {
	config := spec.Security
	if config.SASL() {
		config.Password = spec.Password
	}
	security, err := config.Resolve()
	if err != nil {
		return nil, fmt.Errorf("worker %s: %w", spec.ClientID, err)
	}
	options := append([]kgo.Opt{kgo.SeedBrokers(spec.Bootstrap...)}, security.Options()...)
	if spec.FastRetries {
		options = append(options, kgo.MetadataMinAge(faultMetadataMinAge), kgo.RetryBackoffFn(faultRetryBackoff))
	}
	return options, nil
}

// workerPollWatch is the option a worker gives its consumer client: its
// polls go to the runner as events.
func workerPollWatch(reporter *worker.Reporter) kgo.Opt {
	return pollwatch.Option(func(*kgo.Client, string) verify.PollSink { return reporter.PollSink() })
}

// runProducerWorker initialises its transactional id (fencing any earlier
// instance), reports ready, and produces transactions until its deadline.
func runProducerWorker(ctx context.Context, spec worker.Spec, reporter *worker.Reporter, _ *worker.CrashPoint) error {
	metrics := newRunMetrics(time.Now())
	options, err := workerClientOptions(spec)
	if err != nil {
		return err
	}
	p, err := buildProducer(producerSpec{
		options: options, clientID: spec.ClientID, mode: spec.Mode,
		transactionalID: spec.TransactionalID, transactionTimeout: spec.TransactionTimeout,
		index: spec.Producer, runID: spec.RunID, topic: spec.Topic, recordSize: spec.RecordSize,
		keys: KeySpec{Distribution: spec.KeyDistribution, Space: spec.KeySpace},
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
	reporter.Emit(worker.Event{Event: "ready", Message: fmt.Sprintf("producer id %d epoch %d", id, epoch)})
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
func runPipelineWorker(ctx context.Context, spec worker.Spec, reporter *worker.Reporter, _ *worker.CrashPoint) error {
	metrics := newRunMetrics(time.Now())
	options, err := workerClientOptions(spec)
	if err != nil {
		return err
	}
	sessionSpec := stages.SessionSpec{
		Options:  append(append(options, workerPollWatch(reporter)), groupProtocolOptions(spec.GroupProtocol)...),
		ClientID: spec.ClientID, TransactionalID: spec.TransactionalID,
		TransactionTimeout: spec.TransactionTimeout, Group: spec.Group, Input: spec.Input, InstanceID: spec.InstanceID,
		ShortSession: true, OnAssignment: reporter.Assigned,
	}
	renew := func() (*kgo.GroupTransactSession, error) {
		return stages.NewSession(sessionSpec, stageMetrics{metrics})
	}
	session, err := renew()
	if err != nil {
		return err
	}
	reporter.Emit(worker.Event{Event: "ready"})
	p := &stages.Group{Committed: stages.NewCounter(),
		OnBegin: func() { reporter.Emit(worker.Event{Event: "open"}) },
		OnEnd: func(committed int64, end stages.TransactionEnd) {
			outcome := "unknown"
			switch {
			case end.Committed:
				outcome = "committed"
			case end.Aborted:
				outcome = "aborted"
			}
			reporter.Emit(worker.Event{Event: "committed", Count: committed, Outcome: outcome, Took: max(end.Took.Nanoseconds(), 1)})
		},
	}
	return p.TransactRestarting(ctx, session, renew, stages.Output{Topic: spec.Output, Stage: 1}, stageMetrics{metrics})
}

// crashCommands are the runner's crash requests (worker.Crash points) of
// the database stage's crash points.
var crashCommands = map[int]int{stages.CrashAfterCommit: worker.CrashAfterCommit, stages.CrashInTransaction: worker.CrashInTransaction}

// runDBStageWorker runs one database stage worker, reporting each
// database commit, and kills itself at the crash point the runner asks
// for.
func runDBStageWorker(ctx context.Context, spec worker.Spec, reporter *worker.Reporter, crash *worker.CrashPoint) error {
	metrics := newRunMetrics(time.Now())
	db, err := appdb.Open(ctx, spec.Database)
	if err != nil {
		return err
	}
	defer db.Close()
	stats := &stages.Stats{}
	options, err := workerClientOptions(spec)
	if err != nil {
		return err
	}
	options = append(append(options, workerPollWatch(reporter)), groupProtocolOptions(spec.GroupProtocol)...)
	stage, err := stages.NewDBStage(stages.DBSpec{Mode: spec.Mode, Options: options, ClientID: spec.ClientID,
		Group: spec.Group, Input: spec.Input, Run: spec.Run, Worker: spec.Worker, Window: spec.Window, ShortSession: true,
		OnAssignment: reporter.Assigned},
		db, stageMetrics{metrics}, stats)
	if err != nil {
		return err
	}
	var reported struct{ dropped, conflicts, seeks int64 }
	stage.OnOpen = func() { reporter.Emit(worker.Event{Event: "open"}) }
	stage.OnCommit = func(rows int64, sendTimes []int64, took time.Duration) {
		dropped, conflicts, seeks := stats.Dropped.Load(), stats.Conflicts.Load(), stats.Seeks.Load()
		reporter.Emit(worker.Event{Event: "committed", Count: rows, SendTimes: sendTimes, Took: max(took.Nanoseconds(), 1),
			Dropped: dropped - reported.dropped, Conflicts: conflicts - reported.conflicts, Seeks: seeks - reported.seeks})
		reported.dropped, reported.conflicts, reported.seeks = dropped, conflicts, seeks
	}
	stage.CrashAt = func(point int, rows int) bool {
		if crash.Load() != crashCommands[point] {
			return false
		}
		where := fmt.Sprintf("killed itself (SIGKILL, pid %d) right after committing %d rows to the database, before its next poll", os.Getpid(), rows)
		if point == stages.CrashInTransaction {
			where = fmt.Sprintf("killed itself (SIGKILL, pid %d) inside an open database transaction holding %d rows", os.Getpid(), rows)
		}
		reporter.Emit(worker.Event{Event: "crashing", Message: where})
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	reporter.Emit(worker.Event{Event: "ready"})
	return stage.Work(ctx, nil)
}
