package loadgen

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/faults"
	"github.com/exactly-eos/exactly/loadgen/report"
	"github.com/exactly-eos/exactly/loadgen/verify"
)

// matrixWorkload is a short fault matrix: 2000 records/s for a few
// seconds per run.
func matrixWorkload(t *testing.T, entries ...MatrixEntry) Workload {
	t.Helper()
	workload, err := LoadWorkload("quick")
	if err != nil {
		t.Fatal(err)
	}
	workload.Duration = Duration(2 * time.Second)
	workload.Faults, workload.Overhead = entries, nil // the matrix only, not its cost rounds
	if err := workload.Validate(); err != nil {
		t.Fatal(err)
	}
	return workload
}

// runsByName indexes results by run name.
func runsByName(results *report.Results) map[string]*report.Run {
	out := map[string]*report.Run{}
	for _, run := range results.Runs {
		out[run.Name] = run
	}
	return out
}

func logMatrix(t *testing.T, results *report.Results) {
	t.Helper()
	var table strings.Builder
	if err := WriteMatrix(&table, results); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
}

// assertAckLossBites checks the must-show of the matrix: under ack-loss
// at-least-once duplicates (the fault acted) in the same run where
// idempotent shows none.
func assertAckLossBites(t *testing.T, runs map[string]*report.Run, idempotentRequired bool) {
	t.Helper()
	atLeastOnce, idempotent := runs["at-least-once:ack-loss"], runs["idempotent:ack-loss"]
	if atLeastOnce == nil || idempotent == nil {
		t.Fatalf("ack-loss runs missing: %v", runs)
	}
	if atLeastOnce.Status != report.StatusPass || observe(atLeastOnce).duplicated == 0 || atLeastOnce.FaultsFired == 0 {
		t.Errorf("at-least-once under ack-loss: %s (%s), %s", atLeastOnce.Status, atLeastOnce.Reason, atLeastOnce.Expectation.Observed)
	}
	if len(atLeastOnce.FaultEvents) != int(atLeastOnce.FaultsFired) || atLeastOnce.FaultEvents[0].Kind != string(faults.KindDropResponse) ||
		atLeastOnce.FaultEvents[0].ElapsedSeconds < 0 || atLeastOnce.LoadStartedAt.IsZero() {
		t.Errorf("fault events not recorded with times: %d events for %d fired, first %+v", len(atLeastOnce.FaultEvents),
			atLeastOnce.FaultsFired, atLeastOnce.FaultEvents)
	}
	switch {
	case idempotent.Status == report.StatusPass:
		if seen := observe(idempotent); seen.duplicated != 0 || seen.lost != 0 || idempotent.FaultsFired == 0 {
			t.Errorf("idempotent under ack-loss: %s", idempotent.Expectation.Observed)
		}
	case !idempotentRequired && idempotent.Status == report.StatusUnsupported:
		t.Logf("idempotent unsupported by this target: %s", idempotent.Reason)
	default:
		t.Errorf("idempotent under ack-loss: %s (%s)", idempotent.Status, idempotent.Reason)
	}
}

func TestMatrixAgainstKfake(t *testing.T) {
	t.Parallel()
	workload := matrixWorkload(t,
		MatrixEntry{Plan: "ack-loss", Modes: []string{ModeAtLeastOnce, ModeIdempotent}},
		MatrixEntry{Plan: "broker-restart", Modes: []string{ModeAtLeastOnce}},
		MatrixEntry{Plan: "zombie-producer", Modes: []string{ModeTransactional}, Duration: Duration(6 * time.Second)},
		MatrixEntry{Plan: "consumer-crash", Modes: []string{ModeEOSPipeline}, Duration: Duration(5 * time.Second)},
	)
	results := runMatrix(t, newKfakeTarget(t), workload)
	logMatrix(t, results)
	runs := runsByName(results)
	assertAckLossBites(t, runs, true)
	if run := runs["at-least-once:broker-restart"]; run.Status != report.StatusNotApplicable ||
		!strings.Contains(run.Reason, "needs a broker loadgen launched") {
		t.Errorf("broker-restart on kfake: %s (%s), want not-applicable", run.Status, run.Reason)
	}
	zombie := runs["transactional@100ms:zombie-producer"]
	if zombie.Status != report.StatusPass || !strings.Contains(zombie.Expectation.Observed, "zombie post-fence writes") ||
		zombie.FaultsFired != 1 || observe(zombie).abortedVisible != 0 {
		t.Errorf("zombie-producer: %s (%s) %s", zombie.Status, zombie.Reason, zombie.Expectation.Observed)
	}
	crash := runs["eos-pipeline:consumer-crash"]
	if crash.Status != report.StatusPass || crash.FaultEvents[0].Kind != string(faults.KindConsumerCrash) {
		t.Errorf("consumer-crash: %s (%s) %+v", crash.Status, crash.Reason, crash.FaultEvents)
	}
	if !results.Passed {
		t.Error("results not passed")
	}
}

