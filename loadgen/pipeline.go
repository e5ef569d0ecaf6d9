package loadgen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/pollwatch"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// pipeline is the eos-pipeline mode's consume-transform-produce stage:
// workers in one consumer group read the input topic read_committed and, in
// one transaction per poll, write each record (its header's stage set to 1)
// to the same partition of the output topic and commit the consumed offsets.
// committed counts output records of committed transactions (shared,
// atomic), or, under group-churn, the distinct input records committed
// (see identityCounter); each worker goroutine owns its session. The other
// consume stages (database stages, the at-least-once relay) reuse the
// type for its counter, watch and stop.
type pipeline struct {
	committed liveCounter
	cancel    context.CancelFunc
	done      chan struct{}
	// errs receives at most one error per worker; read after done closes.
	errs chan error
	// onBegin and onEnd, when set (in a worker subprocess), are called by
	// the worker's goroutine when a transaction with records begins and
	// when it ends, with the records it committed (0 if it did not).
	onBegin func()
	onEnd   func(committed int64)
	// watch follows the workers' partition assignments (startStage waits
	// for it to settle); schedule, when set, runs the client fault's
	// schedule (consumer-crash, group-churn) once the load's clock has
	// started.
	watch    *assignmentWatch
	schedule func()
	// identities, when set (group-churn), counts the distinct records the
	// last stage committed into committed, instead of output records.
	identities *identityCounter
}

// pipelineSessionSpec is one worker's session settings, in process or in a
// worker subprocess.
type pipelineSessionSpec struct {
	options            []kgo.Opt // seed brokers and fault settings
	clientID           string
	transactionalID    string
	transactionTimeout time.Duration
	group, input       string
	// instanceID, when set, makes the worker a static group member, so a
	// replacement of a killed worker takes its place without waiting for
	// its session to time out.
	instanceID string
	// shortSession sets a 6 s session timeout, so the group notices a
	// killed worker quickly.
	shortSession bool
	// onAssignment, when set, is told how many input partitions the
	// worker holds after each change.
	onAssignment func(count int)
}

