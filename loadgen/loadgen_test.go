package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// smokeWorkload is the shipped smoke workload, shortened for tests:
// transactions of 100 records with a 30% abort share so every run has
// aborted transactions to check.
func smokeWorkload(t *testing.T) Workload {
	t.Helper()
	workload, err := LoadWorkload("smoke")
	if err != nil {
		t.Fatal(err)
	}
	workload.Records = 3000
	workload.Duration = Duration(5 * time.Second)
	workload.Transaction.CommitRecords = 100
	workload.Transaction.CommitIntervals = []Duration{Duration(time.Second)}
	workload.Transaction.AbortShare = 0.3
	return workload
}

func newKfakeTarget(t *testing.T, options ...kfake.Opt) Target {
	t.Helper()
	cluster, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, options...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	return &kfakeTarget{cluster: cluster}
}

// runSuite runs workload against target with a test deadline.
func runSuite(t *testing.T, target Target, workload Workload) *report.Results {
	t.Helper()
	return runSuiteWith(t, Options{Workload: workload, Target: target})
}

// runSuiteWith runs options with a test deadline.
func runSuiteWith(t *testing.T, options Options) *report.Results {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	results, err := Run(ctx, options)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return results
}

// assertSuiteVerdicts checks what every mode must show without faults: all
// sent records acknowledged, read back exactly once, in order, and aborted
// transactions invisible under read_committed but present under
// read_uncommitted.
func assertSuiteVerdicts(t *testing.T, results *report.Results) {
	t.Helper()
	if len(results.Runs) != len(AllModes) {
		t.Fatalf("%d runs, want %d", len(results.Runs), len(AllModes))
	}
	for _, run := range results.Runs {
		if run.Status != report.StatusPass {
			t.Errorf("%s: status %s: %s", run.Name, run.Status, run.Reason)
			continue
		}
		assertRunVerdict(t, run)
	}
	if !results.Passed {
		t.Error("results not passed")
	}
}

// assertRunVerdict checks one passed run of the smoke workload.
func assertRunVerdict(t *testing.T, run *report.Run) {
	t.Helper()
	{
		if run.Producers.Sent != 3000 || run.Producers.Acknowledged != 3000 {
			t.Errorf("%s: sent %d acknowledged %d, want 3000 each", run.Name, run.Producers.Sent, run.Producers.Acknowledged)
		}
		visible := run.Producers.Sent - run.Producers.Aborted
		var readBacks []report.Check
		for _, check := range run.Checks {
			counts := check.Counts
			if check.Reader == report.PollReader {
				// The consumers' polls: judged against a complete
				// read-back, nothing skipped, nothing gone back, no
				// offset read two ways.
				if !check.Complete || counts.Read == 0 || counts.PollSkips != 0 || counts.NonMonotonicPolls != 0 || counts.InconsistentOffsets != 0 {
					t.Errorf("%s polls of %s by %s: %+v complete=%v", run.Name, check.Topic, check.Consumers, counts, check.Complete)
				}
				continue
			}
			readBacks = append(readBacks, check)
			if counts.InconsistentOffsets != 0 || counts.NonMonotonicPolls != 0 || counts.PollSkips != 0 {
				t.Errorf("%s %s %s: %+v", run.Name, check.Reader, check.Topic, counts)
			}
			if !check.Complete || counts.Lost != 0 || counts.Duplicated != 0 || counts.Reordered != 0 || counts.Phantom != 0 {
				t.Errorf("%s %s %s: %+v complete=%v", run.Name, check.Reader, check.Topic, counts, check.Complete)
			}
			wantAborted := uint64(0)
			if check.Reader == "read_uncommitted" {
				wantAborted = run.Producers.Aborted
			}
			if counts.AbortedVisible != wantAborted || counts.Unique != visible+wantAborted {
				t.Errorf("%s %s: unique %d aborted-visible %d, want %d and %d", run.Name, check.Reader,
					counts.Unique, counts.AbortedVisible, visible+wantAborted, wantAborted)
			}
		}
		if run.Latency[report.LatencyProduceAck] == nil {
			t.Errorf("%s: no produce-ack latency recorded", run.Name)
		}
		switch run.Mode {
		case ModeTransactional:
			if run.Producers.Aborted == 0 || run.Transactions.Committed == 0 || len(readBacks) != 2 {
				t.Errorf("transactional: aborted %d committed txns %d read-backs %d: the test needs commits, aborts and both readers",
					run.Producers.Aborted, run.Transactions.Committed, len(readBacks))
			}
		case ModeEOSPipeline:
			if len(readBacks) != 2 || !strings.HasSuffix(readBacks[0].Topic, ".out") || run.Transactions.Committed == 0 {
				t.Errorf("eos-pipeline: checks %+v, committed txns %d", run.Checks, run.Transactions.Committed)
			}
			if len(run.Checks) != 4 {
				t.Errorf("eos-pipeline: %d checks, want the 2 read-backs and the polls of its workers and live consumers", len(run.Checks))
			}
		}
	}
}

