package loadgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"

	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/verify"
	"github.com/exactly-eos/exactly/loadgen/worker"
)

// How often a load worker sends its record batches and its summaries.
const (
	recordFlushInterval = 100 * time.Millisecond
	summaryInterval     = time.Second
)

// runLoadWorker runs a load worker's share of the producers (--workers):
// each as the runner would run it in process, logging into one record
// stream that a flusher sends in batches, beside summaries of the
// worker's own measurements, until every producer finished.
func runLoadWorker(ctx context.Context, spec worker.Spec, reporter *worker.Reporter, _ *worker.CrashPoint) error {
	if len(spec.Budgets) != len(spec.Producers) {
		return fmt.Errorf("load worker: %d budgets for %d producers", len(spec.Budgets), len(spec.Producers))
	}
	mode, ok := modes.Lookup(spec.Mode)
	if !ok {
		return fmt.Errorf("load worker: unknown mode %q", spec.Mode)
	}
	transactional := mode.Producers == modes.TransactionalProducers
	if transactional && len(spec.TransactionalIDs) != len(spec.Producers) {
		return fmt.Errorf("load worker: %d transactional ids for %d producers", len(spec.TransactionalIDs), len(spec.Producers))
	}
	metrics := newRunMetrics(spec.WarmupEnd)
	options, err := workerClientOptions(spec)
	if err != nil {
		return err
	}
	stream := worker.NewRecordStream()
	var duplicate *duplicator
	producers := make([]*producer, 0, len(spec.Producers))
	defer func() {
		for _, p := range producers {
			p.client.Close()
		}
	}()
	for index, id := range spec.Producers {
		var log recordLog = stream.Producer(id)
		if spec.DuplicateOnce && index == 0 {
			duplicate = &duplicator{log: log, acked: make(chan uint64, 1)}
			log = duplicate
		}
		transactionalID := ""
		if transactional {
			transactionalID = spec.TransactionalIDs[index]
		}
		p, err := buildProducer(producerSpec{
			options: options, clientID: fmt.Sprintf("%s-%d", spec.ClientID, id), mode: spec.Mode,
			transactionalID: transactionalID, transactionTimeout: spec.TransactionTimeout,
			index: id, runID: spec.RunID, topic: spec.Topic, recordSize: spec.RecordSize,
			keys: KeySpec{Distribution: spec.KeyDistribution, Space: spec.KeySpace},
			rate: spec.Rate, budget: spec.Budgets[index], deadline: spec.Deadline, start: spec.Start,
			commitInterval: spec.CommitInterval, commitRecords: spec.CommitRecords,
			abortShare: spec.AbortShare, uniqueKeys: spec.UniqueKeys,
		}, log, metrics)
		if err != nil {
			return err
		}
		producers = append(producers, p)
	}
	reporter.Emit(worker.Event{Event: "ready", Message: fmt.Sprintf("%d producers", len(producers))})

	stopFlusher, flusherDone := make(chan struct{}), make(chan struct{})
	var streamCPU atomic.Int64 // the flusher's CPU time so far, ns
	go func() {
		defer close(flusherDone)
		// The flusher owns its thread, so the thread's CPU time is what
		// encoding and writing the reports cost (Summary.StreamNanos).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		flusherStart := threadCPU()
		flushRecords := time.NewTicker(recordFlushInterval)
		defer flushRecords.Stop()
		summarize := time.NewTicker(summaryInterval)
		defer summarize.Stop()
		for {
			select {
			case <-stopFlusher:
				return
			case <-flushRecords.C:
				reporter.Records(stream.Take())
			case <-stream.Full():
				reporter.Records(stream.Take())
			case <-summarize.C:
				// The batch first: a summary never counts an ack the
				// runner's ledger has not seen.
				reporter.Records(stream.Take())
				summary := metrics.takeSummary()
				summary.StreamNanos = int64(threadCPU() - flusherStart)
				reporter.Summary(summary)
				streamCPU.Store(int64(threadCPU() - flusherStart))
			}
		}
	}()
	produceCtx, cancel := context.WithDeadline(ctx, spec.Deadline.Add(spec.Drain))
	defer cancel()
	var duplicateErr error
	var wait sync.WaitGroup
	if duplicate != nil {
		wait.Add(1)
		go func() {
			defer wait.Done()
			duplicateErr = duplicate.run(produceCtx, options, spec)
		}()
	}
	errs := make([]error, len(producers))
	for index, p := range producers {
		wait.Add(1)
		go func() {
			defer wait.Done()
			if transactional {
				errs[index] = p.runTransactional(produceCtx)
			} else {
				errs[index] = p.runPlain(produceCtx)
			}
		}()
	}
	wait.Wait()
	close(stopFlusher)
	<-flusherDone
	// The last batch and summary, on this goroutine: their cost is not
	// counted (one of each, against the many the flusher sent).
	reporter.Records(stream.Take())
	final := metrics.takeSummary()
	final.Final, final.StreamNanos = true, streamCPU.Load()
	reporter.Summary(final)
	if reason := metrics.unsupportedMode(); reason != "" {
		return errors.New(reason)
	}
	return errors.Join(append(errs, duplicateErr)...)
}

// threadCPU is the CPU time of the calling OS thread.
func threadCPU() time.Duration {
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &now) != nil {
		return 0
	}
	return time.Duration(now.Nano())
}

// duplicator is a test's fault (worker.Spec.DuplicateOnce): it passes a
// producer's outcomes on, and writes the producer's first acknowledged
// record once more as a plain record, which the checker must count as a
// duplicate.
type duplicator struct {
	log   recordLog
	once  sync.Once
	acked chan uint64
}

func (d *duplicator) RecordSent(seq uint64, fate verify.Fate) error {
	return d.log.RecordSent(seq, fate)
}
func (d *duplicator) RecordErrored(seq uint64)            { d.log.RecordErrored(seq) }
func (d *duplicator) TransactionEnding(first, end uint64) { d.log.TransactionEnding(first, end) }
func (d *duplicator) RecordTransactionEnd(first, end uint64, outcome verify.TransactionOutcome) {
	d.log.RecordTransactionEnd(first, end, outcome)
}

func (d *duplicator) RecordAcknowledged(seq uint64, at verify.Ack) {
	d.log.RecordAcknowledged(seq, at)
	d.once.Do(func() { d.acked <- seq })
}

// run waits for the first acknowledgement and writes its copy.
func (d *duplicator) run(ctx context.Context, options []kgo.Opt, spec worker.Spec) error {
	var seq uint64
	select {
	case seq = <-d.acked:
	case <-ctx.Done():
		return nil
	}
	client, err := kgo.NewClient(append(options, kgo.ClientID(spec.ClientID+"-duplicate"), kgo.DisableIdempotentWrite())...)
	if err != nil {
		return err
	}
	defer client.Close()
	value := verify.NewValue(verify.Header{RunID: spec.RunID, Producer: spec.Producers[0], Sequence: seq,
		SendTime: time.Now().UnixNano(), Fate: verify.FateCommit}, spec.RecordSize)
	return client.ProduceSync(ctx, &kgo.Record{Topic: spec.Topic, Value: value}).FirstErr()
}
