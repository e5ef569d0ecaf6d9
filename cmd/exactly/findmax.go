package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/findmax"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// findMaxFlags are the settings of `exactly loadgen --find-max`.
type findMaxFlags struct {
	enabled   bool
	p99       time.Duration
	steps     int
	retries   int
	start     int
	precision float64
	budget    time.Duration
	confirm   time.Duration
	targets   string
	// fractions (--rate-fraction) and sustainable (--sustainable-rate):
	// run the latency workload at fractions of at-least-once's
	// sustainable rate, searched or given.
	fractions   string
	sustainable int
}

func (f *findMaxFlags) register(fs *flag.FlagSet) {
	d := findmax.Defaults()
	fs.BoolVar(&f.enabled, "find-max", false, "search each mode's sustainable rate: the highest offered rate whose fixed-rate run achieves it within 1 % "+
		"with ack p99 under --find-max-p99 (start low, double while it holds, then bisect); each step is a fault-free run "+
		"of --warmup + --duration on fresh topics (default workload: find-max)")
	fs.DurationVar(&f.p99, "find-max-p99", d.MaxP99, "--find-max: p99 acknowledgement latency a held step stays under")
	fs.IntVar(&f.steps, "find-max-steps", d.MaxSteps, "--find-max: at most this many steps per mode, retries included")
	fs.IntVar(&f.retries, "find-max-retries", d.Retries, "--find-max: run a failed step again this many times before its rate counts as failed (0: never)")
	fs.IntVar(&f.start, "find-max-start", d.Start, "--find-max: first rate tried, records/s")
	fs.Float64Var(&f.precision, "find-max-precision", d.Precision, "--find-max: stop once the first failed rate is within this fraction of the highest held rate")
	fs.DurationVar(&f.budget, "find-max-budget", d.Budget, "--find-max: time bound of each mode's search (no step starts that would end after it)")
	fs.DurationVar(&f.confirm, "find-max-confirm", 20*time.Second, "--find-max: measured time of a confirmation step: the rate the short steps found is run once more this long, "+
		"stepping down 20 % until a long step holds, then bisecting (at most 5 long steps); the rate reported is the highest a long step held "+
		"(0: no confirmation)")
	fs.StringVar(&f.targets, "targets", "", "--find-max only: comma-separated targets to search one after the other in this run (embedded, kfake), "+
		"with their rates side by side; replaces --target")
	fs.StringVar(&f.fractions, "rate-fraction", "", "comma-separated fractions (e.g. 0.5,0.8): run the latency workload's cells (--mode applies) once per fraction, "+
		"every mode at that fraction of at-least-once's sustainable rate, so modes are compared at equal offered load; "+
		"the rate is --find-max's (on its first target) or --sustainable-rate's")
	fs.IntVar(&f.sustainable, "sustainable-rate", 0, "with --rate-fraction and without --find-max: at-least-once's sustainable rate, records/s (e.g. from an earlier --find-max)")
}

// config is the search configuration the flags say.
func (f *findMaxFlags) config() findmax.Config {
	c := findmax.Defaults()
	c.MaxP99, c.MaxSteps, c.Start, c.Precision, c.Budget = f.p99, f.steps, f.start, f.precision, f.budget
	c.Retries = f.retries
	if f.retries == 0 {
		c.Retries = -1 // findmax.Config's "none"
	}
	if f.confirm <= 0 {
		c.Confirmations = -1
	}
	return c
}

// targetConfigs are the targets to search: --targets, else the one of
// --target or --bootstrap.
func (f *findMaxFlags) targetConfigs(flags loadgenFlags) ([]loadgen.TargetConfig, error) {
	if f.targets == "" {
		kind, bootstrap := flags.target, []string(nil)
		if flags.bootstrap != "" {
			kind, bootstrap = loadgen.TargetBootstrap, strings.Split(flags.bootstrap, ",")
		}
		self, _ := selfCommand() // an error: StartTarget finds the binary itself
		return []loadgen.TargetConfig{{Kind: kind, Bootstrap: bootstrap, DataDir: flags.dataDir, StartEmbedded: startEmbedded, Self: self,
			Security: flags.security}}, nil
	}
	if flags.bootstrap != "" {
		return nil, errors.New("--targets names targets the load generator starts (embedded, kfake); use --bootstrap alone for an existing cluster")
	}
	var configs []loadgen.TargetConfig
	for _, kind := range strings.Split(f.targets, ",") {
		kind = strings.TrimSpace(kind)
		if kind != loadgen.TargetEmbedded && kind != loadgen.TargetKfake {
			return nil, fmt.Errorf("--targets: %q is not embedded or kfake", kind)
		}
		configs = append(configs, loadgen.TargetConfig{Kind: kind, DataDir: flags.dataDir, StartEmbedded: startEmbedded})
	}
	return configs, nil
}

