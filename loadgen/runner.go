package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Options configure one invocation of the load generator.
type Options struct {
	// Workload is run in each of its modes, one after the other.
	Workload Workload
	// Target is the cluster, already started.
	Target Target
	// Progress receives the live progress line (nil: none); Terminal makes
	// it rewrite one line in place.
	Progress io.Writer
	Terminal bool
}

// runPlan is one run of a suite: a mode (and commit interval) with its
// topics. It is immutable once planned.
type runPlan struct {
	name           string
	mode           string
	workload       Workload
	commitInterval time.Duration
	runID          uint64
	runIDText      string
	bootstrap      []string
	// topicSuffix names the run in topic, group and transactional ids.
	topicSuffix string
	// topic is where load producers write; outputTopic is the pipeline's
	// output (empty for other modes).
	topic       string
	outputTopic string
}

// planRuns expands a workload into runs: one per mode, and one per commit
// interval for the transactional mode.
func planRuns(workload Workload, runID uint64, bootstrap []string) []runPlan {
	runIDText := fmt.Sprintf("%016x", runID)
	var plans []runPlan
	for _, mode := range workload.Modes {
		intervals := []time.Duration{0}
		if mode == ModeTransactional {
			intervals = intervals[:0]
			for _, interval := range workload.Transaction.CommitIntervals {
				intervals = append(intervals, time.Duration(interval))
			}
		}
		for _, interval := range intervals {
			plan := runPlan{name: mode, mode: mode, workload: workload, commitInterval: interval,
				runID: runID, runIDText: runIDText, bootstrap: bootstrap}
			if mode == ModeTransactional {
				plan.name = fmt.Sprintf("%s@%s", mode, interval)
			}
			plan.topicSuffix = strings.NewReplacer("@", "-", ".", "_").Replace(plan.name)
			plan.topic = "exactly." + runIDText + "." + plan.topicSuffix
			if mode == ModeEOSPipeline {
				plan.topic += ".in"
				plan.outputTopic = "exactly." + runIDText + "." + plan.topicSuffix + ".out"
			}
			plans = append(plans, plan)
		}
	}
	return plans
}

// Run runs every mode of the workload against the target and returns the
// results. It returns an error only when the target cannot be used at all;
// a mode that fails, errors or is unsupported is recorded in its Run.
func Run(ctx context.Context, options Options) (*report.Results, error) {
	if err := options.Workload.Validate(); err != nil {
		return nil, err
	}
	runID := rand.Uint64()
	workloadJSON, err := json.Marshal(options.Workload)
	if err != nil {
		return nil, fmt.Errorf("encode workload: %w", err)
	}
	results := &report.Results{
		SchemaVersion: report.SchemaVersion,
		Tool:          "exactly loadgen",
		RunID:         fmt.Sprintf("%016x", runID),
		StartedAt:     time.Now(),
		Target: report.Target{Kind: options.Target.Kind(), Bootstrap: options.Target.Bootstrap(),
			Description: options.Target.Description()},
		Machine:  report.CurrentMachine(),
		Workload: workloadJSON,
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(options.Target.Bootstrap()...), kgo.ClientID("exactly-loadgen-admin"))
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	defer admin.Close()
	for _, plan := range planRuns(options.Workload, runID, options.Target.Bootstrap()) {
		if ctx.Err() != nil {
			break
		}
		results.Runs = append(results.Runs, runOne(ctx, admin, plan, options))
	}
	results.FinishedAt = time.Now()
	compareWithBaseline(results.Runs)
	results.Passed = len(results.Runs) > 0 && ctx.Err() == nil
	for _, run := range results.Runs {
		if run.Status != report.StatusPass && run.Status != report.StatusUnsupported {
			results.Passed = false
		}
	}
	return results, ctx.Err()
}

// compareWithBaseline sets each run's throughput ratio to the baseline run.
func compareWithBaseline(runs []*report.Run) {
	for _, baseline := range runs {
		if baseline.Mode != BaselineMode || baseline.Throughput.RecordsPerSecond <= 0 {
			continue
		}
		for _, run := range runs {
			run.Throughput.RatioToBaseline = run.Throughput.RecordsPerSecond / baseline.Throughput.RecordsPerSecond
		}
		return
	}
}

