package loadgen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/exactly-eos/exactly/loadgen/appdb"
	"github.com/exactly-eos/exactly/loadgen/modes"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/stages"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// readerSpec is one verification read of a run.
type readerSpec struct {
	topic     string
	isolation verify.Isolation
	stage     uint8
	// informational reads are not judged: a dedup stage's input, whose
	// duplicates are what the consumer must drop, is only counted.
	informational bool
}

// readersFor lists a plan's verification reads: for a run whose consume
// stage writes a topic (a transact stage, a relay), each stage's output and
// the input (see stageReaders); else the mode's Readers of the topic
// (read_committed when it names none).
func readersFor(plan runPlan) []readerSpec {
	if plan.outputTopic != "" {
		return plan.stageReaders()
	}
	var readers []readerSpec
	for _, reader := range plan.spec().Readers {
		readers = append(readers, readerSpec{plan.topic, reader.Isolation, 0, reader.Informational})
	}
	if len(readers) == 0 {
		readers = []readerSpec{{plan.topic, verify.ReadCommitted, 0, false}}
	}
	return readers
}

// pendingCheck is a check whose violations wait until every reader of the
// run has read: inconsistent offsets are only known then.
type pendingCheck struct {
	report.Check
	isolation verify.Isolation
	// observations and observer say what the check read, for its
	// inconsistent offsets (nil: it read nothing of a topic).
	observations *verify.OffsetObservations
	observer     verify.Observer
	// notes are violations besides the counts' (a failed read).
	notes []string
	// label prefixes the check's offending records.
	label string
}

// readEnd is how far one read-back read a topic: the reference against
// which consumers of the topic with its isolation level are judged.
type readEnd struct {
	observer verify.Observer
	ends     map[int32]int64
	complete bool
}

type readKey struct {
	topic     string
	isolation verify.Isolation
}

// verifyRun reads back the run's topics, records each checker verdict and
// returns a few offending records per kind (see verify.OffenderSampler). Each read
// is bounded by the workload's drain time. After the read-backs it judges
// the polls of the run's consumers against them (one check per kind of
// consumer and topic, see verifyPolls), then counts every check's
// inconsistent offsets: an offset is inconsistent once any two reads of
// the run disagree on it.
func verifyRun(ctx context.Context, admin *kgo.Client, plan runPlan, ledger *verify.Ledger, logs []*verify.TrackedLog, run *report.Run) map[string][]string {
	offenders := make(map[string][]string)
	observations := plan.observations
	if observations == nil {
		observations = newRunObservations()
	}
	if plan.spec().Road == modes.ApplicationRoad {
		run.Application = &report.ApplicationRun{Database: plan.database}
		if plan.spec().Stage == modes.DedupStage {
			run.Application.DedupWindowOffsets = plan.workload.Application.DedupWindow
		}
	}
	var checks []*pendingCheck
	if usesDatabase(plan.mode) {
		checks = append(checks, verifyTable(ctx, plan, ledger, logs, run, observations, offenders))
	}
	if plan.shareLog != nil {
		checks = append(checks, verifyShare(plan, ledger, run, offenders))
	}
	references := make(map[readKey]readEnd)
	for _, reader := range readersFor(plan) {
		check, reference := verifyRead(ctx, admin, plan, ledger, logs, reader, observations, offenders)
		references[readKey{reader.topic, reader.isolation}] = reference
		if reader.informational {
			run.Application.InputDuplicates = check.Counts.Duplicated
			continue
		}
		checks = append(checks, check)
	}
	checks = append(checks, verifyPolls(observations, references, offenders)...)
	for _, check := range checks {
		if check.observations != nil {
			check.Counts.InconsistentOffsets = check.observations.Inconsistent(check.observer)
			for _, inconsistency := range check.observations.Inconsistencies(check.observer, verify.MaxOffenders) {
				offenders[verify.OffenderInconsistent] = append(offenders[verify.OffenderInconsistent], check.label+": "+inconsistency.String())
			}
		}
		check.Violations = append(check.Counts.Violations(check.isolation), check.notes...)
		if check.Violations == nil {
			check.Violations = []string{}
		}
		run.Checks = append(run.Checks, check.Check)
	}
	return offenders
}

