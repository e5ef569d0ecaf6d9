package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/appdb"
	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/livemetrics"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/progress"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// Options configure one invocation of the load generator.
type Options struct {
	// Workload is run in each of its modes, one after the other.
	Workload Workload
	// Target is the cluster, already started.
	Target Target
	// Progress receives the suite's progress: a header, each cell's phase
	// about once a second and its verdict (nil: none). Run does not call
	// its SuiteFinished; the caller does, once the results are written.
	Progress progress.Reporter
	// Self starts the exactly binary again, for process faults (a broker
	// subprocess) and client faults (producer and pipeline workers). Empty:
	// those runs are not applicable.
	Self SelfCommand
	// Database is the application database of the database stages: a
	// postgres:// URL or an SQLite file path. Empty:
	// an SQLite file in a temporary directory, removed afterwards.
	Database string
	// RunID, when not 0, is the invocation's run id (else a random one),
	// so a caller can name files after it before the run (profiles).
	RunID uint64
	// Metrics receives the load's counts as it runs, for the loadgen's
	// own /metrics (nil: off).
	Metrics *livemetrics.Loadgen
	// BrokerMetrics is the address of the target broker's /metrics,
	// scraped before and after each cell into the cell's broker_metrics
	// ("": none; see BrokerMetricsURL).
	BrokerMetrics string
	// Workers is where the load's producers run: Count worker processes,
	// local or through the Exec transport (--workers, --worker-exec,
	// --worker-hosts); Count 0 runs them in this process.
	Workers WorkerTransport
	// duplicateOnce makes the first load worker write one duplicate (a
	// test's fault; see worker.Spec.DuplicateOnce).
	duplicateOnce bool
	// FaultHooks are the operator's --fault-exec commands, with which
	// process faults act on the brokers of a cluster the load generator
	// did not launch (nil: such runs are not applicable).
	FaultHooks *faults.Hooks
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
	// security is how every client of the run connects (nil: PLAINTEXT):
	// the target's, or none when the run launched its own broker.
	security *clientsec.Settings
	// topicSuffix names the run in topic, group and transactional ids.
	topicSuffix string
	// topic is where load producers write; outputTopic is the output of
	// a stage that writes a topic (transact, or a relay), empty for other
	// modes; chainTopics are the topics between them when stages are
	// chained (a transact stage under group-churn; see stageTopics).
	topic       string
	outputTopic string
	chainTopics []string
	// appDB is the application database (a mode with a database stage;
	// nil otherwise), databaseDSN where worker
	// subprocesses connect to it and database its description.
	appDB       *appdb.DB
	databaseDSN string
	database    string
	// observations is where the run's readers note what they read and
	// its consumers their polls (runObservations); loadAndVerify makes
	// one per run.
	observations *runObservations
	// round and slot place a run of an overhead workload (round from 1;
	// 0 and "" for other runs).
	round int
	slot  string
	// costPlan is the fault plan of the overhead tables the run belongs to
	// ("" without faults); the run itself ran without it when the plan
	// cannot touch its mode (the baseline under a zombie producer).
	costPlan string
	// consumerSession is the broker's group.consumer.session.timeout.ms
	// in a run that crashes consumer-protocol workers (0 in others); its
	// drain covers it (fitCrashDrains).
	consumerSession time.Duration
	// shareLog is what the share consumers of a share-group run saw and
	// did (nil for other modes); loadAndVerify makes one per run.
	shareLog *verify.ShareLog
}