// runOne runs one plan: topics, load, drain, verification, verdict.
func runOne(ctx context.Context, admin *kgo.Client, plan runPlan, options Options) *report.Run {
	workload := plan.workload
	run := &report.Run{Name: plan.name, Mode: plan.mode, ClientSettings: clientSettings(plan), StartedAt: time.Now(),
		Latency: map[string]*report.Histogram{}, ErrorsByCode: map[string]int64{}}
	defer func() { run.FinishedAt = time.Now() }()

	if err := createRunTopics(ctx, admin, plan); err != nil {
		return failRun(run, err)
	}
	ledger := verify.NewLedger(plan.runID, workload.Producers)
	start := time.Now()
	warmupEnd := start.Add(time.Duration(workload.Warmup))
	deadline := warmupEnd.Add(time.Duration(workload.Duration))
	metrics := newRunMetrics(warmupEnd)

	stopProgress, progressDone := make(chan struct{}), make(chan struct{})
	live := &progress{out: options.Progress, terminal: options.Terminal, name: plan.name, start: start,
		planned: deadline.Sub(start), metrics: metrics}
	go func() { defer close(progressDone); live.run(stopProgress) }()

	runErr := driveLoad(ctx, plan, ledger, metrics, deadline)
	close(stopProgress)
	<-progressDone
	measuredEnd := metrics.producersDone
	run.TimeSeries = live.series
	run.Producers = ledger.Totals()
	run.Retries = metrics.retries.Load()
	summarizeMetrics(run, metrics, measuredEnd)

	defer func() {
		cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		// Best effort: a target without DeleteTopics keeps the topics.
		_ = deleteTopics(cleanupCtx, admin, plan.topic, plan.outputTopic)
	}()
	if reason := metrics.unsupportedMode(); reason != "" {
		run.Status, run.Reason = report.StatusUnsupported, reason
		return run
	}
	verifyRun(ctx, admin, plan, ledger, run)
	judge(run, runErr)
	return run
}

// failRun records a run that could not start.
func failRun(run *report.Run, err error) *report.Run {
	run.Status, run.Reason = report.StatusError, err.Error()
	if reason := unsupportedReason(err); reason != "" {
		run.Status = report.StatusUnsupported
	}
	return run
}

// createRunTopics creates the plan's topics.
func createRunTopics(ctx context.Context, admin *kgo.Client, plan runPlan) error {
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, topic := range []string{plan.topic, plan.outputTopic} {
		if topic == "" {
			continue
		}
		if err := createTopic(setupCtx, admin, topic, plan.workload.Partitions, plan.workload.ReplicationFactor); err != nil {
			return err
		}
	}
	return nil
}

// driveLoad runs the producers (and the pipeline and live consumers) until
// the record budget or the deadline, then lets consumers drain.
func driveLoad(ctx context.Context, plan runPlan, ledger *verify.Ledger, metrics *runMetrics, deadline time.Time) error {
	workload := plan.workload
	drain := time.Duration(workload.Drain)
	finalTopic, readCommitted := plan.topic, plan.mode == ModeTransactional
	var workers *pipeline
	if plan.mode == ModeEOSPipeline {
		finalTopic, readCommitted = plan.outputTopic, true
		var err error
		if workers, err = startPipeline(ctx, plan, metrics); err != nil {
			return err
		}
	}
	var consumers *liveConsumers
	if workload.Consumers > 0 {
		var err error
		consumers, err = startLiveConsumers(ctx, plan.bootstrap, finalTopic, workload.Partitions, workload.Consumers, readCommitted, metrics)
		if err != nil {
			if workers != nil {
				_ = workers.stop()
			}
			return err
		}
	}
	produceErr := runProducers(ctx, plan, ledger, metrics, deadline)
	metrics.producersDone = time.Now()
	totals := ledger.Totals()
	visible := int64(totals.Acknowledged) - int64(totals.Aborted) - int64(totals.Uncertain)
	drainDeadline := time.Now().Add(drain)
	if metrics.stopped.Load() {
		drainDeadline = time.Now() // unsupported: nothing more will arrive
	}
	var pipelineErr error
	if workers != nil {
		// The pipeline's measured time ends when its output caught up.
		caughtUp := workers.committed.waitFor(int64(totals.Acknowledged), drainDeadline)
		metrics.producersDone = time.Now()
		pipelineErr = workers.stop()
		if !caughtUp {
			pipelineErr = errors.Join(pipelineErr, fmt.Errorf("pipeline committed %d of %d input records within the drain time %s",
				workers.committed.load(), totals.Acknowledged, drain))
		}
	}
	if consumers != nil {
		consumers.stopAfter(visible, drainDeadline)
	}
	return errors.Join(produceErr, pipelineErr)
}