// TestSuiteAgainstEmbeddedBroker runs the smoke suite against our broker:
// every mode it supports must pass the same checks as against kfake; the
// modes it does not support yet must be reported unsupported with a reason.
// The plain modes (no producer id needed) must be supported.
func TestSuiteAgainstEmbeddedBroker(t *testing.T) {
	t.Parallel()
	results := runSuite(t, newQuickGroupsEmbedded(t), smokeWorkload(t))
	for _, run := range results.Runs {
		switch {
		case run.Status == report.StatusPass:
			assertRunVerdict(t, run)
		case run.Status == report.StatusUnsupported && run.Reason != "" &&
			run.Mode != ModeAtMostOnce && run.Mode != ModeAtMostOnceAcks1 && run.Mode != ModeAtLeastOnce:
			t.Logf("%s: unsupported by the embedded broker: %s", run.Name, run.Reason)
		default:
			t.Errorf("%s: status %s: %s", run.Name, run.Status, run.Reason)
		}
	}
	if !results.Passed {
		t.Error("results not passed")
	}
}

func TestSuiteAgainstKfake(t *testing.T) {
	t.Parallel()
	results := runSuite(t, newKfakeTarget(t), smokeWorkload(t))
	assertSuiteVerdicts(t, results)
	var baseline float64
	for _, run := range results.Runs {
		if run.Mode == BaselineMode {
			baseline = run.Throughput.RatioToBaseline
		}
	}
	if baseline != 1 {
		t.Errorf("baseline ratio = %v, want 1", baseline)
	}
	var summary strings.Builder
	if err := report.WriteSummary(&summary, results); err != nil {
		t.Fatal(err)
	}
	for _, mode := range AllModes {
		if !strings.Contains(summary.String(), mode) {
			t.Errorf("summary lacks %s:\n%s", mode, summary.String())
		}
	}
	t.Log("\n" + summary.String())
	path, err := report.Write(t.TempDir(), results)
	if err != nil {
		t.Fatal(err)
	}
	read, err := report.Read(path)
	if err != nil || len(read.Runs) != len(results.Runs) || read.RunID != results.RunID {
		t.Fatalf("results round trip: %v", err)
	}
}

// TestUnsupportedModesAreReported runs against a kfake that advertises no
// InitProducerId and no transaction APIs: the modes that need them are
// reported unsupported, with the reason, and the others still pass.
func TestUnsupportedModesAreReported(t *testing.T) {
	t.Parallel()
	versions := kversion.Stable()
	for _, key := range []int16{22, 24, 25, 26, 28} { // InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit
		versions.SetMaxKeyVersion(key, -1)
	}
	workload := smokeWorkload(t)
	workload.Modes = []string{ModeAtLeastOnce, ModeIdempotent, ModeTransactional}
	workload.Records = 500
	results := runSuite(t, newKfakeTarget(t, kfake.MaxVersions(versions)), workload)
	want := map[string]string{ModeAtLeastOnce: report.StatusPass, ModeIdempotent: report.StatusUnsupported, ModeTransactional: report.StatusUnsupported}
	for _, run := range results.Runs {
		if run.Status != want[run.Mode] {
			t.Errorf("%s: status %s (%s), want %s", run.Name, run.Status, run.Reason, want[run.Mode])
		}
		if run.Status == report.StatusUnsupported && run.Reason == "" {
			t.Errorf("%s: unsupported without a reason", run.Name)
		}
	}
	for _, run := range results.Runs {
		t.Logf("%s: %s: %s", run.Name, run.Status, run.Reason)
	}
	if !results.Passed {
		t.Error("unsupported modes must not fail the suite")
	}
}

func TestPlanRunsExpandsTheCommitIntervalSweep(t *testing.T) {
	t.Parallel()
	workload, err := LoadWorkload("transactional-sweep")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	topics := map[string]bool{}
	plans, err := planRuns(workload, 0xabc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, plan := range plans {
		names = append(names, plan.name)
		if topics[plan.topic] {
			t.Errorf("topic %s planned twice", plan.topic)
		}
		topics[plan.topic] = true
	}
	want := "at-least-once transactional@1ms transactional@10ms transactional@100ms transactional@1s"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("runs = %s, want %s", got, want)
	}
}

// A plan longer than the workload's runs (leader-kill: kills at 6 s and
// 18 s, 5 s down each) lengthens its cells and their record budget, so the
// load lasts as long as the faults; the other cells keep the workload's.
func TestPlanDurationRaisesTheRecordBudget(t *testing.T) {
	t.Parallel()
	workload, err := LoadWorkload("standard")
	if err != nil {
		t.Fatal(err)
	}
	workload.Faults = []MatrixEntry{{Plan: "leader-kill", Modes: []string{ModeAtLeastOnce}}, {Plan: "none", Modes: []string{ModeAtLeastOnce}}}
	runs, err := planRuns(workload, 0xabc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range runs {
		seconds := time.Duration(run.workload.Warmup + run.workload.Duration).Seconds()
		switch run.name {
		case "at-least-once:leader-kill":
			if seconds < 28 || float64(run.workload.Records) < seconds*float64(workload.Rate) {
				t.Errorf("%s: %.0f s, %d records at %d/s: the budget ends the load before the plan", run.name, seconds, run.workload.Records, workload.Rate)
			}
		default:
			if run.workload.Records != workload.Records || run.workload.Duration != workload.Duration {
				t.Errorf("%s: %d records over %s, want the workload's %d over %s", run.name, run.workload.Records, run.workload.Duration,
					workload.Records, workload.Duration)
			}
		}
	}
}
