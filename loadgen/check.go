package loadgen

import (
	"context"
	"fmt"
	"slices"
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
	// informational reads are not judged: consumer-dedup's input, whose
	// duplicates are what the consumer must drop, is only counted.
	informational bool
}

// readersFor lists a plan's verification reads: read_committed of the
// topic every mode; read_uncommitted too for the transactional mode (aborted
// records must be there, and counted, but not lost); for the pipeline, the
// output (stage 1) and the input it consumed.
func readersFor(plan runPlan) []readerSpec {
	switch plan.mode {
	case ModeTransactional:
		return []readerSpec{{plan.topic, verify.ReadCommitted, 0, false}, {plan.topic, verify.ReadUncommitted, 0, false}}
	case ModeEOSPipeline:
		return []readerSpec{{plan.outputTopic, verify.ReadCommitted, 1, false}, {plan.topic, verify.ReadCommitted, 0, false}}
	case ModeConsumerDedup:
		return []readerSpec{{plan.topic, verify.ReadCommitted, 0, true}}
	}
	return []readerSpec{{plan.topic, verify.ReadCommitted, 0, false}}
}

// verifyRun reads back the run's topics, records each checker verdict and
// returns a few offending records per kind (see offenderSampler). Each read
// is bounded by the workload's drain time.
func verifyRun(ctx context.Context, admin *kgo.Client, plan runPlan, ledger *verify.Ledger, logs []*trackedLog, run *report.Run) map[string][]string {
	offenders := make(map[string][]string)
	if slices.Contains(ApplicationModes, plan.mode) {
		run.Application = &report.ApplicationRun{Database: plan.database}
		if plan.mode == ModeConsumerDedup {
			run.Application.DedupWindowOffsets = plan.workload.Application.DedupWindow
		}
	}
	if usesDatabase(plan.mode) {
		verifyTable(ctx, plan, ledger, logs, run, offenders)
	}
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
		if reader.informational {
			run.Application.InputDuplicates = check.Counts.Duplicated
			continue
		}
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

// TableReader is the Check.Reader of a read of an application database
// table.
const TableReader = "table"

// verifyTable reads the run's output rows from the application database
// and checks them like a topic read: each row stands for the input record
// it came from. For consumer-dedup, an extra copy whose first copy had
// left the window when it arrived is counted unprotected, not duplicated.
func verifyTable(ctx context.Context, plan runPlan, ledger *verify.Ledger, logs []*trackedLog, run *report.Run, offenders map[string][]string) {
	readCtx, cancel := context.WithTimeout(ctx, time.Duration(plan.workload.Drain))
	defer cancel()
	checker := verify.NewChecker(ledger, verify.ReadCommitted, 1)
	sampler := newOffenderSampler(logs, plan.runID, 1, verify.ReadCommitted)
	unprotected := newUnprotectedCounter()
	err := plan.appDB.readOutput(readCtx, plan.topic, func(row outputRow) {
		value := verify.NewValue(verify.Header{RunID: plan.runID, Producer: row.producer, Sequence: row.seq,
			SendTime: row.sendTime, Stage: 1}, verify.HeaderSize)
		checker.Observe(row.partition, value)
		sampler.observe(row.partition, row.offset, value)
		unprotected.observe(row)
	})
	table := fmt.Sprintf("exactly_output where run = %s", plan.topic)
	run.Application.Table = table + " (" + plan.database + ")"
	check := report.Check{Reader: TableReader, Topic: table, Complete: err == nil, Counts: checker.Finish()}
	check.Counts.Unprotected = unprotected.count
	check.Counts.Duplicated -= min(unprotected.count, check.Counts.Duplicated)
	run.Application.Unprotected = unprotected.count
	check.Violations = check.Counts.Violations(verify.ReadCommitted)
	if err != nil {
		check.Violations = append(check.Violations, "read back failed: "+err.Error())
	}
	if check.Violations == nil {
		check.Violations = []string{}
	}
	run.Checks = append(run.Checks, check)
	for kind, examples := range sampler.finish() {
		for _, example := range examples {
			offenders[kind] = append(offenders[kind], "table: "+example)
		}
	}
}

// unprotectedCounter finds, among a table's rows (in insertion order
// within a partition), the extra copies whose first copy sat below the
// dedup window's floor when the copy was written: the window no longer
// held its key, so it could not be caught. Rows without a window (floor
// -1) are never unprotected.
type unprotectedCounter struct {
	firstOffset map[[2]uint64]int64
	count       uint64
}

func newUnprotectedCounter() *unprotectedCounter {
	return &unprotectedCounter{firstOffset: make(map[[2]uint64]int64)}
}

func (u *unprotectedCounter) observe(row outputRow) {
	key := [2]uint64{uint64(row.producer), row.seq}
	first, seen := u.firstOffset[key]
	if !seen {
		u.firstOffset[key] = row.offset
		return
	}
	if row.windowFloor >= 0 && first < row.windowFloor {
		u.count++
	}
}

// fill copies the run's counters into its results.
func (s *applicationStats) fill(application *report.ApplicationRun) {
	application.DroppedDuplicates = s.dropped.Load()
	application.DatabaseCommits = s.databaseCommits.Load()
	application.Seeks = s.seeks.Load()
	application.OffsetConflicts = s.conflicts.Load()
	application.Recoveries = s.recoveries.Load()
	application.FoundWritten = s.foundWritten.Load()
	application.Resent = s.resent.Load()
	application.WriterCopies = s.writerCopies.Load()
}