// verifyRead reads back one topic for reader: the checker's counts, the
// read-back's own polls (a read_uncommitted read keeping control records
// must return every offset; any read must only move forward), and the
// reference it leaves for the topic's consumers.
func verifyRead(ctx context.Context, admin *kgo.Client, plan runPlan, ledger *verify.Ledger, logs []*verify.TrackedLog, reader readerSpec,
	observations *runObservations, offenders map[string][]string) (*pendingCheck, readEnd) {
	readCtx, cancel := context.WithTimeout(ctx, time.Duration(plan.workload.Drain))
	defer cancel()
	topic := observations.topic(reader.topic)
	observer := topic.Observer(reader.isolation.String())
	tracker := verify.NewPollTracker("read-back "+reader.isolation.String(), topic, observer)
	checker := verify.NewChecker(ledger, reader.isolation, reader.stage)
	sampler := verify.NewOffenderSampler(logs, ledger, verify.SamplerSpec{Topic: reader.topic, InputTopic: plan.topic,
		Stage: reader.stage, Isolation: reader.isolation, Checker: checker})
	ends, complete, err := readBack(readCtx, admin, plan.targetOptions(), reader.topic, plan.workload.Partitions, reader.isolation, tracker,
		func(record *kgo.Record) {
			read := readOf(record)
			checker.Observe(read.Partition, read.Offset, read.Value)
			sampler.Observe(read)
		})
	check := &pendingCheck{Check: report.Check{Reader: reader.isolation.String(), Topic: reader.topic, Complete: complete,
		Counts: checker.Finish()}, isolation: reader.isolation, observations: topic, observer: observer}
	check.label = check.Reader + " " + check.Topic
	var skipReference verify.SkipReference // read_committed: a skipped committed record is a lost write
	if reader.isolation == verify.ReadUncommitted {
		skipReference = verify.EveryOffset(ends)
	}
	polls := verify.JudgePolls([]*verify.PollTracker{tracker}, skipReference)
	check.Counts.PollSkips, check.Counts.NonMonotonicPolls = polls.Skips, polls.NonMonotonic
	notePollAnomalies(offenders, check.label, polls)
	var open *openTransactionsError
	if errors.As(err, &open) {
		check.notes = append(check.notes, "read back stopped at the last stable offsets: "+err.Error())
	} else if err != nil {
		check.notes = append(check.notes, "read back failed: "+err.Error())
	} else if !complete {
		check.notes = append(check.notes, fmt.Sprintf("read back incomplete within %s", plan.workload.Drain))
	}
	for kind, examples := range sampler.Finish() {
		for _, example := range examples {
			offenders[kind] = append(offenders[kind], check.Reader+": "+example)
		}
	}
	return check, readEnd{observer: observer, ends: ends, complete: complete && err == nil}
}

// verifyPolls judges the polls of the run's consumers, one check per kind
// of consumer and topic, against the read-back of the topic with the
// consumers' isolation level (read_committed when there is none: the
// topics consumers read with read_uncommitted have no transactions). A
// check is complete when its reference read was; without a reference,
// skips are not judged (only moves back) and the check is not complete.
// Read_committed consumers also count, as aborted_visible, the records
// they polled at offsets the read_committed read-back did not return.
func verifyPolls(observations *runObservations, references map[readKey]readEnd, offenders map[string][]string) []*pendingCheck {
	var checks []*pendingCheck
	for _, group := range observations.pollGroups() {
		reference, found := references[readKey{group.topic, group.isolation}]
		if !found {
			reference, found = references[readKey{group.topic, verify.ReadCommitted}]
		}
		var skipReference verify.SkipReference
		if found && reference.complete {
			skipReference = group.observations.Reference(reference.observer, reference.ends)
		}
		polls := group.judge(skipReference)
		check := &pendingCheck{Check: report.Check{Reader: report.PollReader, Topic: group.topic, Consumers: group.kind,
			Complete: skipReference != nil,
			Counts: verify.Counts{Read: polls.Polled, Unique: group.observations.Distinct(group.observer),
				PollSkips: polls.Skips, NonMonotonicPolls: polls.NonMonotonic}},
			isolation: group.isolation, observations: group.observations, observer: group.observer, label: group.kind + " " + group.topic}
		notePollAnomalies(offenders, check.label, polls)
		if skipReference != nil && group.isolation == verify.ReadCommitted {
			// Read_committed consumers and read-back return the same
			// records: one polled at an offset the read-back did not
			// return belongs to an aborted (or never committed)
			// transaction.
			var unreturned []verify.OffsetRead
			check.Counts.AbortedVisible, unreturned = group.observations.Unreturned(group.observer, reference.observer, reference.ends, verify.MaxOffenders)
			for _, read := range unreturned {
				offenders[verify.OffenderAbortedVisible] = append(offenders[verify.OffenderAbortedVisible], fmt.Sprintf(
					"%s: polled topic %s partition %d offset %d (%s), which the read_committed read-back did not return",
					check.label, group.topic, read.Partition, read.Offset, read.Record))
			}
		}
		checks = append(checks, check)
	}
	return checks
}

