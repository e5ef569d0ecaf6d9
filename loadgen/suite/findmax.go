package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/findmax"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/progress"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// runFindMax runs a [FindMax]: the sustainable-rate search of every mode
// of the workload on each target, each step printed as it ends, then,
// with fractions, the latency workload at those fractions of
// at-least-once's rate on the first target, after its search; then the
// tables and files (the results' find_max section).
func runFindMax(ctx context.Context, spec Spec) error {
	workload, latency, fractions := spec.Workload, spec.Search.Latency, spec.Search.Fractions
	described := workload // the workload the results file names
	if len(fractions) > 0 {
		described = latency // its runs are the latency workload's
	}
	results, err := newResults(described, nil)
	if err != nil {
		return err
	}
	results.FindMax = &report.FindMax{Criteria: criteria(spec.Search, workload)}
	var runErr error
	for i, config := range spec.Targets {
		var after func(loadgen.Target, report.FindMaxTarget) error
		if i == 0 && len(fractions) > 0 {
			after = func(target loadgen.Target, searched report.FindMaxTarget) error {
				runs, load, err := runAtFractions(ctx, spec, target, latency, baselineRate(searched),
					"find-max on "+target.Kind(), fractions)
				results.Runs, results.FindMax.EqualLoad = append(results.Runs, runs...), load
				return err
			}
		}
		searched, err := findMaxOn(ctx, spec, config, workload, after)
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
	if _, err := spec.Output.writeResults(results, findMaxTables, finish{event: "find_max_finished", interrupted: runErr != nil}); err != nil {
		return err
	}
	return verdict(runErr, results.Passed,
		"a find-max step failed its checks (status \"fail\" in the steps of the results file), or a run at a rate fraction failed")
}

// criteria are the criteria of search with workload's steps, for the
// results file.
func criteria(search Search, workload loadgen.Workload) report.FindMaxCriteria {
	c := search.Config
	criteria := report.FindMaxCriteria{Tolerance: c.Tolerance,
		MaxP99Millis: float64(c.MaxP99) / float64(time.Millisecond), Precision: c.Precision,
		StartRecordsPerSecond: c.Start, Retries: max(c.Retries, 0), MaxSteps: c.MaxSteps, BudgetSeconds: c.Budget.Seconds(),
		StepWarmupSeconds: time.Duration(workload.Warmup).Seconds(), StepSeconds: time.Duration(workload.Duration).Seconds()}
	if c.Confirmations >= 0 {
		criteria.ConfirmSeconds, criteria.Confirmations, criteria.StepDown = search.Confirm.Seconds(), c.Confirmations, c.StepDown
	}
	return criteria
}

// newResults starts the results of a search, of runs at rate fractions or
// of the security workload, of workload (on target, when known).
func newResults(workload loadgen.Workload, target loadgen.Target) (*report.Results, error) {
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

// findMaxOn starts one target and searches every mode on it, then calls
// after (when not nil) with the target and what the search found. A nil
// result means the target could not be used.
func findMaxOn(ctx context.Context, spec Spec, config loadgen.TargetConfig, workload loadgen.Workload,
	after func(loadgen.Target, report.FindMaxTarget) error) (*report.FindMaxTarget, error) {
	target, err := loadgen.StartTarget(ctx, config)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	if err := loadgen.Preflight(ctx, target, workload); err != nil {
		return nil, err
	}
	search, progress := spec.Search, spec.Output.steps()
	confirmation := "no confirmation"
	if search.Config.Confirmations >= 0 && search.Confirm > 0 {
		confirmation = fmt.Sprintf("then a confirmation step of %s warm-up + %s", workload.Warmup, search.Confirm)
	}
	fmt.Fprintf(progress, "find-max on %s (%s): %s; steps of %s warm-up + %s, at most %d steps and %s per mode, %s\n",
		target.Kind(), target.Description(), strings.Join(workload.Modes, ", "), workload.Warmup, workload.Duration,
		search.Config.MaxSteps, search.Config.Budget, confirmation)
	searched, err := loadgen.FindMax(ctx, loadgen.FindMaxOptions{Options: spec.options(workload, target),
		Search: search.Config, ConfirmDuration: search.Confirm, Observe: stepPrinter(progress, target.Kind())})
	if err == nil && after != nil {
		err = after(target, searched)
	}
	return &searched, err
}

// stepPrinter prints each step of a search on the target of kind as it
// ends, numbered per mode.
func stepPrinter(w io.Writer, kind string) func(name string, s findmax.Step) {
	counts := map[string]int{}
	return func(name string, s findmax.Step) {
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
		fmt.Fprintf(w, "  %s %s step %d: target %d rec/s%s, achieved %.0f, ack p99 %.2f ms, %.1fs: %s\n",
			kind, name, counts[name], s.Target, retry, s.Achieved, float64(s.P99)/float64(time.Millisecond), s.Took.Seconds(), verdict)
	}
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

// verdict is the error a search or the security workload ends with:
// interrupted, could not go on, or failed (saying what failed).
func verdict(runErr error, passed bool, failed string) error {
	switch {
	case errors.Is(runErr, context.Canceled):
		return fmt.Errorf("interrupted: %w", runErr)
	case runErr != nil:
		return runErr
	case !passed:
		return errors.New(failed)
	}
	return nil
}

// baselineRate is at-least-once's sustainable rate in searched (0: not
// searched, or nothing held).
func baselineRate(searched report.FindMaxTarget) int {
	for _, mode := range searched.Modes {
		if mode.Mode == modes.Baseline() {
			return mode.SustainableRecordsPerSecond
		}
	}
	return 0
}

// runFractions runs a [Fractions]: the workload at fractions of the given
// sustainable rate on the first target, with the summary tables, the
// results file and the dashboard of a suite.
func runFractions(ctx context.Context, spec Spec) error {
	workload := spec.Workload
	target, err := loadgen.StartTarget(ctx, spec.Targets[0])
	if err != nil {
		return err
	}
	defer target.Close()
	if err := loadgen.Preflight(ctx, target, workload); err != nil {
		return err
	}
	results, err := newResults(workload, target)
	if err != nil {
		return err
	}
	runs, load, runErr := runAtFractions(ctx, spec, target, workload, spec.Search.SustainableRate, "--sustainable-rate", spec.Search.Fractions)
	results.Runs, results.FindMax = runs, &report.FindMax{EqualLoad: load}
	results.FinishedAt = time.Now()
	results.Passed = len(runs) > 0 && runsPassed(runs)
	if _, err := spec.Output.writeResults(results, findMaxTables, finish{event: "find_max_finished", interrupted: runErr != nil}); err != nil {
		return err
	}
	return verdict(runErr, results.Passed,
		"a find-max step failed its checks (status \"fail\" in the steps of the results file), or a run at a rate fraction failed")
}

// runAtFractions runs workload on target once per fraction of rate (every
// mode at the same offered load), its runs renamed "<run> at <pct>%", and
// returns them with the section that says which rates they ran at and
// where the rate came from (source). The progress of each fraction's runs
// is printed like a suite's.
func runAtFractions(ctx context.Context, spec Spec, target loadgen.Target, workload loadgen.Workload,
	rate int, source string, fractions []float64) ([]*report.Run, *report.EqualLoad, error) {
	if rate <= 0 {
		return nil, nil, errors.New("--rate-fraction: at-least-once has no sustainable rate to take fractions of (search it with --find-max, or give --sustainable-rate)")
	}
	load := &report.EqualLoad{BaselineRecordsPerSecond: rate, Source: source}
	var runs []*report.Run
	for _, fraction := range fractions {
		cellWorkload := workload
		cellWorkload.Rate = max(1, int(math.Round(fraction*float64(rate))))
		// The record bound must not end a run before its time bound does.
		cellWorkload.Records = max(cellWorkload.Records, int64(float64(cellWorkload.Rate)*timeSeconds(cellWorkload)*1.1))
		cell := report.EqualLoadCell{Fraction: fraction, RecordsPerSecond: cellWorkload.Rate}
		options := spec.options(cellWorkload, target)
		printer := spec.Output.printer()
		if printer != nil {
			options.Progress = printer
		}
		results, runErr := loadgen.Run(ctx, options)
		if results != nil {
			for _, run := range results.Runs {
				run.Name = fmt.Sprintf("%s at %.0f%%", run.Name, 100*fraction)
				cell.Runs = append(cell.Runs, run.Name)
				runs = append(runs, run)
			}
			if printer != nil {
				printer.SuiteFinished(progress.Outcome{Passed: results.Passed, Interrupted: runErr != nil})
			}
		}
		load.Cells = append(load.Cells, cell)
		if runErr != nil {
			return runs, load, runErr
		}
	}
	return runs, load, nil
}

// timeSeconds is a workload's warm-up plus measured time, in seconds.
func timeSeconds(w loadgen.Workload) float64 {
	return time.Duration(w.Warmup + w.Duration).Seconds()
}