// runProducers runs the plan's producers to completion and closes them.
func runProducers(ctx context.Context, plan runPlan, ledger *verify.Ledger, metrics *runMetrics, deadline time.Time) error {
	workload := plan.workload
	// Producers stop sending at deadline; flushing and ending the last
	// transaction may take up to the drain time more.
	produceCtx, cancel := context.WithDeadline(ctx, deadline.Add(time.Duration(workload.Drain)))
	defer cancel()
	var wait sync.WaitGroup
	errs := make([]error, workload.Producers)
	start := time.Now()
	for index := range workload.Producers {
		budget := uint64(workload.Records / int64(workload.Producers))
		if int64(index) < workload.Records%int64(workload.Producers) {
			budget++
		}
		p, err := newProducer(plan, uint32(index), ledger, metrics, budget, deadline, start)
		if err != nil {
			errs[index] = err
			continue
		}
		wait.Add(1)
		go func() {
			defer wait.Done()
			defer p.client.Close()
			if plan.mode == ModeTransactional {
				errs[index] = p.runTransactional(produceCtx)
			} else {
				errs[index] = p.runPlain(produceCtx)
			}
		}()
	}
	wait.Wait()
	return errors.Join(errs...)
}

// newProducer builds producer index of plan with its client.
func newProducer(plan runPlan, index uint32, ledger *verify.Ledger, metrics *runMetrics, budget uint64, deadline, start time.Time) (*producer, error) {
	workload := plan.workload
	transactionalID := fmt.Sprintf("exactly-%s-%s-p%d", plan.runIDText, plan.topicSuffix, index)
	modeOptions, err := producerOptions(plan.mode, transactionalID, time.Duration(workload.Transaction.Timeout))
	if err != nil {
		return nil, err
	}
	options := append([]kgo.Opt{
		kgo.SeedBrokers(plan.bootstrap...),
		kgo.ClientID(fmt.Sprintf("exactly-loadgen-%s-%d", plan.topicSuffix, index)),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.WithLogger(clientLogger{metrics: metrics}),
	}, modeOptions...)
	client, err := kgo.NewClient(options...)
	if err != nil {
		return nil, fmt.Errorf("producer %d client: %w", index, err)
	}
	seed := plan.runID ^ uint64(index)<<32
	return &producer{
		id: index, client: client, log: ledger.Producer(index), metrics: metrics,
		runID: plan.runID, topic: plan.topic, recordSize: workload.RecordSize,
		keys:   newKeyChooser(workload.Keys, seed),
		pacer:  newPacer(float64(workload.Rate)/float64(workload.Producers), start),
		budget: budget, deadline: deadline,
		commitInterval: plan.commitInterval, commitRecords: workload.Transaction.CommitRecords,
		abortShare: workload.Transaction.AbortShare, random: rand.New(rand.NewPCG(seed, 1)),
	}, nil
}

// summarizeMetrics fills throughput, latency and error counts.
func summarizeMetrics(run *report.Run, metrics *runMetrics, measuredEnd time.Time) {
	seconds := measuredEnd.Sub(metrics.warmupEnd).Seconds()
	if seconds > 0 {
		run.MeasuredSeconds = seconds
		run.Throughput.RecordsPerSecond = float64(metrics.ackedMeasured.Load()) / seconds
		run.Throughput.MegabytesPerSecond = float64(metrics.ackedBytes.Load()) / seconds / 1e6
	}
	metrics.mu.Lock()
	defer metrics.mu.Unlock()
	for name, histogram := range map[string]*hdrHistogram{
		report.LatencyProduceAck: metrics.produceAck, report.LatencyEndToEnd: metrics.endToEnd,
		report.LatencyTransactionCommit: metrics.commit,
	} {
		if summary := report.Summarize(histogram); summary != nil {
			run.Latency[name] = summary
		}
	}
	for name, count := range metrics.errorsByCode {
		run.ErrorsByCode[name] = count
	}
	run.Transactions = metrics.transactions
}
