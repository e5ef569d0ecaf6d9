package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/verify"
	"github.com/exactly-eos/exactly/loadgen/worker"
)

// WorkerTransport is where the load's producers run (--workers,
// --worker-exec, --worker-hosts): Count worker processes, each started by
// the Exec template (split into words; "{host}" and "{i}" are replaced)
// or, without one, as local `exactly loadgen worker` subprocesses. Count
// 0 runs the producers inside the load generator. Workers that client
// faults start (zombie producers, crashing consume workers) use the same
// transport.
type WorkerTransport struct {
	Count int
	Exec  []string
	Hosts []string
}

// validate checks the transport's settings.
func (t WorkerTransport) validate() error {
	uses := func(placeholder string) bool {
		return slices.ContainsFunc(t.Exec, func(word string) bool { return strings.Contains(word, placeholder) })
	}
	switch {
	case t.Count < 0:
		return fmt.Errorf("--workers %d: want 0 (producers in this process) or more", t.Count)
	case len(t.Hosts) > 0 && len(t.Exec) == 0:
		return errors.New("--worker-hosts needs --worker-exec, the command that reaches a host (e.g. 'ssh {host} exactly loadgen worker')")
	case uses("{host}") && len(t.Hosts) == 0:
		return errors.New("--worker-exec names {host}: give the hosts with --worker-hosts")
	case len(t.Exec) > 0 && t.Count == 0:
		return errors.New("--worker-exec needs --workers N, the number of load workers")
	}
	return nil
}

// remoteLoad is one run's load workers, seen from the runner. The run's
// driving goroutine starts and waits for them; each worker's reading
// goroutine applies its record batches to the run's ledger and its
// summaries to the run's metrics and its own share (under the share's
// mu).
type remoteLoad struct {
	workers []*remoteWorker
}

// remoteWorker is one load worker's share of the run and what it
// reported.
type remoteWorker struct {
	index     int
	producers []uint32
	host      string
	rate      float64 // its share of the workload's rate, records/s (0: unpaced)
	process   *worker.Process

	mu         sync.Mutex
	summary    worker.Summary // counts added up; CPU and stream figures as last reported
	produceAck *hdrhistogram.Histogram
	final      bool
}

// splitProducers gives each of count workers a contiguous share of
// producers (the first ones one more when they do not divide evenly).
func splitProducers(producers, count int) [][]uint32 {
	shares := make([][]uint32, count)
	next := 0
	for index := range count {
		size := producers / count
		if index < producers%count {
			size++
		}
		for range size {
			shares[index] = append(shares[index], uint32(next))
			next++
		}
	}
	return shares
}

// runRemoteProducers runs the workload's producers in the run's load
// workers until each finished, applying what they report. A worker that
// died, or whose stream broke, is an error naming it.
func (l *loadRun) runRemoteProducers(ctx context.Context) error {
	plan, workload := l.plan, l.plan.workload
	transport := l.env.workers
	remote := &remoteLoad{}
	l.remote = remote
	transactional := plan.spec().Producers == modes.TransactionalProducers
	perProducerRate := float64(workload.Rate) / float64(workload.Producers)
	launch := workerLaunch(l.env.self, transport, plan.security)
	var errs []error
	for index, producers := range splitProducers(workload.Producers, transport.Count) {
		spec := worker.Spec{
			Role: worker.RoleLoad, Mode: plan.mode, Bootstrap: plan.clientBootstrap, Security: plan.security.Config(),
			FastRetries: hasFaults(plan.faults), ClientID: "exactly-loadgen-" + plan.topicSuffix,
			TransactionTimeout: time.Duration(workload.Transaction.Timeout),
			Topic:              plan.topic, RunID: plan.runID, RecordSize: workload.RecordSize,
			KeyDistribution: workload.Keys.Distribution, KeySpace: workload.Keys.Space,
			Rate: perProducerRate, Deadline: l.deadline, Drain: time.Duration(workload.Drain),
			CommitInterval: plan.commitInterval, CommitRecords: workload.Transaction.CommitRecords,
			Producers: producers, AbortShare: workload.Transaction.AbortShare, UniqueKeys: plan.spec().UniqueKeys,
			Start: l.start, WarmupEnd: l.metrics.warmupEndTime(), DuplicateOnce: l.env.duplicateOnce && index == 0,
		}
		for _, producer := range producers {
			spec.Budgets = append(spec.Budgets, producerBudget(workload, int(producer)))
			if transactional {
				spec.TransactionalIDs = append(spec.TransactionalIDs, loadTransactionalID(plan, producer))
			}
		}
		share := &remoteWorker{index: index, producers: producers, host: launch.Host(index),
			rate: perProducerRate * float64(len(producers)), produceAck: report.NewLatencyHistogram()}
		process, err := worker.StartWith(launch, index, spec, worker.Handlers{
			Records: func(batch []byte) error { return worker.ApplyRecords(batch, l.remoteLog(producers)) },
			Summary: func(summary worker.Summary) error { return share.add(summary, l.metrics) },
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("load worker %d: %w", index, err))
			continue
		}
		share.process = process
		remote.workers = append(remote.workers, share)
	}
	// Stop the workers if the run is cancelled; otherwise each ends once
	// its producers finished (at the deadline, or their budget).
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			for _, share := range remote.workers {
				share.process.Stop(15 * time.Second)
			}
		case <-done:
		}
	}()
	for _, share := range remote.workers {
		<-share.process.Exited()
		if err := share.failure(); err != nil {
			errs = append(errs, err)
		}
	}
	close(done)
	return errors.Join(errs...)
}