// TestMatrixAgainstEmbeddedBroker runs ack-loss and a broker kill against
// our broker; the kill needs a broker subprocess, which the test binary
// plays (see TestMain). Idempotent must pass once the broker supports
// InitProducerId; until then it must say unsupported.
func TestMatrixAgainstEmbeddedBroker(t *testing.T) {
	t.Parallel()
	killSoon := filepath.Join(t.TempDir(), "kill-soon.yaml")
	plan := "name: kill-soon\nseed: 1\nprocesses:\n  - action: kill-restart\n    after: 1s\n    down: 300ms\n"
	if err := os.WriteFile(killSoon, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	workload := matrixWorkload(t,
		MatrixEntry{Plan: "ack-loss", Modes: []string{ModeAtLeastOnce, ModeIdempotent}},
		MatrixEntry{Plan: killSoon, Modes: []string{ModeAtLeastOnce}, Duration: Duration(3 * time.Second)},
	)
	target, err := StartTarget(t.Context(), TargetConfig{Kind: TargetEmbedded, DataDir: t.TempDir(),
		StartEmbedded: func(ctx context.Context, dataDir string) (Target, error) { return startEmbeddedWith(ctx, dataDir, nil) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Close() })
	results := runMatrix(t, target, workload)
	logMatrix(t, results)
	runs := runsByName(results)
	assertAckLossBites(t, runs, false)
	killed := runs["at-least-once:kill-soon"]
	counts := map[string]int{}
	for _, event := range killed.FaultEvents {
		counts[event.Kind]++
	}
	if killed.Status != report.StatusPass || counts[string(faults.KindKill)] != 1 || counts[string(faults.KindRestart)] != 1 ||
		observe(killed).lost != 0 || !strings.Contains(killed.ClientSettings["broker"], "subprocess") {
		t.Errorf("kill-restart: %s (%s), events %v, %s", killed.Status, killed.Reason, counts, killed.Expectation.Observed)
	}
}

func runMatrix(t *testing.T, target Target, workload Workload) *report.Results {
	t.Helper()
	results, err := Run(t.Context(), Options{Workload: workload, Target: target, Self: testSelf()})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return results
}

// A broken bound is a FAIL naming the offending records; a clean run whose
// fault never fired is untestable, not a pass.
func TestJudgeFailsAndUntestable(t *testing.T) {
	t.Parallel()
	ackLoss, err := faults.LoadPlan("ack-loss")
	if err != nil {
		t.Fatal(err)
	}
	duplicated := &report.Run{Name: "idempotent:ack-loss", Mode: ModeIdempotent, Producers: verify.LedgerTotals{Sent: 10, Acknowledged: 10},
		Checks: []report.Check{{Reader: "read_committed", Complete: true, Counts: verify.Counts{Duplicated: 2}}}}
	judgeRun(duplicated, ackLoss, evidence{faultsFired: 3, offenders: map[string][]string{
		"duplicated": {"producer 0 seq 7: partition 1 offset 3 and partition 1 offset 5"}}})
	if duplicated.Status != report.StatusFail || duplicated.Expectation.Verdict != report.StatusFail ||
		len(duplicated.Expectation.Offenders) != 1 || !strings.Contains(duplicated.Expectation.Offenders[0], "seq 7") {
		t.Errorf("duplicates under idempotence: %+v", duplicated.Expectation)
	}
	clean := &report.Run{Name: "at-least-once:ack-loss", Mode: ModeAtLeastOnce, Producers: verify.LedgerTotals{Sent: 10, Acknowledged: 10},
		Checks: []report.Check{{Reader: "read_committed", Complete: true}}}
	judgeRun(clean, ackLoss, evidence{faultsFired: 4})
	if clean.Status != report.StatusUntestable || !strings.Contains(clean.Reason, "0 duplicates") {
		t.Errorf("at-least-once without duplicates: %s (%s)", clean.Status, clean.Reason)
	}
	judgeRun(clean, ackLoss, evidence{})
	if clean.Status != report.StatusUntestable || !strings.Contains(clean.Reason, "no fault fired") {
		t.Errorf("no fault fired: %s (%s)", clean.Status, clean.Reason)
	}
	// Why the fault never acted, when the run knows, is in the reason.
	judgeRun(clean, ackLoss, evidence{loadErr: errors.New("slow-follower: find its broker: t/0 has no leader")})
	if clean.Status != report.StatusUntestable || !strings.Contains(clean.Reason, "no fault fired") ||
		!strings.Contains(clean.Reason, "find its broker: t/0 has no leader") {
		t.Errorf("no fault fired, with the action's error: %s (%s)", clean.Status, clean.Reason)
	}
	var table strings.Builder
	if err := WriteMatrix(&table, &report.Results{Runs: []*report.Run{duplicated, clean}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "FAIL idempotent:ack-loss") || !strings.Contains(table.String(), "seq 7") {
		t.Errorf("table lacks the FAIL row with its offender:\n%s", table.String())
	}
}

// The reasons of a verdict read as sentences: a pass under faults whose
// producers saw errors says the errors were expected and the bounds held;
// a FAIL says the guarantee broke and how.
func TestVerdictReasonsReadAsSentences(t *testing.T) {
	t.Parallel()
	ackLoss, err := faults.LoadPlan("ack-loss")
	if err != nil {
		t.Fatal(err)
	}
	gaveUp := &report.Run{Name: "at-most-once-acks1:ack-loss", Mode: ModeAtMostOnceAcks1, Producers: verify.LedgerTotals{Sent: 10, Acknowledged: 9},
		Checks: []report.Check{{Reader: "read_committed", Complete: true}}}
	judgeRun(gaveUp, ackLoss, evidence{faultsFired: 3, loadErr: errors.New("producer 0: record timed out")})
	if want := "errors expected under this fault; lost, duplicated and reordered records within the mode's bounds " +
		"(first error: producer 0: record timed out)"; gaveUp.Status != report.StatusPass || gaveUp.Reason != want {
		t.Errorf("pass under faults with errors: %s %q, want pass %q", gaveUp.Status, gaveUp.Reason, want)
	}
	broken := &report.Run{Name: "idempotent:ack-loss", Mode: ModeIdempotent, Producers: verify.LedgerTotals{Sent: 10, Acknowledged: 10},
		Checks: []report.Check{{Reader: "read_committed", Complete: true, Counts: verify.Counts{Duplicated: 2}}}}
	judgeRun(broken, ackLoss, evidence{faultsFired: 3})
	if want := "the mode broke its guarantee: 2 duplicated"; broken.Status != report.StatusFail || broken.Reason != want {
		t.Errorf("fail: %s %q, want %q", broken.Status, broken.Reason, want)
	}
}

// A cell that failed before its load (its topics could not be created,
// say) keeps that reason: it is not "nothing was acknowledged".
func TestJudgeKeepsTheSetupError(t *testing.T) {
	t.Parallel()
	brokerRestart, err := faults.LoadPlan("broker-restart")
	if err != nil {
		t.Fatal(err)
	}
	run := &report.Run{Name: "idempotent:broker-restart", Mode: ModeIdempotent}
	failRun(run, errors.New("create topic t: NOT_CONTROLLER"))
	judgeRun(run, brokerRestart, evidence{})
	if run.Status != report.StatusError || run.Reason != "create topic t: NOT_CONTROLLER" || run.Expectation.Why != run.Reason {
		t.Errorf("setup error judged %s %q (why %q)", run.Status, run.Reason, run.Expectation.Why)
	}
}
