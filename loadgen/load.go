package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/progress"
	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// loadRun is one run's load: producers, the pipeline, live consumers and
// the client faults. The run's driving goroutine owns it; zombieWrites is
// shared with the goroutines reading zombie workers (atomic).
type loadRun struct {
	plan            runPlan
	ledger          *verify.Ledger
	logs            []*verify.TrackedLog
	metrics         *runMetrics
	env             *faultEnv
	start, deadline time.Time
	// zombieWrites counts records a fenced zombie producer sent, and
	// commits it began, after it was resumed.
	zombieWrites atomic.Int64
	// churnAborts counts transactions with records that group-churn
	// workers ended with an abort to leave the group.
	churnAborts atomic.Int64
	// admin is the run's admin client (group-churn removes static
	// members with it).
	admin *kgo.Client
	// stats counts what the application-level machinery did (shared,
	// atomics).
	stats *stages.Stats
	// tracker follows the cell's phases for the progress reporter.
	tracker *cellTracker
	// churn is the group-churn run of the cell's consume stage (nil
	// without group-churn), set before the load starts.
	churn *churnRun
	// remote is the run's load workers (nil when the producers run in
	// process), set by runRemoteProducers.
	remote *remoteLoad
}

// newTrackedLedger returns the run's ledger with a tracked log per slot:
// the workload's producers, then one slot per generation of the zombie
// producer chain (zombie-producer plans).
func newTrackedLedger(plan runPlan) (*verify.Ledger, []*verify.TrackedLog) {
	slots := plan.workload.Producers + zombieSlots(plan)
	if plan.spec().Producers == modes.PartitionWriters {
		slots = plan.workload.Partitions // one writer per partition
	}
	ledger := verify.NewLedger(plan.runID, slots)
	logs := make([]*verify.TrackedLog, slots)
	for i := range logs {
		logs[i] = verify.NewTrackedLog(ledger.Producer(uint32(i)))
	}
	return ledger, logs
}

// zombieSlots is the number of producer generations a zombie-producer plan
// makes in plan's run: the first worker and one replacement per firing.
func zombieSlots(plan runPlan) int {
	action, ok := clientAction(plan.faults, faults.ClientZombieProducer)
	if !ok || !plan.spec().AcceptsClientFault(faults.ClientZombieProducer) {
		return 0
	}
	horizon := time.Duration(plan.workload.Warmup + plan.workload.Duration)
	return 1 + len(action.Times(horizon))
}

// stageSettleTimeout bounds the wait for a consume stage's group to
// settle before the load starts anyway.
const stageSettleTimeout = 20 * time.Second

// startStage starts the plan's consume stage, if it has one (transact
// workers or a database stage, as subprocesses under consumer-crash;
// under group-churn, wave 0 of its churning workers, a relay included),
// and waits until its group has assigned every input partition.
func (l *loadRun) startStage(ctx context.Context) (*stages.Group, error) {
	plan := l.plan
	if !runsConsumeStage(plan.faults, plan.mode) {
		return nil, nil
	}
	if plan.sharesGroup() {
		// The broker assigns a share group's partitions; its consumers
		// share them, so there is no assignment to wait for.
		return startShareStage(ctx, l)
	}
	var workers *stages.Group
	var err error
	action, crash := clientAction(plan.faults, faults.ClientConsumerCrash)
	churn, churning := clientAction(plan.faults, faults.ClientGroupChurn)
	switch {
	case churning:
		workers, err = startChurnStage(ctx, l, churn)
	case crash:
		workers, err = startWorkerPipeline(ctx, l, action, true)
	case l.env.workers.Count > 0:
		// With load workers the consume stage runs in workers too.
		workers, err = startWorkerPipeline(ctx, l, action, false)
	case plan.spec().Stage == modes.TransactStage:
		workers, err = startPipeline(ctx, plan, l.metrics)
	default:
		workers, err = startDBStage(ctx, l)
	}
	if err != nil {
		return nil, err
	}
	// Every stage of a chain (group-churn) reads a topic of Partitions.
	partitions := plan.workload.Partitions * chainedStages(plan.faults, plan.mode)
	if !workers.Watch.WaitSettled(ctx, partitions, time.Now().Add(stageSettleTimeout)) {
		l.env.note("the consume group did not assign all %d partitions within %s; the load started anyway",
			partitions, stageSettleTimeout)
	}
	return workers, nil
}

