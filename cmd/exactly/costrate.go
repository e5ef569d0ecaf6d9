package main

import (
	"context"
	"fmt"
	"io"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/findmax"
	"github.com/exactly-eos/exactly/loadgen/modes"
)

// resolveSustainableRate gives an overhead workload with fractional loads
// (overhead.fractions) the rate they are fractions of: --sustainable-rate
// when given, else at-least-once's sustainable rate searched on target
// with the find-max workload's steps (fault-free), printed as it goes.
func resolveSustainableRate(ctx context.Context, workload *loadgen.Workload, target loadgen.Target, self loadgen.SelfCommand,
	flags loadgenFlags, stdout io.Writer) error {
	if flags.findMax.sustainable > 0 {
		workload.Overhead.SustainableRate = flags.findMax.sustainable
		workload.Overhead.SustainableSource = "--sustainable-rate"
		return nil
	}
	search, err := fractionWorkloadOf(flags, "find-max")
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
	progress := stdout
	if flags.quiet || flags.jsonProgress {
		progress = io.Discard
	}
	fmt.Fprintf(progress, "searching %s's sustainable rate for the rounds at %v of it (--sustainable-rate skips this)\n",
		modes.Baseline(), workload.Overhead.Fractions)
	searched, err := loadgen.FindMax(ctx, loadgen.FindMaxOptions{
		Options: loadgen.Options{Workload: search, Target: target, Self: self, Database: flags.database, Metrics: flags.live},
		Search:  flags.findMax.config(), ConfirmDuration: flags.findMax.confirm,
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