// Run runs every mode of the workload against the target and returns the
// results. It returns an error only when the target cannot be used at all;
// a mode that fails, errors or is unsupported is recorded in its Run.
func Run(ctx context.Context, options Options) (*report.Results, error) {
	if err := options.Workload.Validate(); err != nil {
		return nil, err
	}
	if options.Workload.Overhead.NeedsSustainableRate() {
		return nil, errors.New("overhead.fractions: the rounds at shares of the sustainable rate need that rate (the command searches it, or takes --sustainable-rate)")
	}
	var notes []string
	if err := options.Workers.validate(); err != nil {
		return nil, err
	}
	if count := options.Workers.Count; count > options.Workload.Producers {
		notes = append(notes, fmt.Sprintf("%d load workers: producers raised from %d to %d, one per worker", count, options.Workload.Producers, count))
		options.Workload.Producers = count
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
	admin, err := kgo.NewClient(append(targetOptions(options.Target), kgo.ClientID("exactly-loadgen-admin"))...)
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	defer admin.Close()
	describeTarget(ctx, admin, options.Target.Kind(), &results.Target)
	planner := planRuns
	switch {
	case options.Workload.Overhead != nil:
		planner = planSuiteRuns
	case options.Workload.GroupProtocols != nil:
		planner = planGroupProtocolRuns
	}
	plans, err := planner(options.Workload, runID, options.Target.Bootstrap())
	if err != nil {
		return nil, err
	}
	if options.Workload.GroupProtocols == nil {
		nameConsumerProtocolRuns(plans)
	}
	for i := range plans {
		plans[i].security = TargetSecurity(options.Target)
	}
	if slices.ContainsFunc(plans, runPlan.crashesOnConsumerProtocol) {
		session, known := consumerSessionTimeout(ctx, admin)
		notes = append(notes, fitCrashDrains(plans, session, known))
	}
	if slices.ContainsFunc(plans, runPlan.crashesShareConsumers) {
		session, known := brokerSessionTimeout(ctx, admin, shareSessionName)
		notes = append(notes, fitShareCrashDrains(plans, session, known))
	}
	closeDatabase, err := attachDatabase(ctx, plans, options.Database)
	if err != nil {
		return nil, err
	}
	defer closeDatabase()
	reporter := options.Progress
	if reporter == nil {
		reporter = progress.Discard{}
	}
	suite := describeSuite(results, options, plans)
	suite.Notes = notes
	reporter.SuiteStarted(suite)
	var stopped error
	// The brokers at the start: a cell after one whose faults killed or
	// paused brokers waits for them all to serve again.
	brokers, brokersErr := clusterBrokers(ctx, admin)
	for i, plan := range plans {
		if ctx.Err() != nil {
			break
		}
		var notWhole error
		if i > 0 && len(plans[i-1].faults.Processes) > 0 && brokersErr == nil {
			notWhole = waitClusterWhole(ctx, admin, brokers)
		}
		run, stopErr := runCell(ctx, admin, plan, options, reporter, i+1)
		if notWhole != nil && (run.Status == report.StatusError || run.Status == report.StatusFail) {
			run.Reason += " (before this cell, after the previous one's faults: " + notWhole.Error() + ")"
		}
		run.Round, run.Slot = plan.round, plan.slot
		results.Runs = append(results.Runs, run)
		if stopErr != nil {
			// The cluster's state is unknown after a failed hook: the
			// cells left would measure it, not their mode.
			stopped = fmt.Errorf("%s: %w; the %d cells left were not run", run.Name, stopErr, len(plans)-i-1)
			break
		}
	}
	results.FinishedAt = time.Now()
	compareWithBaseline(results.Runs)
	if options.Workload.Overhead != nil {
		results.Overhead = buildOverhead(options.Workload, plans[:len(results.Runs)], results.Runs)
	}
	if options.Workload.GroupProtocols != nil {
		results.GroupProtocols = buildGroupProtocols(options.Workload, results.Runs)
	}
	results.Passed = len(results.Runs) > 0 && ctx.Err() == nil && stopped == nil
	for _, run := range results.Runs {
		if run.Status == report.StatusFail || run.Status == report.StatusError {
			results.Passed = false
		}
	}
	if stopped != nil {
		return results, errors.Join(ctx.Err(), stopped)
	}
	return results, ctx.Err()
}

// compareWithBaseline sets each run's throughput ratio to the baseline run
// under the same fault plan (and, for interleaved rounds, in the same
// round: the baseline slot, not the A/A one).
func compareWithBaseline(runs []*report.Run) {
	for _, baseline := range runs {
		if baseline.Mode != modes.Baseline() || baseline.Throughput.RecordsPerSecond <= 0 ||
			(baseline.Slot != "" && baseline.Slot != modes.Baseline()) {
			continue
		}
		for _, run := range runs {
			if run.FaultPlan == baseline.FaultPlan && run.Round == baseline.Round {
				run.Throughput.RatioToBaseline = run.Throughput.RecordsPerSecond / baseline.Throughput.RecordsPerSecond
			}
		}
	}
}

// describeSuite describes the planned cells for the progress reporter.
func describeSuite(results *report.Results, options Options, plans []runPlan) progress.Suite {
	suite := progress.Suite{RunID: results.RunID, Target: results.Target.Kind, TargetDescription: results.Target.Description,
		Workload: options.Workload.Name, Cells: make([]progress.Cell, len(plans))}
	for i, plan := range plans {
		suite.Cells[i] = progress.Cell{Index: i + 1, Name: plan.name, Load: time.Duration(plan.workload.Warmup + plan.workload.Duration),
			Drain: time.Duration(plan.workload.Drain), NotApplicable: cellNotApplicable(plan, options)}
	}
	return suite
}

// runCell runs the plan of cell index with its progress reported: the
// phases while it runs, then its verdict. stopSuite is a failed
// --fault-exec hook, after which no further cell should run.
func runCell(ctx context.Context, admin *kgo.Client, plan runPlan, options Options, reporter progress.Reporter, index int) (
	run *report.Run, stopSuite error) {
	tracker := newCellTracker(reporter, index)
	reporter.CellStarted(index)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); tracker.run(stop) }()
	run, stopSuite = runOne(ctx, admin, plan, options, tracker)
	close(stop)
	<-done
	finished := progress.Finished{Cell: index, Verdict: run.Status, Elapsed: run.FinishedAt.Sub(run.StartedAt),
		RecordsPerSecond: run.Throughput.RecordsPerSecond, Why: run.Reason}
	if run.Expectation != nil {
		finished.Observed = run.Expectation.Observed
		if run.Expectation.Why != "" {
			finished.Why = run.Expectation.Why
		}
	}
	if run.Status == report.StatusNotApplicable {
		finished.Observed = ""
		finished.Why = strings.TrimSuffix(strings.TrimPrefix(run.Reason, "not-applicable ("), ")")
	}
	reporter.CellFinished(finished)
	return run, stopSuite
}

