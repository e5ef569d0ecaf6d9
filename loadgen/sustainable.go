package loadgen

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/exactly-eos/exactly/loadgen/findmax"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// FindMaxOptions configure the sustainable-rate search of --find-max on
// one target.
type FindMaxOptions struct {
	// Options are those of Run. Each mode of Options.Workload (each commit
	// interval of a sweeping mode) is searched in turn; the workload's
	// fault matrix is not used, and Progress and RunID are ignored (each
	// step is a Run of its own, on fresh topics).
	Options
	// Search bounds and judges each mode's search.
	Search findmax.Config
	// ConfirmDuration is the measured time of a confirmation step (after
	// the workload's warm-up); 0 turns confirmation off.
	ConfirmDuration time.Duration
	// Observe, when not nil, is called after each step with the name of
	// the mode searched.
	Observe func(name string, step findmax.Step)
}

// searchUnit is one search: a mode, and a commit interval for a mode that
// sweeps them.
type searchUnit struct {
	name, mode string
	interval   Duration // 0: the mode does not sweep commit intervals
}

// FindMax searches the sustainable rate of each of the workload's modes on
// options.Target: each step is a fault-free, fixed-rate run of the workload
// (Warmup, then Duration measured) on fresh topics, verified like any
// other run; it holds when it passed, achieved its rate within the
// tolerance and kept its p99 acknowledgement latency under the bound. It
// returns an error only when ctx ended; a search that could not run (an
// unsupported mode, an unusable target) records its error in its mode.
func FindMax(ctx context.Context, options FindMaxOptions) (report.FindMaxTarget, error) {
	target := report.FindMaxTarget{Target: report.Target{Kind: options.Target.Kind(),
		Bootstrap: options.Target.Bootstrap(), Description: options.Target.Description()}}
	for _, unit := range searchUnits(options.Workload) {
		if ctx.Err() != nil {
			return target, ctx.Err()
		}
		var statuses []string // of the steps that ran, in order
		stepOf := func(duration time.Duration) findmax.StepFunc {
			return func(ctx context.Context, rate int) (findmax.Measurement, error) {
				run, described, err := runStep(ctx, options.Options, unit, rate, duration)
				if err != nil {
					return findmax.Measurement{}, err
				}
				if target.Target.Sharing == "" {
					// The step's run described the target (shared machine,
					// broker settings): the search's results say the same.
					target.Target = described
				}
				statuses = append(statuses, run.Status)
				return measurementOf(run, duration), nil
			}
		}
		var observe func(findmax.Step)
		if options.Observe != nil {
			observe = func(s findmax.Step) { options.Observe(unit.name, s) }
		}
		search := options.Search
		if options.ConfirmDuration <= 0 {
			search.Confirmations = -1
		}
		result := findmax.Search(ctx, search, stepOf(time.Duration(options.Workload.Duration)), observe)
		result = findmax.Confirm(ctx, search, result, stepOf(options.ConfirmDuration), observe)
		mode := report.FindMaxMode{Name: unit.name, Mode: unit.mode, SustainableRecordsPerSecond: result.Sustainable,
			SearchedRecordsPerSecond: result.Searched, Confirmed: result.Confirmed,
			FailedRecordsPerSecond: result.Failed, Stopped: result.Stopped}
		if result.Err != nil {
			mode.Error = result.Err.Error()
		}
		for i, s := range result.Steps {
			mode.Steps = append(mode.Steps, report.FindMaxStep{TargetRecordsPerSecond: s.Target, Attempt: s.Attempt,
				Confirmation: s.Confirmation, AchievedRecordsPerSecond: s.Achieved, P99Millis: float64(s.P99) / float64(time.Millisecond),
				Held: s.Held, Why: s.Why, Status: statuses[i], Seconds: s.Took.Seconds()})
		}
		target.Modes = append(target.Modes, mode)
	}
	compareSustainable(target.Modes)
	return target, ctx.Err()
}