// runFindMax runs the sustainable-rate search of every mode of workload on
// each target, prints each step and the tables, and writes the results
// file (its find_max section) and dashboard.
func runFindMax(ctx context.Context, flags loadgenFlags, workload loadgen.Workload, stdout io.Writer) error {
	fractions, err := parseFractions(flags.findMax.fractions)
	if err != nil {
		return err
	}
	var latency loadgen.Workload
	if len(fractions) > 0 {
		if !slices.Contains(workload.Modes, modes.Baseline()) {
			return fmt.Errorf("--rate-fraction takes fractions of %s's sustainable rate: add it to --mode", modes.Baseline())
		}
		if latency, err = fractionWorkloadOf(flags, fractionWorkload); err != nil {
			return err
		}
	}
	return runFindMaxThen(ctx, flags, workload, latency, fractions, stdout)
}

// runFindMaxThen is runFindMax with the workload run at fractions of
// at-least-once's sustainable rate, on the first target, after its search
// (none when fractions is empty).
func runFindMaxThen(ctx context.Context, flags loadgenFlags, workload, latency loadgen.Workload, fractions []float64,
	stdout io.Writer) error {
	configs, err := flags.findMax.targetConfigs(flags)
	if err != nil {
		return err
	}
	self, err := selfCommand()
	if err != nil {
		return err
	}
	search := flags.findMax.config()
	described := workload // the workload the results file names
	if len(fractions) > 0 {
		described = latency // its runs are the latency workload's
	}
	results, err := newFindMaxResults(described, nil)
	if err != nil {
		return err
	}
	results.FindMax = &report.FindMax{Criteria: findMaxCriteria(flags, workload, search)}
	progress := stdout
	if flags.quiet || flags.jsonProgress {
		progress = io.Discard
	}
	var runErr error
	for i, config := range configs {
		var after func(loadgen.Target, report.FindMaxTarget) error
		if i == 0 && len(fractions) > 0 {
			after = func(target loadgen.Target, searched report.FindMaxTarget) error {
				runs, load, err := runAtFractions(ctx, target, latency, flags, baselineRate(searched),
					"find-max on "+target.Kind(), fractions, stdout)
				results.Runs, results.FindMax.EqualLoad = append(results.Runs, runs...), load
				return err
			}
		}
		searched, err := findMaxOn(ctx, config, workload, self, flags, search, progress, after)
		if err != nil && searched == nil {
			return err
		}
		if i == 0 {
			results.Target = searched.Target
		}
		results.FindMax.Targets = append(results.FindMax.Targets, *searched)
		if runErr = err; runErr != nil {
			break // interrupted, or the runs at rate fractions could not run
		}
	}
	results.FinishedAt = time.Now()
	results.Passed = findMaxPassed(results.FindMax) && runsPassed(results.Runs)
	return writeFindMaxOutputs(stdout, flags, results, runErr)
}

// findMaxCriteria are the criteria of search with workload's steps, for
// the results file.
func findMaxCriteria(flags loadgenFlags, workload loadgen.Workload, search findmax.Config) report.FindMaxCriteria {
	criteria := report.FindMaxCriteria{Tolerance: search.Tolerance,
		MaxP99Millis: float64(search.MaxP99) / float64(time.Millisecond), Precision: search.Precision,
		StartRecordsPerSecond: search.Start, Retries: max(search.Retries, 0), MaxSteps: search.MaxSteps, BudgetSeconds: search.Budget.Seconds(),
		StepWarmupSeconds: time.Duration(workload.Warmup).Seconds(), StepSeconds: time.Duration(workload.Duration).Seconds()}
	if search.Confirmations >= 0 {
		criteria.ConfirmSeconds, criteria.Confirmations, criteria.StepDown = flags.findMax.confirm.Seconds(), search.Confirmations, search.StepDown
	}
	return criteria
}

// newFindMaxResults starts the results of a --find-max or --rate-fraction
// invocation of workload (on target, when known).
func newFindMaxResults(workload loadgen.Workload, target loadgen.Target) (*report.Results, error) {
	workloadJSON, err := json.Marshal(workload)
	if err != nil {
		return nil, fmt.Errorf("encode workload: %w", err)
	}
	results := &report.Results{SchemaVersion: report.SchemaVersion, Tool: "exactly loadgen", RunID: fmt.Sprintf("%016x", rand.Uint64()),
		StartedAt: time.Now(), Machine: report.CurrentMachine(), Workload: workloadJSON, Runs: []*report.Run{}}
	if target != nil {
		results.Target = report.Target{Kind: target.Kind(), Bootstrap: target.Bootstrap(), Description: target.Description()}
	}
	return results, nil
}

