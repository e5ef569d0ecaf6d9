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

// verifyRun reads back the run's topics, records each checker verdict and
// returns a few offending records per kind (see offenderSampler). Each read
// is bounded by the workload's drain time.
func verifyRun(ctx context.Context, admin *kgo.Client, plan runPlan, ledger *verify.Ledger, logs []*trackedLog, run *report.Run) map[string][]string {
	offenders := make(map[string][]string)
	for _, reader := range readersFor(plan) {
		readCtx, cancel := context.WithTimeout(ctx, time.Duration(plan.workload.Drain))
		checker := verify.NewChecker(ledger, reader.isolation, reader.stage)
		sampler := newOffenderSampler(logs, plan.runID, reader.stage, reader.isolation)
		observe := func(partition int32, offset int64, value []byte) {
			checker.Observe(partition, value)
			sampler.observe(partition, offset, value)
		}
		complete, err := readBack(readCtx, admin, plan.bootstrap, reader.topic, plan.workload.Partitions, reader.isolation, observe)
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
		for kind, examples := range sampler.finish() {
			for _, example := range examples {
				offenders[kind] = append(offenders[kind], check.Reader+" "+check.Topic+": "+example)
			}
		}
	}
	return offenders
}