// searchUnits lists the searches of workload: each mode, and each commit
// interval of a mode that sweeps them.
func searchUnits(workload Workload) []searchUnit {
	var units []searchUnit
	for _, mode := range workload.Modes {
		spec, ok := modes.Lookup(mode)
		if !ok || !spec.SweepsCommitIntervals {
			units = append(units, searchUnit{name: mode, mode: mode})
			continue
		}
		for _, interval := range workload.Transaction.CommitIntervals {
			units = append(units, searchUnit{name: fmt.Sprintf("%s@%s", mode, interval), mode: mode, interval: interval})
		}
	}
	return units
}

// stepWorkload is the workload of one step of unit's search at rate,
// measured for duration: the unit's mode alone, no faults, a record budget
// above what rate sends in the step's time, so that the time bound ends it.
func stepWorkload(workload Workload, unit searchUnit, rate int, duration time.Duration) Workload {
	step := workload
	step.Name = workload.Name + " (find-max step)"
	step.Modes = []string{unit.mode}
	step.Faults = nil
	step.Rate = rate
	step.Duration = Duration(duration)
	if unit.interval > 0 {
		step.Transaction.CommitIntervals = []Duration{unit.interval}
	}
	seconds := time.Duration(step.Warmup + step.Duration).Seconds()
	step.Records = int64(math.Ceil(float64(rate)*seconds*1.1)) + int64(step.Producers)
	return step
}

// runStep runs one step: a Run of the step's workload; it returns the
// run and the target as the run described it. Its error is
// Run's (ctx ended, the target cannot be used) or an unsupported mode,
// which no rate changes.
func runStep(ctx context.Context, options Options, unit searchUnit, rate int, duration time.Duration) (*report.Run, report.Target, error) {
	options.Workload = stepWorkload(options.Workload, unit, rate, duration)
	options.Progress, options.RunID = nil, 0
	results, err := Run(ctx, options)
	if err != nil {
		return nil, report.Target{}, err
	}
	if len(results.Runs) != 1 {
		return nil, report.Target{}, fmt.Errorf("find-max step at %d records/s: %d runs, want 1", rate, len(results.Runs))
	}
	run := results.Runs[0]
	if run.Status == report.StatusUnsupported {
		return nil, report.Target{}, fmt.Errorf("%s is unsupported on this target: %s", unit.name, run.Reason)
	}
	return run, results.Target, nil
}

// measurementOf is what the search needs of a step's run, measured for
// duration after its warm-up. Its achieved rate is the records sent in
// those seconds and acknowledged, over duration: the run's own
// records/s counts the final flush too (a few milliseconds, which at 3 s
// would take up to half the 1 % tolerance). A producer that falls behind
// sends fewer records before the deadline (the pacer does not skip any),
// so the rate shows it. A run that did not pass cannot hold, whatever its
// rate.
func measurementOf(run *report.Run, duration time.Duration) findmax.Measurement {
	acked := run.Throughput.RecordsPerSecond * run.MeasuredSeconds
	m := findmax.Measurement{Achieved: acked / duration.Seconds()}
	if p99 := run.Latency[report.LatencyProduceAck].Percentile(99); p99 >= 0 {
		m.P99 = time.Duration(p99 * float64(time.Millisecond))
	}
	if run.Status != report.StatusPass {
		m.Failure = run.Status
		if why := run.Reason; why != "" {
			m.Failure += ": " + why
		} else if run.Expectation != nil && run.Expectation.Why != "" {
			m.Failure += ": " + run.Expectation.Why
		}
	}
	return m
}

// compareSustainable sets each search's ratio to the baseline mode's
// sustainable rate on the same target.
func compareSustainable(searched []report.FindMaxMode) {
	for _, baseline := range searched {
		if baseline.Mode != modes.Baseline() || baseline.SustainableRecordsPerSecond <= 0 {
			continue
		}
		for i := range searched {
			searched[i].RatioToBaseline = float64(searched[i].SustainableRecordsPerSecond) /
				float64(baseline.SustainableRecordsPerSecond)
		}
		return
	}
}