// drive runs the producers (and live consumers, beside the consume stage
// started by startStage) until the record budget or the deadline, ends the
// process faults, then lets the stage and consumers drain.
func (l *loadRun) drive(ctx context.Context, stopFaults func() error, workers *stages.Group) error {
	plan, workload, metrics := l.plan, l.plan.workload, l.metrics
	drain := time.Duration(workload.Drain)
	finalTopic, readCommitted := plan.topic, plan.spec().Producers == modes.TransactionalProducers
	if plan.outputTopic != "" {
		finalTopic, readCommitted = plan.outputTopic, true
	}
	if workers != nil && workers.Schedule != nil {
		go workers.Schedule()
	}
	var consumers *liveConsumers
	// The database stages measure end-to-end latency at their commits.
	// The share consumers measure it at their acceptances.
	if workload.Consumers > 0 && !usesDatabase(plan.mode) && !plan.sharesGroup() {
		var err error
		if l.env.workers.Count > 0 {
			consumers, err = startRemoteConsumers(ctx, l, finalTopic, readCommitted)
		} else {
			consumers, err = startLiveConsumers(ctx, plan, finalTopic, readCommitted, metrics)
		}
		if err != nil {
			if workers != nil {
				_ = workers.Stop()
			}
			return errors.Join(err, stopFaults())
		}
	}
	produceErr := l.runProducers(ctx)
	// Process faults end with the load: a killed broker is up again and a
	// paused one resumed before the drain and the verification reads.
	faultErr := stopFaults()
	metrics.producersDone = time.Now()
	l.tracker.enter(progress.PhaseDraining, drain)
	totals := l.ledger.Totals()
	visible := int64(totals.Acknowledged) - int64(totals.Aborted) - int64(totals.Uncertain)
	drainDeadline := time.Now().Add(drain)
	if metrics.stopped.Load() {
		drainDeadline = time.Now() // unsupported: nothing more will arrive
	}
	var pipelineErr error
	if workers != nil {
		// The pipeline's measured time ends when its output caught up.
		caughtUp := workers.Committed.WaitFor(int64(totals.Acknowledged), drainDeadline)
		metrics.producersDone = time.Now()
		if caughtUp && l.stats.Processed != nil {
			pipelineErr = l.drainInputCopies(ctx, drainDeadline)
		}
		pipelineErr = errors.Join(pipelineErr, workers.Stop())
		if !caughtUp {
			pipelineErr = errors.Join(pipelineErr, fmt.Errorf("pipeline committed %d of %d input records within the drain time %s",
				workers.Committed.Load(), totals.Acknowledged, drain))
		}
	}
	if consumers != nil {
		consumers.stopAfter(visible, drainDeadline)
	}
	return errors.Join(produceErr, faultErr, pipelineErr)
}

// drainInputCopies lets an in-process database stage read its input to
// the end before it stops: its output already holds every acknowledged
// record, but copies of them (an at-least-once producer's retries) may
// follow the originals in the input, and a consumer that drops copies
// must see them to drop them. The input's end offsets are taken now,
// after the producers stopped, so nothing is appended behind them.
func (l *loadRun) drainInputCopies(ctx context.Context, deadline time.Time) error {
	ends, err := endOffsets(ctx, l.admin, l.plan.topic, int(l.plan.workload.Partitions), false)
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	if !l.stats.Processed.WaitFor(ends, deadline) {
		partitions, records := l.stats.Processed.Behind(ends)
		return fmt.Errorf("the consume stage left %d input records of %d partitions unread within the drain time", records, partitions)
	}
	return nil
}

// runProducers runs the plan's producers (and the zombie producer chain) to
// completion and closes them.
func (l *loadRun) runProducers(ctx context.Context) error {
	plan, workload := l.plan, l.plan.workload
	// Producers stop sending at deadline; flushing and ending the last
	// transaction may take up to the drain time more.
	produceCtx, cancel := context.WithDeadline(ctx, l.deadline.Add(time.Duration(workload.Drain)))
	defer cancel()
	if plan.spec().Producers == modes.PartitionWriters {
		if l.env.workers.Count > 0 {
			l.env.note("%s runs its one writer per partition in this process: --workers applies to the other modes", plan.mode)
		}
		return l.runSingleWriters(produceCtx)
	}
	var wait sync.WaitGroup
	errs := make([]error, workload.Producers+1)
	if l.env.workers.Count > 0 {
		wait.Add(1)
		go func() {
			defer wait.Done()
			errs[0] = l.runRemoteProducers(produceCtx)
		}()
	}
	for index := range workload.Producers {
		if l.env.workers.Count > 0 {
			break // the load workers run them
		}
		p, err := newProducer(plan, uint32(index), l.logs[index], l.metrics, producerBudget(workload, index), l.deadline, l.start)
		if err != nil {
			errs[index] = err
			continue
		}
		wait.Add(1)
		go func() {
			defer wait.Done()
			defer p.client.Close()
			if plan.spec().Producers == modes.TransactionalProducers {
				errs[index] = p.runTransactional(produceCtx)
			} else {
				errs[index] = p.runPlain(produceCtx)
			}
		}()
	}
	if action, ok := clientAction(plan.faults, faults.ClientZombieProducer); ok && zombieSlots(plan) > 0 {
		wait.Add(1)
		go func() {
			defer wait.Done()
			errs[workload.Producers] = l.runZombieChain(produceCtx, action)
		}()
	}
	wait.Wait()
	return errors.Join(errs...)
}

