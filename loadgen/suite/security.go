package suite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/progress"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// runSecurity runs a [Security]: every mode of the workload over each
// security protocol of its security section — on the embedded broker's
// listeners, or over the one protocol of the first target's Security
// against an existing cluster — in interleaved rounds when it has more
// than one, then the consume cost of each protocol; it prints each
// protocol's progress like a suite's, the summary and security tables,
// and writes the results file (its security section) and the dashboard.
func runSecurity(ctx context.Context, spec Spec) error {
	workload := spec.Workload
	listeners, parent, stop, skipped, err := securityTargets(ctx, spec)
	if err != nil {
		return err
	}
	defer stop()
	results, err := newResults(workload, parent)
	if err != nil {
		return err
	}
	section := &report.Security{Reference: listeners[0].Protocol, Rate: workload.Rate, Skipped: skipped}
	for _, listener := range listeners {
		if strings.HasPrefix(listener.Protocol, "SASL_") {
			section.Mechanism = loadgen.TargetSecurity(listener.Target).Config().Mechanism
		}
	}
	slots := securitySlots(listeners, workload.Security.Rounds)
	rounds := max(workload.Security.Rounds, 1)
	for _, slot := range slots {
		section.Protocols = append(section.Protocols, slot.Protocol)
	}
	if rounds >= 2 {
		section.Rounds = rounds
	}
	for _, listener := range listeners {
		if err := loadgen.Preflight(ctx, listener.Target, workload); err != nil {
			return fmt.Errorf("%s: %w", listener.Protocol, err)
		}
	}
	out := spec.Output
	var runErr error
	turn := 0
rounds:
	for round := 1; round <= rounds; round++ {
		for _, slot := range roundSlots(slots, round) {
			turn++
			if !out.Quiet && !out.JSONProgress {
				fmt.Fprintf(out.Stdout, "security: %s: %s\n", turnText(round, rounds, turn, len(slots), slot.Protocol), slot.Target.Description())
			}
			runs, err := runOverProtocol(ctx, spec, slot)
			cellRound := 0 // one round: the cells carry no round, as before rounds existed
			if rounds >= 2 {
				cellRound = round
			}
			section.Cells = append(section.Cells, loadgen.SecurityCells(slot.Protocol, cellRound, runs)...)
			for _, run := range runs {
				run.Name = run.Name + " over " + slot.Protocol + roundSuffix(round, rounds)
			}
			results.Runs = append(results.Runs, runs...)
			if err != nil {
				runErr = err
				break rounds
			}
		}
	}
	if security := workload.Security; runErr == nil && security.ConsumeBytes > 0 {
		if !out.Quiet && !out.JSONProgress {
			fmt.Fprintf(out.Stdout, "security: consume cost, one consumer reading %d MiB over each protocol, %d passes\n",
				security.ConsumeBytes>>20, security.ConsumePasses)
		}
		var targets []loadgen.ConsumeTarget
		for _, listener := range slots {
			targets = append(targets, loadgen.ConsumeTarget{Protocol: listener.Protocol, Target: listener.Target, FetchPath: listener.FetchPath})
		}
		section.Consume = loadgen.MeasureConsumeCosts(ctx, targets, security.ConsumeBytes, security.ConsumePasses)
		section.ConsumeNote = loadgen.ConsumeNote
		runErr = ctx.Err()
	}
	loadgen.FinishSecurity(section)
	for i := range section.Cells {
		cell := &section.Cells[i]
		cell.Run += " over " + cell.Protocol + roundSuffix(max(cell.Round, 1), rounds)
	}
	results.Security = section
	results.FinishedAt = time.Now()
	results.Passed = len(results.Runs) > 0 && runsPassed(results.Runs) && runErr == nil && consumeMeasured(section)
	if _, err := out.writeResults(results, securityTables, finish{event: "security_finished", interrupted: runErr != nil}); err != nil {
		return err
	}
	return verdict(runErr, results.Passed,
		"a run of the security workload failed its checks, or a consume cost could not be measured (see above)")
}