// remoteLog returns the ledger log of each producer a worker runs (nil
// for any other), guarded against a corrupt stream's outcome of a record
// never sent.
func (l *loadRun) remoteLog(producers []uint32) func(uint32) worker.RecordLog {
	return func(producer uint32) worker.RecordLog {
		for _, owned := range producers {
			if owned == producer {
				return sentGuard{log: l.logs[producer], ledger: l.ledger.Producer(producer), producer: producer}
			}
		}
		return nil
	}
}

// sentGuard passes a worker's record outcomes to the ledger, refusing
// (and noting) an outcome of a sequence the worker never reported sent.
type sentGuard struct {
	log      *verify.TrackedLog
	ledger   *verify.ProducerLog
	producer uint32
}

func (g sentGuard) RecordSent(seq uint64, fate verify.Fate) error { return g.log.RecordSent(seq, fate) }

func (g sentGuard) RecordAcknowledged(seq uint64, at verify.Ack) {
	if seq < g.ledger.Sent() {
		g.log.RecordAcknowledged(seq, at)
	}
}

func (g sentGuard) RecordErrored(seq uint64) {
	if seq < g.ledger.Sent() {
		g.log.RecordErrored(seq)
	}
}

func (g sentGuard) TransactionEnding(first, end uint64) {}

func (g sentGuard) RecordTransactionEnd(first, end uint64, outcome verify.TransactionOutcome) {
	if end <= g.ledger.Sent() {
		g.log.RecordTransactionEnd(first, end, outcome)
	}
}

// add takes in one summary of the worker: into the run's metrics and the
// worker's own share.
func (w *remoteWorker) add(summary worker.Summary, metrics *runMetrics) error {
	produceAck, err := metrics.mergeSummary(summary)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if produceAck != nil {
		w.produceAck.Merge(produceAck)
	}
	w.summary.Acked += summary.Acked
	w.summary.AckedBytes += summary.AckedBytes
	w.summary.Measured += summary.Measured
	w.summary.MeasuredBytes += summary.MeasuredBytes
	w.summary.Errors += summary.Errors
	w.summary.CPUNanos, w.summary.StreamNanos, w.summary.StreamBytes = summary.CPUNanos, summary.StreamNanos, summary.StreamBytes
	w.final = w.final || summary.Final
	return nil
}

// failure is the error of a worker that did not finish its share.
func (w *remoteWorker) failure() error {
	w.mu.Lock()
	final := w.final
	w.mu.Unlock()
	failure := w.process.Failure()
	if final && failure == "" {
		return nil
	}
	if failure == "" {
		failure = fmt.Sprintf("worker `%s` (pid %d) exited before its last summary", w.process.CommandLine(), w.process.PID())
	}
	return fmt.Errorf("load worker %d%s, running producers %s, died: %s; what it sent after its last report is not in the ledger, "+
		"so the checker counts those records as phantoms", w.index, onHost(w.host), report.ProducerRange(w.producers), failure)
}

func onHost(host string) string {
	if host == "" {
		return ""
	}
	return " on " + host
}

// behindShare is the share of its rate below which a paced worker is
// flagged as the limit of the run.
const behindShare = 0.95

// shares reports each worker's part of the run, measured over seconds
// (the run's measured time).
func (r *remoteLoad) shares(seconds float64) []report.WorkerShare {
	if r == nil {
		return nil
	}
	var shares []report.WorkerShare
	for _, w := range r.workers {
		w.mu.Lock()
		share := report.WorkerShare{Index: w.index, Host: w.host, Command: w.process.CommandLine(),
			Producers: w.producers, TargetRecordsPerSecond: w.rate, Acknowledged: w.summary.Acked,
			Measured: w.summary.Measured, Errors: w.summary.Errors,
			ProduceAck: report.Summarize(w.produceAck), StreamBytes: w.summary.StreamBytes, Status: report.WorkerOK}
		if seconds > 0 {
			share.RecordsPerSecond = float64(w.summary.Measured) / seconds
			share.MegabytesPerSecond = float64(w.summary.MeasuredBytes) / seconds / 1e6
		}
		if w.summary.CPUNanos > 0 {
			share.CPUSeconds = float64(w.summary.CPUNanos) / 1e9
			share.StreamCPUShare = float64(w.summary.StreamNanos) / float64(w.summary.CPUNanos)
		}
		final := w.final
		w.mu.Unlock()
		switch {
		case !final || w.process.Failure() != "":
			share.Status, share.Note = report.WorkerDied, strings.TrimSpace(w.process.Failure())
		case w.rate > 0 && share.RecordsPerSecond < behindShare*w.rate:
			share.Status = report.WorkerBehind
			share.Note = fmt.Sprintf("kept %.0f%% of its share of the rate (%.0f of %.0f records/s): the limit was this client, not the cluster",
				100*share.RecordsPerSecond/w.rate, share.RecordsPerSecond, w.rate)
		}
		shares = append(shares, share)
	}
	return shares
}
