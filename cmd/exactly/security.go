package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/exactly-eos/exactly/loadgen"
	"github.com/exactly-eos/exactly/loadgen/clientsec"
	"github.com/exactly-eos/exactly/loadgen/progress"
	"github.com/exactly-eos/exactly/loadgen/report"
)

// runSecurity runs the security workload: every mode of workload over
// each security protocol of its security section — on the embedded
// broker's listeners, or over the one protocol of --security-protocol
// against --bootstrap — then the consume cost of each protocol; it prints
// each protocol's progress like a suite's, the summary and security
// tables, and writes the results file (its security section) and the
// dashboard.
func runSecurity(ctx context.Context, flags loadgenFlags, workload loadgen.Workload, stdout io.Writer) error {
	listeners, parent, stop, skipped, err := securityTargets(ctx, flags, *workload.Security)
	if err != nil {
		return err
	}
	defer stop()
	self, err := selfCommand()
	if err != nil {
		return err
	}
	results, err := newFindMaxResults(workload, parent)
	if err != nil {
		return err
	}
	spec := *workload.Security
	section := &report.Security{Reference: listeners[0].protocol, Rate: workload.Rate, Skipped: skipped}
	for _, listener := range listeners {
		if strings.HasPrefix(listener.protocol, "SASL_") {
			section.Mechanism = loadgen.TargetSecurity(listener.target).Config().Mechanism
		}
	}
	slots := securitySlots(listeners, spec.Rounds)
	rounds := max(spec.Rounds, 1)
	for _, slot := range slots {
		section.Protocols = append(section.Protocols, slot.protocol)
	}
	if rounds >= 2 {
		section.Rounds = rounds
	}
	for _, listener := range listeners {
		if err := loadgen.Preflight(ctx, listener.target, workload); err != nil {
			return fmt.Errorf("%s: %w", listener.protocol, err)
		}
	}
	var runErr error
	turn := 0
rounds:
	for round := 1; round <= rounds; round++ {
		for _, slot := range roundSlots(slots, round) {
			turn++
			if !flags.quiet && !flags.jsonProgress {
				fmt.Fprintf(stdout, "security: %s: %s\n", turnText(round, rounds, turn, len(slots), slot.protocol), slot.target.Description())
			}
			runs, err := runOverProtocol(ctx, flags, workload, slot, self, stdout)
			cellRound := 0 // one round: the cells carry no round, as before rounds existed
			if rounds >= 2 {
				cellRound = round
			}
			section.Cells = append(section.Cells, loadgen.SecurityCells(slot.protocol, cellRound, runs)...)
			for _, run := range runs {
				run.Name = run.Name + " over " + slot.protocol + roundSuffix(round, rounds)
			}
			results.Runs = append(results.Runs, runs...)
			if err != nil {
				runErr = err
				break rounds
			}
		}
	}
	if spec := workload.Security; runErr == nil && spec.ConsumeBytes > 0 {
		if !flags.quiet && !flags.jsonProgress {
			fmt.Fprintf(stdout, "security: consume cost, one consumer reading %d MiB over each protocol, %d passes\n", spec.ConsumeBytes>>20, spec.ConsumePasses)
		}
		var targets []loadgen.ConsumeTarget
		for _, listener := range slots {
			targets = append(targets, loadgen.ConsumeTarget{Protocol: listener.protocol, Target: listener.target, FetchPath: listener.fetchPath})
		}
		section.Consume = loadgen.MeasureConsumeCosts(ctx, targets, spec.ConsumeBytes, spec.ConsumePasses)
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
	return writeSecurityOutputs(stdout, flags, results, runErr)
}

// securitySlots are the listeners every round runs over: each listener,
// then, with two or more rounds, the first (the reference) once more as
// its A/A slot.
func securitySlots(listeners []securityListener, rounds int) []securityListener {
	slots := append([]securityListener{}, listeners...)
	if rounds >= 2 {
		aa := listeners[0]
		aa.protocol = loadgen.AAProtocol(aa.protocol)
		slots = append(slots, aa)
	}
	return slots
}

// roundSlots is the order in which round runs the slots
// (loadgen.RoundOrder).
func roundSlots(slots []securityListener, round int) []securityListener {
	names := make([]string, len(slots))
	byName := map[string]securityListener{}
	for i, slot := range slots {
		names[i] = slot.protocol
		byName[slot.protocol] = slot
	}
	ordered := make([]securityListener, 0, len(slots))
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

// runOverProtocol runs every mode of workload over one listener, with the
// progress of a suite, and returns its runs.
func runOverProtocol(ctx context.Context, flags loadgenFlags, workload loadgen.Workload, listener securityListener,
	self loadgen.SelfCommand, stdout io.Writer) ([]*report.Run, error) {
	options := loadgen.Options{Workload: workload, Target: listener.target, Self: self, Database: flags.database,
		Metrics: flags.live, BrokerMetrics: loadgen.BrokerMetricsURL(flags.brokerMetrics, listener.target)}
	printer := newProgressPrinter(stdout, flags)
	if printer != nil {
		options.Progress = printer
	}
	results, err := loadgen.Run(ctx, options)
	if results == nil {
		return nil, fmt.Errorf("%s: %w", listener.protocol, err)
	}
	if printer != nil {
		printer.SuiteFinished(progress.Outcome{Passed: results.Passed, Interrupted: err != nil})
	}
	return results.Runs, err
}

// securityTargets are the protocols the security workload runs over: the
// embedded broker's listeners, or the one of --security-protocol against
// --bootstrap (the others skipped, with why). The first target is the
// parent's (the results' header).
func securityTargets(ctx context.Context, flags loadgenFlags, spec loadgen.SecuritySpec) (listeners []securityListener, parent loadgen.Target,
	stop func() error, skipped map[string]string, err error) {
	switch {
	case flags.bootstrap != "":
		target, err := loadgen.StartTarget(ctx, loadgen.TargetConfig{Kind: loadgen.TargetBootstrap,
			Bootstrap: strings.Split(flags.bootstrap, ","), Security: flags.security})
		if err != nil {
			return nil, nil, nil, nil, err
		}
		protocol := flags.security.Protocol
		if protocol == "" {
			protocol = clientsec.Plaintext
		}
		skipped = map[string]string{}
		for _, other := range spec.Protocols {
			if other != protocol {
				skipped[other] = "against --bootstrap the workload runs over the --security-protocol given (" + protocol +
					"); run it once per listener of the cluster for the others"
			}
		}
		return []securityListener{{protocol: protocol, target: target}}, target, target.Close, skipped, nil
	case flags.target != loadgen.TargetEmbedded:
		return nil, nil, nil, nil, fmt.Errorf("--workload security runs on the embedded broker (its three listeners) or on --bootstrap, not on --target %s", flags.target)
	}
	listeners, parent, stop, err = startSecurityListeners(ctx, flags.dataDir, spec)
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

// writeSecurityOutputs prints the summary and security tables and writes
// the results file and its dashboard.
func writeSecurityOutputs(stdout io.Writer, flags loadgenFlags, results *report.Results, runErr error) error {
	tables := stdout
	if flags.jsonProgress {
		tables = io.Discard
	}
	if len(results.Runs) > 0 {
		if err := report.WriteSummaryWith(tables, results, report.SummaryOptions{Wide: flags.wide}); err != nil {
			return err
		}
	}
	if err := report.WriteSecurity(tables, results); err != nil {
		return err
	}
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
		line, _ := json.Marshal(map[string]any{"event": "security_finished", "passed": results.Passed,
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
		return errors.New("a run of the security workload failed its checks, or a consume cost could not be measured (see above)")
	}
	return nil
}