// securitySlots are the listeners every round runs over: each listener,
// then, with two or more rounds, the first (the reference) once more as
// its A/A slot.
func securitySlots(listeners []Listener, rounds int) []Listener {
	slots := append([]Listener{}, listeners...)
	if rounds >= 2 {
		aa := listeners[0]
		aa.Protocol = loadgen.AAProtocol(aa.Protocol)
		slots = append(slots, aa)
	}
	return slots
}

// roundSlots is the order in which round runs the slots
// ([loadgen.RoundOrder]).
func roundSlots(slots []Listener, round int) []Listener {
	names := make([]string, len(slots))
	byName := map[string]Listener{}
	for i, slot := range slots {
		names[i] = slot.Protocol
		byName[slot.Protocol] = slot
	}
	ordered := make([]Listener, 0, len(slots))
	for _, name := range loadgen.RoundOrder(names, round) {
		ordered = append(ordered, byName[name])
	}
	return ordered
}

// turnText says what runs next: "protocol 2 of 3, SSL" with one round,
// "round 2 of 3, SSL (6 of 12)" with more.
func turnText(round, rounds, turn, slots int, protocol string) string {
	if rounds < 2 {
		return fmt.Sprintf("protocol %d of %d, %s", turn, slots, protocol)
	}
	return fmt.Sprintf("round %d of %d, %s (%d of %d)", round, rounds, protocol, turn, rounds*slots)
}

// roundSuffix is what a run's name gets for its round (nothing with one
// round).
func roundSuffix(round, rounds int) string {
	if rounds < 2 {
		return ""
	}
	return fmt.Sprintf(" (round %d)", round)
}

// runOverProtocol runs every mode of the workload over one listener, with
// the progress of a suite, and returns its runs.
func runOverProtocol(ctx context.Context, spec Spec, listener Listener) ([]*report.Run, error) {
	options := spec.options(spec.Workload, listener.Target)
	printer := spec.Output.printer()
	if printer != nil {
		options.Progress = printer
	}
	results, err := loadgen.Run(ctx, options)
	if results == nil {
		return nil, fmt.Errorf("%s: %w", listener.Protocol, err)
	}
	if printer != nil {
		printer.SuiteFinished(progress.Outcome{Passed: results.Passed, Interrupted: err != nil})
	}
	return results.Runs, err
}

// securityTargets are the protocols the security workload runs over: the
// embedded broker's listeners, or the one of the first target's Security
// against its existing cluster (the others skipped, with why). The parent
// is the results' header.
func securityTargets(ctx context.Context, spec Spec) (listeners []Listener, parent loadgen.Target,
	stop func() error, skipped map[string]string, err error) {
	config, security := spec.Targets[0], *spec.Workload.Security
	switch {
	case config.Kind == loadgen.TargetBootstrap:
		target, err := loadgen.StartTarget(ctx, loadgen.TargetConfig{Kind: loadgen.TargetBootstrap,
			Bootstrap: config.Bootstrap, Security: config.Security})
		if err != nil {
			return nil, nil, nil, nil, err
		}
		protocol := config.Security.Protocol
		if protocol == "" {
			protocol = clientsec.Plaintext
		}
		skipped = map[string]string{}
		for _, other := range security.Protocols {
			if other != protocol {
				skipped[other] = "against --bootstrap the workload runs over the --security-protocol given (" + protocol +
					"); run it once per listener of the cluster for the others"
			}
		}
		return []Listener{{Protocol: protocol, Target: target}}, target, target.Close, skipped, nil
	case config.Kind != loadgen.TargetEmbedded:
		return nil, nil, nil, nil, fmt.Errorf("--workload security runs on the embedded broker (its three listeners) or on --bootstrap, not on --target %s", config.Kind)
	}
	listeners, parent, stop, err = spec.StartListeners(ctx, config.DataDir, security)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return listeners, parent, stop, nil, nil
}

// consumeMeasured reports whether every consume cost of section was
// measured (true when none was asked for).
func consumeMeasured(section *report.Security) bool {
	for _, cost := range section.Consume {
		if cost.Error != "" {
			return false
		}
	}
	return true
}
