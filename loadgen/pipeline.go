package loadgen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// pipeline is the eos-pipeline mode's consume-transform-produce stage:
// workers in one consumer group read the input topic read_committed and, in
// one transaction per poll, write each record (its header's stage set to 1)
// to the same partition of the output topic and commit the consumed offsets.
// committed counts output records of committed transactions (shared,
// atomic); each worker goroutine owns its session.
type pipeline struct {
	committed liveCounter
	cancel    context.CancelFunc
	done      chan struct{}
	// errs receives at most one error per worker; read after done closes.
	errs chan error
}

// startPipeline starts the workers of plan.
func startPipeline(ctx context.Context, plan runPlan, metrics *runMetrics) (*pipeline, error) {
	ctx, cancel := context.WithCancel(ctx)
	workers := plan.workload.Pipeline.Workers
	p := &pipeline{committed: newLiveCounter(), cancel: cancel, done: make(chan struct{}), errs: make(chan error, workers)}
	var sessions []*kgo.GroupTransactSession
	for index := range workers {
		session, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(plan.bootstrap...),
			kgo.ClientID(fmt.Sprintf("exactly-loadgen-pipeline-%d", index)),
			kgo.TransactionalID(fmt.Sprintf("exactly-%s-%s-w%d", plan.runIDText, plan.topicSuffix, index)),
			kgo.TransactionTimeout(time.Duration(plan.workload.Transaction.Timeout)),
			kgo.ConsumerGroup("exactly-"+plan.runIDText+"-"+plan.topicSuffix),
			kgo.ConsumeTopics(plan.topic),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerBatchCompression(kgo.NoCompression()),
			kgo.FetchMaxWait(100*time.Millisecond),
			kgo.WithLogger(clientLogger{metrics: metrics}),
		)
		if err != nil {
			cancel()
			for _, started := range sessions {
				started.Close()
			}
			return nil, fmt.Errorf("pipeline worker %d: %w", index, err)
		}
		sessions = append(sessions, session)
	}
	finished := make(chan struct{}, workers)
	for index, session := range sessions {
		go func() {
			defer func() { finished <- struct{}{} }()
			if err := p.work(ctx, session, plan.outputTopic, metrics); err != nil {
				p.errs <- fmt.Errorf("pipeline worker %d: %w", index, err)
			}
		}()
	}
	go func() {
		for range sessions {
			<-finished
		}
		close(p.done)
		close(p.errs)
	}()
	return p, nil
}

// work runs one worker until ctx ends or its session fails.
func (p *pipeline) work(ctx context.Context, session *kgo.GroupTransactSession, output string, metrics *runMetrics) error {
	// Close leaves the group; transform ends every transaction it begins.
	defer session.Close()
	for ctx.Err() == nil {
		fetches := session.PollFetches(ctx)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		for _, fetchErr := range fetches.Errors() {
			if !errors.Is(fetchErr.Err, context.Canceled) && !errors.Is(fetchErr.Err, context.DeadlineExceeded) {
				metrics.recordError(fetchErr.Err)
			}
		}
		if fetches.NumRecords() == 0 {
			if reason := metrics.unsupportedMode(); reason != "" {
				return errors.New(reason)
			}
			continue
		}
		if err := p.transform(ctx, session, fetches, output, metrics); err != nil {
			return err
		}
	}
	return nil
}

// transform writes one poll's records in one transaction and commits it
// with the poll's offsets. A transaction aborted because of a rebalance is
// not an error: the records are consumed again by their new owner.
func (p *pipeline) transform(ctx context.Context, session *kgo.GroupTransactSession, fetches kgo.Fetches, output string, metrics *runMetrics) error {
	if err := session.Begin(); err != nil {
		metrics.recordError(err)
		return fmt.Errorf("begin: %w", err)
	}
	produced := int64(0)
	var produceErr error
	fetches.EachRecord(func(record *kgo.Record) {
		value := append([]byte(nil), record.Value...)
		if verify.SetStage(value, 1) != nil {
			return // not a loadgen record: nothing to carry over
		}
		out := &kgo.Record{Topic: output, Partition: record.Partition, Key: record.Key, Value: value}
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
	committed, err := session.End(endCtx, kgo.TryCommit)
	took := time.Since(started)
	if err != nil {
		metrics.recordError(err)
		produceErr = fmt.Errorf("end transaction: %w", err)
	}
	metrics.recordTransactionEnd(committed, !committed && err == nil, took)
	if committed {
		p.committed.add(produced)
	}
	return produceErr
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
