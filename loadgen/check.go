package loadgen

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// readerSpec is one verification read of a run.
type readerSpec struct {
	topic     string
	isolation verify.Isolation
	stage     uint8
}

// readersFor lists a plan's verification reads: read_committed of the
// topic every mode; read_uncommitted too for the transactional mode (aborted
// records must be there, and counted, but not lost); for the pipeline, the
// output (stage 1) and the input it consumed.
func readersFor(plan runPlan) []readerSpec {
	switch plan.mode {
	case ModeTransactional:
		return []readerSpec{{plan.topic, verify.ReadCommitted, 0}, {plan.topic, verify.ReadUncommitted, 0}}
	case ModeEOSPipeline:
		return []readerSpec{{plan.outputTopic, verify.ReadCommitted, 1}, {plan.topic, verify.ReadCommitted, 0}}
	}
	return []readerSpec{{plan.topic, verify.ReadCommitted, 0}}
}

// verifyRun reads back the run's topics and records each checker verdict.
// Each read is bounded by the workload's drain time.
func verifyRun(ctx context.Context, admin *kgo.Client, plan runPlan, ledger *verify.Ledger, run *report.Run) {
	for _, reader := range readersFor(plan) {
		readCtx, cancel := context.WithTimeout(ctx, time.Duration(plan.workload.Drain))
		checker := verify.NewChecker(ledger, reader.isolation, reader.stage)
		complete, err := readBack(readCtx, admin, plan.bootstrap, reader.topic, plan.workload.Partitions, reader.isolation, checker)
		cancel()
		check := report.Check{Reader: reader.isolation.String(), Topic: reader.topic, Complete: complete, Counts: checker.Finish()}
		check.Violations = check.Counts.Violations(reader.isolation)
		if err != nil {
			check.Violations = append(check.Violations, "read back failed: "+err.Error())
		} else if !complete {
			check.Violations = append(check.Violations, fmt.Sprintf("read back incomplete within %s", plan.workload.Drain))
		}
		if check.Violations == nil {
			check.Violations = []string{}
		}
		run.Checks = append(run.Checks, check)
	}
}

// judge sets the run's status. Without faults every mode must show no
// loss, no duplicates, no reordering, no phantoms, and no aborted record
// under read_committed; a run that acknowledged nothing, could not read
// back, or whose load failed is an error rather than a pass.
func judge(run *report.Run, runErr error) {
	var violations []string
	for _, check := range run.Checks {
		for _, violation := range check.Violations {
			violations = append(violations, fmt.Sprintf("%s %s: %s", check.Reader, check.Topic, violation))
		}
	}
	switch {
	case len(violations) > 0:
		run.Status, run.Reason = report.StatusFail, fmt.Sprint(violations)
	case runErr != nil:
		run.Status, run.Reason = report.StatusError, runErr.Error()
	case run.Producers.Acknowledged == 0:
		run.Status, run.Reason = report.StatusError, "no record was acknowledged"
	default:
		run.Status = report.StatusPass
	}
	if runErr != nil && run.Status == report.StatusFail {
		run.Reason += "; load: " + runErr.Error()
	}
}