// newPipelineSession creates one worker's GroupTransactSession.
func newPipelineSession(spec pipelineSessionSpec, metrics *runMetrics) (*kgo.GroupTransactSession, error) {
	options := append(append([]kgo.Opt(nil), spec.options...),
		kgo.ClientID(spec.clientID),
		kgo.TransactionalID(spec.transactionalID),
		kgo.TransactionTimeout(spec.transactionTimeout),
		kgo.ConsumerGroup(spec.group),
		kgo.ConsumeTopics(spec.input),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.WithLogger(clientLogger{metrics: metrics}),
	)
	options = append(options, assignmentOptions(spec.input, false, spec.onAssignment)...)
	if spec.instanceID != "" {
		options = append(options, kgo.InstanceID(spec.instanceID))
	}
	if spec.shortSession {
		options = append(options, kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	}
	return kgo.NewGroupTransactSession(options...)
}

// sessionSpec is worker index's session settings in plan.
func (plan runPlan) sessionSpec(index int) pipelineSessionSpec {
	return pipelineSessionSpec{
		options:            append(plan.clientOptions(), plan.observations.watch(consumersPipeline)),
		clientID:           fmt.Sprintf("exactly-loadgen-pipeline-%d", index),
		transactionalID:    fmt.Sprintf("exactly-%s-%s-w%d", plan.runIDText, plan.topicSuffix, index),
		transactionTimeout: time.Duration(plan.workload.Transaction.Timeout),
		group:              "exactly-" + plan.runIDText + "-" + plan.topicSuffix,
		input:              plan.topic,
	}
}

// newPipeline returns a pipeline of workers goroutines, not yet started.
func newPipeline(ctx context.Context, workers int) (*pipeline, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	return &pipeline{committed: newLiveCounter(), cancel: cancel, done: make(chan struct{}), errs: make(chan error, workers),
		watch: newAssignmentWatch(workers)}, ctx
}

// runWorkers runs work once per worker index on its own goroutine and
// closes done and errs when all have returned.
func (p *pipeline) runWorkers(workers int, work func(index int) error) {
	finished := make(chan struct{}, workers)
	for index := range workers {
		go func() {
			defer func() { finished <- struct{}{} }()
			if err := work(index); err != nil {
				p.errs <- fmt.Errorf("pipeline worker %d: %w", index, err)
			}
		}()
	}
	go func() {
		for range workers {
			<-finished
		}
		close(p.done)
		close(p.errs)
	}()
}

// startPipeline starts the in-process workers of plan.
func startPipeline(ctx context.Context, plan runPlan, metrics *runMetrics) (*pipeline, error) {
	workers := plan.workload.Pipeline.Workers
	p, ctx := newPipeline(ctx, workers)
	var sessions []*kgo.GroupTransactSession
	for index := range workers {
		spec := plan.sessionSpec(index)
		spec.onAssignment = func(count int) { p.watch.set(index, count) }
		session, err := newPipelineSession(spec, metrics)
		if err != nil {
			p.cancel()
			for _, started := range sessions {
				started.Close()
			}
			return nil, fmt.Errorf("pipeline worker %d: %w", index, err)
		}
		sessions = append(sessions, session)
	}
	p.runWorkers(workers, func(index int) error {
		return p.work(ctx, sessions[index], stageOutput{plan.outputTopic, 1}, metrics, nil)
	})
	return p, nil
}

// work runs one worker until ctx ends or its session fails, or, under
// group-churn (leave not nil), until it ends a transaction with an abort
// to leave the group.
func (p *pipeline) work(ctx context.Context, session *kgo.GroupTransactSession, output stageOutput, metrics *runMetrics, leave *departure) error {
	// Close leaves the group; transform ends every transaction it begins.
	defer session.Close()
	polls := pollwatch.Of(session.Client()) // the poll checker's (package pollwatch)
	for ctx.Err() == nil {
		pollCtx, cancel := leave.pollContext(ctx)
		fetches := session.PollFetches(pollCtx)
		cancel()
		polls.Fetched(fetches)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		for _, fetchErr := range fetches.Errors() {
			if !errors.Is(fetchErr.Err, context.Canceled) && !errors.Is(fetchErr.Err, context.DeadlineExceeded) {
				metrics.recordError(fetchErr.Err)
			}
		}
		if fetches.NumRecords() == 0 {
			if leave.requested() {
				leave.leftIdle()
				return nil
			}
			if reason := metrics.unsupportedMode(); reason != "" {
				return errors.New(reason)
			}
			continue
		}
		commit := leave.commitNext()
		committed, err := p.transform(ctx, session, fetches, output, metrics, commit)
		polls.Ended(committed) // an End that did not commit rewinds to the committed offsets
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

// stageOutput is where a pipeline worker writes: the topic, and the stage
// number its records carry in their header (1 for eos-pipeline; stage k
// of a chain under group-churn).
type stageOutput struct {
	topic string
	stage uint8
}

// transform writes one poll's records in one transaction and ends it:
// with a commit of the poll's offsets, or, when commit is false, with an
// abort (a worker leaving under group-churn). A transaction aborted
// because of a rebalance is not an error: the records are consumed again
// by their new owner. It reports whether the transaction committed.
func (p *pipeline) transform(ctx context.Context, session *kgo.GroupTransactSession, fetches kgo.Fetches, output stageOutput,
	metrics *runMetrics, commit bool) (bool, error) {
	if err := session.Begin(); err != nil {
		metrics.recordError(err)
		return false, fmt.Errorf("begin: %w", err)
	}
	if p.onBegin != nil {
		p.onBegin()
	}
	produced := int64(0)
	var produceErr error
	fetches.EachRecord(func(record *kgo.Record) {
		value := append([]byte(nil), record.Value...)
		if verify.SetStage(value, output.stage) != nil {
			return // not a loadgen record: nothing to carry over
		}
		out := &kgo.Record{Topic: output.topic, Partition: record.Partition, Key: record.Key, Value: value}
		// Produce is asynchronous; End flushes and fails the commit if any
		// record failed, so the promise only counts errors.
		session.Produce(ctx, out, func(_ *kgo.Record, err error) {
			if err != nil {
				metrics.recordError(err)
			}
		})
		produced++
	})
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	started := time.Now()
	committed, err := session.End(endCtx, kgo.TransactionEndTry(commit))
	took := time.Since(started)
	if err != nil {
		metrics.recordError(err)
		produceErr = fmt.Errorf("end transaction: %w", err)
	}
	metrics.recordTransactionEnd(committed, !committed && err == nil, took)
	if !committed {
		produced = 0
	}
	if p.identities == nil {
		p.committed.add(produced)
	}
	if p.onEnd != nil {
		p.onEnd(produced)
	}
	return committed, produceErr
}

// stop stops the workers and returns their errors.
func (p *pipeline) stop() error {
	p.cancel()
	<-p.done
	var errs []error
	for err := range p.errs {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