// findMaxOn starts one target and searches every mode on it. A nil result
// means the target could not be used.
func findMaxOn(ctx context.Context, config loadgen.TargetConfig, workload loadgen.Workload, self loadgen.SelfCommand,
	flags loadgenFlags, search findmax.Config, progress io.Writer, after func(loadgen.Target, report.FindMaxTarget) error) (*report.FindMaxTarget, error) {
	target, err := loadgen.StartTarget(ctx, config)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	if err := loadgen.Preflight(ctx, target, workload); err != nil {
		return nil, err
	}
	confirmation := "no confirmation"
	if search.Confirmations >= 0 && flags.findMax.confirm > 0 {
		confirmation = fmt.Sprintf("then a confirmation step of %s warm-up + %s", workload.Warmup, flags.findMax.confirm)
	}
	fmt.Fprintf(progress, "find-max on %s (%s): %s; steps of %s warm-up + %s, at most %d steps and %s per mode, %s\n",
		target.Kind(), target.Description(), strings.Join(workload.Modes, ", "), workload.Warmup, workload.Duration,
		search.MaxSteps, search.Budget, confirmation)
	counts := map[string]int{}
	observe := func(name string, s findmax.Step) {
		counts[name]++
		verdict := "held"
		if !s.Held {
			verdict = "failed: " + s.Why
		}
		retry := ""
		if s.Attempt > 1 {
			retry = fmt.Sprintf(" (retry %d)", s.Attempt-1)
		}
		if s.Confirmation {
			retry = " (confirmation)"
		}
		fmt.Fprintf(progress, "  %s %s step %d: target %d rec/s%s, achieved %.0f, ack p99 %.2f ms, %.1fs: %s\n",
			target.Kind(), name, counts[name], s.Target, retry, s.Achieved, float64(s.P99)/float64(time.Millisecond), s.Took.Seconds(), verdict)
	}
	searched, err := loadgen.FindMax(ctx, loadgen.FindMaxOptions{
		Options: loadgen.Options{Workload: workload, Target: target, Self: self, Database: flags.database,
			Metrics: flags.live, BrokerMetrics: loadgen.BrokerMetricsURL(flags.brokerMetrics, target)},
		Search: search, ConfirmDuration: flags.findMax.confirm, Observe: observe})
	if err == nil && after != nil {
		err = after(target, searched)
	}
	return &searched, err
}

// findMaxPassed reports whether no step of the search failed its checks
// (a step that could not keep its rate did not fail them; one that lost
// or duplicated what its mode must not did).
func findMaxPassed(section *report.FindMax) bool {
	for _, target := range section.Targets {
		for _, mode := range target.Modes {
			for _, step := range mode.Steps {
				if step.Status == report.StatusFail {
					return false
				}
			}
		}
	}
	return len(section.Targets) > 0
}

// runsPassed reports whether no run failed or errored.
func runsPassed(runs []*report.Run) bool {
	for _, run := range runs {
		if run.Status == report.StatusFail || run.Status == report.StatusError {
			return false
		}
	}
	return true
}

// writeFindMaxOutputs prints the find-max tables and writes the results
// file and its dashboard.
func writeFindMaxOutputs(stdout io.Writer, flags loadgenFlags, results *report.Results, runErr error) error {
	tables := stdout
	if flags.jsonProgress {
		tables = io.Discard
	}
	if len(results.Runs) > 0 {
		if err := report.WriteSummaryWith(tables, results, report.SummaryOptions{Wide: flags.wide}); err != nil {
			return err
		}
		if err := loadgen.WriteMatrixWith(tables, results, flags.wide); err != nil {
			return err
		}
	}
	if err := report.WriteFindMax(tables, results.FindMax); err != nil {
		return err
	}
	report.WriteEqualLoad(tables, results.FindMax.EqualLoad)
	path, err := report.Write(flags.out, results)
	if err != nil {
		return err
	}
	csvPath, err := writeLoadgenCSV(flags.csv, results)
	if err != nil {
		return err
	}
	page, err := writeLoadgenDashboard(path, results)
	if err != nil {
		return fmt.Errorf("write dashboard: %w", err)
	}
	if csvPath != "" && !flags.jsonProgress {
		fmt.Fprintf(stdout, "csv: %s\n", csvPath)
	}
	if flags.jsonProgress {
		line, _ := json.Marshal(map[string]any{"event": "find_max_finished", "passed": results.Passed,
			"interrupted": runErr != nil, "results": path, "dashboard": page})
		fmt.Fprintf(stdout, "%s\n", line)
	} else {
		fmt.Fprintf(stdout, "results: %s\ndashboard: %s\n", path, page)
	}
	switch {
	case errors.Is(runErr, context.Canceled):
		return fmt.Errorf("interrupted: %w", runErr)
	case runErr != nil:
		return runErr
	case !results.Passed:
		return errors.New("a find-max step failed its checks (status \"fail\" in the steps of the results file), or a run at a rate fraction failed")
	}
	return nil
}
