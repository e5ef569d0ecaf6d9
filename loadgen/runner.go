package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/report"
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
	// Self starts the exactly binary again, for process faults (a broker
	// subprocess) and client faults (producer and pipeline workers). Empty:
	// those runs are not applicable.
	Self SelfCommand
	// Database is the application database of consumer-dedup and
	// external-offsets: a postgres:// URL or an SQLite file path. Empty:
	// an SQLite file in a temporary directory, removed afterwards.
	Database string
	// RunID, when not 0, is the invocation's run id (else a random one),
	// so a caller can name files after it before the run (profiles).
	RunID uint64
}

// runPlan is one run of a suite: a mode (and commit interval) under a fault
// plan, with its topics. It is immutable once planned, except that the run
// points bootstrap and clientBootstrap at a launched broker or the fault
// proxy on its own copy.
type runPlan struct {
	name           string
	mode           string
	workload       Workload
	commitInterval time.Duration
	runID          uint64
	runIDText      string
	// bootstrap is the target's (or launched broker's) address, for the
	// admin client and verification reads; clientBootstrap is where the
	// load's clients connect: the fault proxy under proxy rules.
	bootstrap       []string
	clientBootstrap []string
	faults          faults.Plan
	// topicSuffix names the run in topic, group and transactional ids.
	topicSuffix string
	// topic is where load producers write; outputTopic is the pipeline's
	// (or at-least-once's relay's) output, empty for other modes;
	// chainTopics are the topics between them when stages are chained
	// (eos-pipeline under group-churn; see stageTopics).
	topic       string
	outputTopic string
	chainTopics []string
	// appDB is the application database (consumer-dedup,
	// external-offsets; nil otherwise), databaseDSN where worker
	// subprocesses connect to it and database its description.
	appDB       *appDB
	databaseDSN string
	database    string
	// observations is where the run's readers note what they read and
	// its consumers their polls (polls.go); loadAndVerify makes one per
	// run.
	observations *runObservations
}

// Run runs every mode of the workload against the target and returns the
// results. It returns an error only when the target cannot be used at all;
// a mode that fails, errors or is unsupported is recorded in its Run.
func Run(ctx context.Context, options Options) (*report.Results, error) {
	if err := options.Workload.Validate(); err != nil {
		return nil, err
	}
	runID := options.RunID
	if runID == 0 {
		runID = rand.Uint64()
	}
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
	plans, err := planRuns(options.Workload, runID, options.Target.Bootstrap())
	if err != nil {
		return nil, err
	}
	closeDatabase, err := attachDatabase(ctx, plans, options.Database)
	if err != nil {
		return nil, err
	}
	defer closeDatabase()
	for _, plan := range plans {
		if ctx.Err() != nil {
			break
		}
		results.Runs = append(results.Runs, runOne(ctx, admin, plan, options))
	}
	results.FinishedAt = time.Now()
	compareWithBaseline(results.Runs)
	results.Passed = len(results.Runs) > 0 && ctx.Err() == nil
	for _, run := range results.Runs {
		if run.Status == report.StatusFail || run.Status == report.StatusError {
			results.Passed = false
		}
	}
	return results, ctx.Err()
}

// compareWithBaseline sets each run's throughput ratio to the baseline run
// under the same fault plan.
func compareWithBaseline(runs []*report.Run) {
	for _, baseline := range runs {
		if baseline.Mode != BaselineMode || baseline.Throughput.RecordsPerSecond <= 0 {
			continue
		}
		for _, run := range runs {
			if run.FaultPlan == baseline.FaultPlan {
				run.Throughput.RatioToBaseline = run.Throughput.RecordsPerSecond / baseline.Throughput.RecordsPerSecond
			}
		}
	}
}

// runOne runs one plan: faults, topics, load, drain, verification, verdict.
func runOne(ctx context.Context, admin *kgo.Client, plan runPlan, options Options) *report.Run {
	run := &report.Run{Name: plan.name, Mode: plan.mode, ClientSettings: clientSettings(plan), StartedAt: time.Now(),
		Latency: map[string]*report.Histogram{}, ErrorsByCode: map[string]int64{}}
	run.FaultPlan = plan.faults.Name
	defer func() { run.FinishedAt = time.Now() }()
	if reason := notApplicable(plan.faults, plan.mode, canLaunch(options)); reason != "" {
		run.Status, run.Reason = report.StatusNotApplicable, reason
		judgeRun(run, plan.faults, evidence{})
		return run
	}
	env, plan, err := startFaultEnv(ctx, plan, options)
	if err != nil {
		failRun(run, err)
		judgeRun(run, plan.faults, evidence{})
		return run
	}
	defer env.close()
	if env.admin != nil {
		admin = env.admin
		run.ClientSettings["broker"] = env.broker.describe()
	}
	if err := createRunTopics(ctx, admin, plan); err != nil {
		failRun(run, err)
		judgeRun(run, plan.faults, evidence{})
		return run
	}
	defer func() {
		cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		// Best effort: a target without DeleteTopics keeps the topics.
		_ = deleteTopics(cleanupCtx, admin, plan.stageTopics()...)
		if plan.appDB != nil {
			_ = plan.appDB.deleteRun(cleanupCtx, plan.topic)
		}
	}()
	proof := loadAndVerify(ctx, admin, plan, options, env, run)
	judgeRun(run, plan.faults, proof)
	return run
}

