package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/progress"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// fractionWorkload is the workload --rate-fraction runs unless --workload
// names another (without --find-max, where --workload is the search's).
const fractionWorkload = "latency"

// parseFractions parses --rate-fraction: comma-separated fractions in (0, 1].
func parseFractions(text string) ([]float64, error) {
	if text == "" {
		return nil, nil
	}
	var fractions []float64
	for _, field := range strings.Split(text, ",") {
		fraction, err := strconv.ParseFloat(strings.TrimSpace(field), 64)
		if err != nil || fraction <= 0 || fraction > 1 {
			return nil, fmt.Errorf("--rate-fraction %s: must be fractions in (0, 1] (e.g. 0.5,0.8)", strings.TrimSpace(field))
		}
		fractions = append(fractions, fraction)
	}
	return fractions, nil
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

// runAtFractions runs workload on target once per fraction of rate (every
// mode at the same offered load), its runs renamed "<run> at <pct>%", and
// returns them with the section that says which rates they ran at. The
// progress of each fraction's runs is printed like a suite's.
func runAtFractions(ctx context.Context, target loadgen.Target, workload loadgen.Workload, flags loadgenFlags,
	rate int, source string, fractions []float64, stdout io.Writer) ([]*report.Run, *report.EqualLoad, error) {
	if rate <= 0 {
		return nil, nil, errors.New("--rate-fraction: at-least-once has no sustainable rate to take fractions of (search it with --find-max, or give --sustainable-rate)")
	}
	self, err := selfCommand()
	if err != nil {
		return nil, nil, err
	}
	load := &report.EqualLoad{BaselineRecordsPerSecond: rate, Source: source}
	var runs []*report.Run
	for _, fraction := range fractions {
		cellWorkload := workload
		cellWorkload.Rate = max(1, int(math.Round(fraction*float64(rate))))
		// The record bound must not end a run before its time bound does.
		cellWorkload.Records = max(cellWorkload.Records, int64(float64(cellWorkload.Rate)*timeSeconds(cellWorkload)*1.1))
		cell := report.EqualLoadCell{Fraction: fraction, RecordsPerSecond: cellWorkload.Rate}
		options := loadgen.Options{Workload: cellWorkload, Target: target, Self: self, Database: flags.database,
			Metrics: flags.live, BrokerMetrics: loadgen.BrokerMetricsURL(flags.brokerMetrics, target)}
		printer := newProgressPrinter(stdout, flags)
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

// fractionWorkloadOf loads the workload named name with the flags applied.
func fractionWorkloadOf(flags loadgenFlags, name string) (loadgen.Workload, error) {
	workload, err := loadgen.LoadWorkload(name)
	if err != nil {
		return loadgen.Workload{}, err
	}
	if err := flags.apply(&workload); err != nil {
		return loadgen.Workload{}, fmt.Errorf("workload %s: %w", workload.Name, err)
	}
	return workload, nil
}

// runFractions is --rate-fraction without --find-max: workload at fractions
// of --sustainable-rate on the target of --target or --bootstrap, with the
// summary tables, the results file and the dashboard of a suite.
func runFractions(ctx context.Context, flags loadgenFlags, workload loadgen.Workload, stdout io.Writer) error {
	fractions, err := parseFractions(flags.findMax.fractions)
	if err != nil {
		return err
	}
	return runFractionsOf(ctx, flags, workload, fractions, stdout)
}

// runEqualLoad runs a workload with an equal_load section (the latency
// workload) without a fixed --rate: every mode at each fraction of
// at-least-once's sustainable rate — --sustainable-rate's, or searched
// first with the section's search workload (its modes reduced to
// at-least-once) on the same target. --rate-fraction replaces the
// section's fractions.
func runEqualLoad(ctx context.Context, flags loadgenFlags, workload loadgen.Workload, stdout io.Writer) error {
	fractions := workload.EqualLoad.Fractions
	if flags.findMax.sustainable > 0 {
		return runFractionsOf(ctx, flags, workload, fractions, stdout)
	}
	search, err := fractionWorkloadOf(flags, workload.EqualLoad.SearchWorkload())
	if err != nil {
		return err
	}
	search.Modes, search.Faults = []string{modes.Baseline()}, nil
	if err := search.Validate(); err != nil {
		return fmt.Errorf("workload %s: %w", search.Name, err)
	}
	return runFindMaxThen(ctx, flags, search, workload, fractions, stdout)
}

// runFractionsOf runs workload at fractions of --sustainable-rate.
func runFractionsOf(ctx context.Context, flags loadgenFlags, workload loadgen.Workload, fractions []float64, stdout io.Writer) error {
	if flags.findMax.sustainable <= 0 {
		return errors.New("--rate-fraction needs --find-max, or at-least-once's sustainable rate in --sustainable-rate")
	}
	configs, err := flags.findMax.targetConfigs(flags)
	if err != nil {
		return err
	}
	target, err := loadgen.StartTarget(ctx, configs[0])
	if err != nil {
		return err
	}
	defer target.Close()
	if err := loadgen.Preflight(ctx, target, workload); err != nil {
		return err
	}
	results, err := newFindMaxResults(workload, target)
	if err != nil {
		return err
	}
	runs, load, runErr := runAtFractions(ctx, target, workload, flags, flags.findMax.sustainable, "--sustainable-rate", fractions, stdout)
	results.Runs, results.FindMax = runs, &report.FindMax{EqualLoad: load}
	results.FinishedAt = time.Now()
	results.Passed = len(runs) > 0 && runsPassed(runs)
	return writeFindMaxOutputs(stdout, flags, results, runErr)
}