// producerBudget is producer index's share of the workload's records.
func producerBudget(workload Workload, index int) uint64 {
	return splitBudget(workload.Records, workload.Producers, index)
}

// loadTransactionalID is the transactional id of plan's load producer
// index (used by the transactional modes only).
func loadTransactionalID(plan runPlan, index uint32) string {
	return fmt.Sprintf("exactly-%s-%s-p%d", plan.runIDText, plan.topicSuffix, index)
}

// newProducer builds producer index of plan with its client.
func newProducer(plan runPlan, index uint32, log recordLog, metrics *runMetrics, budget uint64, deadline, start time.Time) (*producer, error) {
	workload := plan.workload
	transactionalID := loadTransactionalID(plan, index)
	return buildProducer(producerSpec{
		options: plan.clientOptions(), clientID: fmt.Sprintf("exactly-loadgen-%s-%d", plan.topicSuffix, index),
		mode: plan.mode, transactionalID: transactionalID, transactionTimeout: time.Duration(workload.Transaction.Timeout),
		index: index, runID: plan.runID, topic: plan.topic, recordSize: workload.RecordSize, keys: workload.Keys,
		rate: float64(workload.Rate) / float64(workload.Producers), budget: budget, deadline: deadline, start: start,
		commitInterval: plan.commitInterval, commitRecords: workload.Transaction.CommitRecords,
		abortShare: workload.Transaction.AbortShare, uniqueKeys: plan.spec().UniqueKeys,
	}, log, metrics)
}

// producerSpec is everything a producer needs, in process or in a worker.
type producerSpec struct {
	options            []kgo.Opt
	clientID           string
	mode               string
	transactionalID    string
	transactionTimeout time.Duration
	index              uint32
	runID              uint64
	topic              string
	recordSize         int
	keys               KeySpec
	rate               float64 // records/s of this producer; 0: unpaced
	budget             uint64
	deadline, start    time.Time
	commitInterval     time.Duration
	commitRecords      int
	abortShare         float64
	// uniqueKeys gives every record its own key, p<producer>-<sequence>
	// (modes.Spec.UniqueKeys), instead of one drawn from keys.
	uniqueKeys bool
}

// buildProducer creates the producer's client.
func buildProducer(spec producerSpec, log recordLog, metrics *runMetrics) (*producer, error) {
	modeOptions, err := producerOptions(spec.mode, spec.transactionalID, spec.transactionTimeout)
	if err != nil {
		return nil, err
	}
	options := append(append([]kgo.Opt{
		kgo.ClientID(spec.clientID),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.WithLogger(clientLogger{metrics: metrics}),
	}, spec.options...), modeOptions...)
	client, err := kgo.NewClient(options...)
	if err != nil {
		return nil, fmt.Errorf("producer %d client: %w", spec.index, err)
	}
	seed := spec.runID ^ uint64(spec.index)<<32
	pacer := newPacer(spec.rate, spec.start)
	return &producer{
		id: spec.index, client: client, log: log, metrics: metrics,
		runID: spec.runID, topic: spec.topic, recordSize: spec.recordSize,
		keys:  newKeyChooser(spec.keys, seed),
		pacer: pacer, created: newCreationTimes(pacer.paced()),
		budget: spec.budget, deadline: spec.deadline,
		commitInterval: spec.commitInterval, commitRecords: spec.commitRecords,
		abortShare: spec.abortShare, random: rand.New(rand.NewPCG(seed, 1)), uniqueKeys: spec.uniqueKeys,
	}, nil
}