// runOne runs one plan: faults, topics, load, drain, verification, verdict;
// tracker follows its phases. stopSuite is a failed --fault-exec hook.
func runOne(ctx context.Context, admin *kgo.Client, plan runPlan, options Options, tracker *cellTracker) (run *report.Run, stopSuite error) {
	run = &report.Run{Name: plan.name, Mode: plan.mode, ClientSettings: clientSettings(plan), StartedAt: time.Now(),
		Latency: map[string]*report.Histogram{}, ErrorsByCode: map[string]int64{}}
	run.FaultPlan = plan.faults.Name
	if plan.usesGroup() {
		run.GroupProtocol = plan.groupProtocol()
	}
	defer func() { run.FinishedAt = time.Now() }()
	if reason := cellNotApplicable(plan, options); reason != "" {
		run.Status, run.Reason = report.StatusNotApplicable, reason
		judgeRun(run, plan.faults, evidence{})
		return run, nil
	}
	if plan.sharesGroup() {
		if reason := shareNotApplicable(ctx, admin); reason != "" {
			run.Status, run.Reason = report.StatusNotApplicable, reason
			judgeRun(run, plan.faults, evidence{})
			return run, nil
		}
	}
	env, plan, err := startFaultEnv(ctx, plan, options)
	if err != nil {
		failRun(run, err)
		judgeRun(run, plan.faults, evidence{})
		return run, nil
	}
	defer env.close()
	if env.admin != nil {
		admin = env.admin
	}
	if env.broker != nil {
		run.ClientSettings["broker"] = env.broker.describe()
	}
	if env.proxy != nil && degrades(plan.faults) {
		if rtt, err := measurePathRTT(env.proxy.Addrs()[0], 30*time.Second); err == nil {
			run.PathRTTMs = float64(rtt) / float64(time.Millisecond)
		} else {
			env.note("%v", err)
		}
	}
	if err := createRunTopics(ctx, admin, plan); err != nil {
		failRun(run, err)
		judgeRun(run, plan.faults, evidence{})
		return run, nil
	}
	defer func() {
		cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		// Best effort: a target without DeleteTopics keeps the topics.
		_ = deleteTopics(cleanupCtx, admin, plan.stageTopics()...)
		if plan.appDB != nil {
			_ = plan.appDB.DeleteRun(cleanupCtx, plan.topic)
		}
	}()
	proof := loadAndVerify(ctx, admin, plan, options, env, run, tracker)
	judgeRun(run, plan.faults, proof)
	return run, proof.hookErr
}