// readOf is what a read needs of a fetched record.
func readOf(record *kgo.Record) verify.ReadRecord {
	return verify.ReadRecord{Partition: record.Partition, Offset: record.Offset, Value: record.Value,
		Writer: verify.Writer{ProducerID: record.ProducerID, ProducerEpoch: record.ProducerEpoch}}
}

// notePollAnomalies adds a verdict's poll skips and moves back to the
// offenders.
func notePollAnomalies(offenders map[string][]string, label string, polls verify.PollVerdict) {
	for _, anomaly := range polls.Anomalies {
		kind := verify.OffenderPollSkip
		if anomaly.Backwards() {
			kind = verify.OffenderNonMonotonic
		}
		if len(offenders[kind]) < verify.MaxOffenders {
			offenders[kind] = append(offenders[kind], label+": "+anomaly.String())
		}
	}
}

// TableReader is the Check.Reader of a read of an application database
// table.
const TableReader = "table"

// tableReader names the output table in the input topic's observations:
// each row names the input offset it came from.
const tableReader = "table rows"

// verifyTable reads the run's output rows from the application database
// and checks them like a topic read: each row stands for the input record
// it came from, and is a read of the input offset it names. For a dedup
// stage, an extra copy whose first copy had left the window when it
// arrived is counted unprotected, not duplicated.
func verifyTable(ctx context.Context, plan runPlan, ledger *verify.Ledger, logs []*verify.TrackedLog, run *report.Run,
	observations *runObservations, offenders map[string][]string) *pendingCheck {
	readCtx, cancel := context.WithTimeout(ctx, time.Duration(plan.workload.Drain))
	defer cancel()
	checker := verify.NewChecker(ledger, verify.ReadCommitted, 1)
	table := fmt.Sprintf("exactly_output where run = %s", plan.topic)
	sampler := verify.NewOffenderSampler(logs, ledger, verify.SamplerSpec{Topic: table, InputTopic: plan.topic, Stage: 1,
		Isolation: verify.ReadCommitted, Checker: checker})
	input := observations.topic(plan.topic)
	observer := input.Observer(tableReader)
	unprotected := newUnprotectedCounter()
	err := plan.appDB.ReadOutput(readCtx, plan.topic, func(row appdb.Row) {
		value := verify.NewValue(verify.Header{RunID: plan.runID, Producer: row.Producer, Sequence: row.Seq,
			SendTime: row.SendTime, Stage: 1}, verify.HeaderSize)
		checker.Observe(row.Partition, row.Offset, value)
		sampler.Observe(verify.ReadRecord{Partition: row.Partition, Offset: row.Offset, Value: value, Writer: verify.Writer{ProducerID: -1}})
		input.Observe(observer, row.Partition, row.Offset, verify.NewRecordID(row.Producer, row.Seq))
		unprotected.observe(row)
	})
	run.Application.Table = table + " (" + plan.database + ")"
	check := &pendingCheck{Check: report.Check{Reader: TableReader, Topic: table, Complete: err == nil, Counts: checker.Finish()},
		isolation: verify.ReadCommitted, observations: input, observer: observer, label: "table"}
	check.Counts.Unprotected = unprotected.count
	check.Counts.Duplicated -= min(unprotected.count, check.Counts.Duplicated)
	run.Application.Unprotected = unprotected.count
	if err != nil {
		check.notes = append(check.notes, "read back failed: "+err.Error())
	}
	for kind, examples := range sampler.Finish() {
		for _, example := range examples {
			offenders[kind] = append(offenders[kind], "table: "+example)
		}
	}
	return check
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

func (u *unprotectedCounter) observe(row appdb.Row) {
	key := [2]uint64{uint64(row.Producer), row.Seq}
	first, seen := u.firstOffset[key]
	if !seen {
		u.firstOffset[key] = row.Offset
		return
	}
	if row.WindowFloor >= 0 && first < row.WindowFloor {
		u.count++
	}
}

// fillApplication copies the run's application counters into its
// results.
func fillApplication(s *stages.Stats, application *report.ApplicationRun) {
	application.DroppedDuplicates = s.Dropped.Load()
	application.DatabaseCommits = s.DatabaseCommits.Load()
	application.Seeks = s.Seeks.Load()
	application.OffsetConflicts = s.Conflicts.Load()
	application.Recoveries = s.Recoveries.Load()
	application.FoundWritten = s.FoundWritten.Load()
	application.Resent = s.Resent.Load()
	application.WriterCopies = s.WriterCopies.Load()
}
