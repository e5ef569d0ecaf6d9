package suite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/findmax"
	"github.com/exactly-eos/exactly/loadgen/modes"
)

// runMatrix runs a [Matrix]: the workload in one [loadgen.Run] on the
// first target (its cost rounds at fractions of a sustainable rate
// searched first when none is given), profiled when asked, then the
// tables and files.
func runMatrix(ctx context.Context, spec Spec) error {
	workload := spec.Workload
	target, err := loadgen.StartTarget(ctx, spec.Targets[0])
	if err != nil {
		return err
	}
	defer target.Close()
	if err := loadgen.Preflight(ctx, target, workload); err != nil {
		return err
	}
	if workload.Overhead.NeedsSustainableRate() {
		if err := resolveSustainableRate(ctx, spec, &workload, target); err != nil {
			return err
		}
	}
	options := spec.options(workload, target)
	options.RunID, options.FaultHooks = rand.Uint64(), spec.FaultHooks
	printer := spec.Output.printer()
	if printer != nil {
		options.Progress = printer
	}
	profileDir := filepath.Join("profiles", fmt.Sprintf("loadgen-%016x", options.RunID))
	stopProfile := func() {}
	if spec.Profile != nil {
		if stopProfile, err = spec.Profile(profileDir); err != nil {
			return err
		}
	}
	results, runErr := loadgen.Run(ctx, options)
	stopProfile() // before the dashboard, which links the profile's files
	if results == nil {
		return runErr
	}
	if _, err := spec.Output.writeResults(results, matrixTables, finish{printer: printer, interrupted: runErr != nil}); err != nil {
		return err
	}
	switch {
	case runErr != nil:
		return fmt.Errorf("interrupted: %w", runErr)
	case !results.Passed:
		return errors.New("at least one run failed its expectation (FAIL or ERROR above)")
	}
	return nil
}

// resolveSustainableRate gives an overhead workload with fractional loads
// (overhead.fractions) the rate they are fractions of: the given
// sustainable rate, else at-least-once's sustainable rate searched on
// target with the find-max workload's steps (fault-free), printed as it
// goes.
func resolveSustainableRate(ctx context.Context, spec Spec, workload *loadgen.Workload, target loadgen.Target) error {
	if spec.Search.SustainableRate > 0 {
		workload.Overhead.SustainableRate = spec.Search.SustainableRate
		workload.Overhead.SustainableSource = "--sustainable-rate"
		return nil
	}
	search, err := spec.Search.Load("find-max")
	if err != nil {
		return err
	}
	// The search runs the rounds' shape (partitions, record size,
	// producers, consumers) without faults, on at-least-once only.
	search.Modes, search.Faults, search.Overhead = []string{modes.Baseline()}, nil, nil
	search.Partitions, search.RecordSize, search.Producers = workload.Partitions, workload.RecordSize, workload.Producers
	search.Consumers, search.ReplicationFactor, search.Keys = workload.Consumers, workload.ReplicationFactor, workload.Keys
	if err := search.Validate(); err != nil {
		return fmt.Errorf("workload %s: %w", search.Name, err)
	}
	progress := spec.Output.steps()
	fmt.Fprintf(progress, "searching %s's sustainable rate for the rounds at %v of it (--sustainable-rate skips this)\n",
		modes.Baseline(), workload.Overhead.Fractions)
	searched, err := loadgen.FindMax(ctx, loadgen.FindMaxOptions{
		Options: loadgen.Options{Workload: search, Target: target, Self: spec.Self, Database: spec.Database, Metrics: spec.Metrics, Workers: spec.Workers},
		Search:  spec.Search.Config, ConfirmDuration: spec.Search.Confirm,
		Observe: func(name string, step findmax.Step) {
			verdict := "held"
			if !step.Held {
				verdict = "failed: " + step.Why
			}
			fmt.Fprintf(progress, "  %s: %d rec/s offered, %.0f achieved: %s\n", name, step.Target, step.Achieved, verdict)
		}})
	if err != nil {
		return fmt.Errorf("search %s's sustainable rate: %w", modes.Baseline(), err)
	}
	rate := baselineRate(searched)
	if rate <= 0 {
		return fmt.Errorf("search %s's sustainable rate: no rate held; give one with --sustainable-rate", modes.Baseline())
	}
	workload.Overhead.SustainableRate = rate
	workload.Overhead.SustainableSource = fmt.Sprintf("find-max on %s", target.Kind())
	fmt.Fprintf(progress, "%s sustains %d records/s: the rounds run at %v of it\n", modes.Baseline(), rate, workload.Overhead.Fractions)
	return nil
}