// loadAndVerify drives the run's load with its faults, then reads back and
// checks what it wrote; it fills run's measurements and checks and returns
// the evidence for the verdict.
func loadAndVerify(ctx context.Context, admin *kgo.Client, plan runPlan, options Options, env *faultEnv, run *report.Run,
	tracker *cellTracker) (proof evidence) {
	workload := plan.workload
	plan.observations = newRunObservations()
	if plan.sharesGroup() {
		plan.shareLog = verify.NewShareLog(plan.runID)
	}
	ledger, logs := newTrackedLedger(plan)
	metrics := newRunMetrics(time.Now())
	metrics.live = options.Metrics.Mode(plan.mode)
	scrape := startCellScrape(ctx, options.BrokerMetrics, env)
	load := &loadRun{plan: plan, ledger: ledger, logs: logs, metrics: metrics, env: env, stats: &stages.Stats{}, admin: admin,
		tracker: tracker}
	// A consume stage starts first and the clock once its group settled.
	workers, stageErr := load.startStage(ctx)
	start := time.Now()
	warmupEnd := start.Add(time.Duration(workload.Warmup))
	deadline := warmupEnd.Add(time.Duration(workload.Duration))
	metrics.setWarmupEnd(warmupEnd)
	load.start, load.deadline = start, deadline

	tracker.startLoad(start, deadline, time.Duration(workload.Drain), metrics, env.log.Total)
	stopSampler, samplerDone := make(chan struct{}), make(chan struct{})
	live := &sampler{start: start, metrics: metrics, tracker: tracker}
	go func() { defer close(samplerDone); live.run(stopSampler) }()

	// A failed --fault-exec hook stops the load at once.
	loadCtx, stopLoad := context.WithCancelCause(ctx)
	defer stopLoad(nil)
	if env.proxy != nil {
		env.proxy.StartClock(start) // rule windows count from the load's start, as the schedules do
	}
	stopFaults := env.startProcessFaults(ctx, stopLoad)
	var runErr error
	if stageErr != nil {
		runErr = errors.Join(stageErr, stopFaults())
	} else {
		runErr = load.drive(loadCtx, stopFaults, workers)
	}
	var hookErr error
	if cause := context.Cause(loadCtx); faults.IsHookFailure(cause) {
		hookErr = cause
	}
	close(stopSampler)
	<-samplerDone
	// After the load drained, before the read-back's own requests.
	run.BrokerMetrics = scrape.finish(ctx)
	run.TimeSeries = live.series
	run.Producers = ledger.Totals()
	run.Retries = metrics.retries.Load()
	summarizeMetrics(run, metrics, metrics.producersDone, workload.Rate > 0)
	run.Workers = load.remote.shares(run.MeasuredSeconds)
	run.LoadStartedAt = start
	run.RebalancePauses = load.rebalancePauses()
	if hasFaults(plan.faults) {
		run.AckTimeline = &report.AckTimeline{StepMillis: int(timelineStep / time.Millisecond), Acked: live.timeline}
		run.Delayed = delayedOf(metrics)
	}
	proof = evidence{loadErr: runErr, hookErr: hookErr, zombieWrites: load.zombieWrites.Load(), churnAborts: load.churnAborts.Load()}
	defer func() {
		run.FaultsFired = env.log.Total()
		run.FaultEvents = env.events(start)
		run.Recovery = recoveryOf(plan.faults, live.timeline, run.FaultEvents, deadline.Sub(start))
		proof.faultsFired, proof.faultCounts = run.FaultsFired, env.log.Counts()
	}()
	if reason := metrics.unsupportedMode(); reason != "" {
		run.Status, run.Reason = report.StatusUnsupported, reason
		return proof
	}
	if hookErr != nil {
		return proof // the cluster's state is unknown: nothing to verify against
	}
	tracker.enter(progress.PhaseVerifying, 0)
	proof.offenders = verifyRun(ctx, admin, plan, ledger, logs, run)
	noteChecked(options.Metrics, plan.mode, run.Checks)
	if run.Application != nil {
		fillApplication(load.stats, run.Application)
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

// summarizeMetrics fills throughput, latency and error counts. paced: the
// producers kept a fixed rate, so latencies count from the scheduled send
// times and the uncorrected produce-ack latency is kept beside them.
func summarizeMetrics(run *report.Run, metrics *runMetrics, measuredEnd time.Time, paced bool) {
	seconds := measuredEnd.Sub(metrics.warmupEndTime()).Seconds()
	if seconds > 0 {
		run.MeasuredSeconds = seconds
		run.Throughput.RecordsPerSecond = float64(metrics.ackedMeasured.Load()) / seconds
		run.Throughput.MegabytesPerSecond = float64(metrics.ackedBytes.Load()) / seconds / 1e6
	}
	metrics.mu.Lock()
	defer metrics.mu.Unlock()
	histograms := map[string]*hdrHistogram{
		report.LatencyProduceAck: metrics.produceAck, report.LatencyEndToEnd: metrics.endToEnd,
		report.LatencyTransactionCommit: metrics.commit,
	}
	run.LatencyOrigin = report.LatencyFromCreation
	if paced {
		run.LatencyOrigin = report.LatencyFromSchedule
		histograms[report.LatencyProduceAckUncorrected] = metrics.produceAckUncorrected
	}
	for name, histogram := range histograms {
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
	database, err := appdb.Open(ctx, dsn)
	if err == nil {
		err = database.CreateSchema(ctx)
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
			plans[i].appDB, plans[i].databaseDSN, plans[i].database = database, dsn, database.Describe()
		}
	}
	return func() {
		database.Close()
		if temporary != "" {
			os.RemoveAll(temporary)
		}
	}, nil
}