// loadAndVerify drives the run's load with its faults, then reads back and
// checks what it wrote; it fills run's measurements and checks and returns
// the evidence for the verdict.
func loadAndVerify(ctx context.Context, admin *kgo.Client, plan runPlan, options Options, env *faultEnv, run *report.Run) (proof evidence) {
	workload := plan.workload
	plan.observations = newRunObservations()
	ledger, logs := newTrackedLedger(plan)
	metrics := newRunMetrics(time.Now())
	load := &loadRun{plan: plan, ledger: ledger, logs: logs, metrics: metrics, env: env, stats: &applicationStats{}, admin: admin}
	// A consume stage starts first and the clock once its group settled.
	workers, stageErr := load.startStage(ctx)
	start := time.Now()
	warmupEnd := start.Add(time.Duration(workload.Warmup))
	deadline := warmupEnd.Add(time.Duration(workload.Duration))
	metrics.setWarmupEnd(warmupEnd)
	load.start, load.deadline = start, deadline

	stopProgress, progressDone := make(chan struct{}), make(chan struct{})
	live := &progress{out: options.Progress, terminal: options.Terminal, name: plan.name, start: start,
		planned: deadline.Sub(start), metrics: metrics, faults: env.log.Total}
	go func() { defer close(progressDone); live.run(stopProgress) }()

	stopFaults := env.startProcessFaults(ctx)
	var runErr error
	if stageErr != nil {
		runErr = errors.Join(stageErr, stopFaults())
	} else {
		runErr = load.drive(ctx, stopFaults, workers)
	}
	close(stopProgress)
	<-progressDone
	run.TimeSeries = live.series
	run.Producers = ledger.Totals()
	run.Retries = metrics.retries.Load()
	summarizeMetrics(run, metrics, metrics.producersDone)
	run.LoadStartedAt = start
	proof = evidence{loadErr: runErr, zombieWrites: load.zombieWrites.Load(), churnAborts: load.churnAborts.Load()}
	defer func() {
		run.FaultsFired = env.log.Total()
		run.FaultEvents = env.events(start)
		proof.faultsFired, proof.faultCounts = run.FaultsFired, env.log.Counts()
	}()
	if reason := metrics.unsupportedMode(); reason != "" {
		run.Status, run.Reason = report.StatusUnsupported, reason
		return proof
	}
	proof.offenders = verifyRun(ctx, admin, plan, ledger, logs, run)
	if run.Application != nil {
		load.stats.fill(run.Application)
	}
	return proof
}

// failRun records a run that could not start.
func failRun(run *report.Run, err error) {
	run.Status, run.Reason = report.StatusError, err.Error()
	if reason := unsupportedReason(err); reason != "" {
		run.Status = report.StatusUnsupported
	}
}

// createRunTopics creates the plan's topics.
func createRunTopics(ctx context.Context, admin *kgo.Client, plan runPlan) error {
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, topic := range plan.stageTopics() {
		if err := createTopic(setupCtx, admin, topic, plan.workload.Partitions, plan.workload.ReplicationFactor); err != nil {
			return err
		}
	}
	return nil
}

// summarizeMetrics fills throughput, latency and error counts.
func summarizeMetrics(run *report.Run, metrics *runMetrics, measuredEnd time.Time) {
	seconds := measuredEnd.Sub(metrics.warmupEndTime()).Seconds()
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

// attachDatabase opens the application database when a plan needs it
// (creating its tables) and gives it to those plans. The returned function
// closes it and removes a temporary SQLite directory.
func attachDatabase(ctx context.Context, plans []runPlan, dsn string) (closeDatabase func(), err error) {
	needed := false
	for _, plan := range plans {
		needed = needed || usesDatabase(plan.mode)
	}
	if !needed {
		return func() {}, nil
	}
	temporary := ""
	if dsn == "" {
		if temporary, err = os.MkdirTemp("", "exactly-loadgen-db-*"); err != nil {
			return nil, fmt.Errorf("application database directory: %w", err)
		}
		dsn = filepath.Join(temporary, "application.db")
	}
	database, err := openAppDB(ctx, dsn)
	if err == nil {
		err = database.createSchema(ctx)
		if err != nil {
			database.Close()
		}
	}
	if err != nil {
		if temporary != "" {
			os.RemoveAll(temporary)
		}
		return nil, err
	}
	for i := range plans {
		if usesDatabase(plans[i].mode) {
			plans[i].appDB, plans[i].databaseDSN, plans[i].database = database, dsn, database.describe
		}
	}
	return func() {
		database.Close()
		if temporary != "" {
			os.RemoveAll(temporary)
		}
	}, nil
}
