package loadgen

import (
	"strings"
	"testing"
	"time"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// applicationMatrix is the must-show of the application-level modes:
// the three of them under ack-loss, and external-offsets under a consumer
// crash (one worker dies right after a database commit, another inside a
// transaction).
func applicationMatrix(t *testing.T) Workload {
	t.Helper()
	return matrixWorkload(t,
		MatrixEntry{Plan: "ack-loss", Modes: ApplicationModes},
		MatrixEntry{Plan: "consumer-crash", Modes: []string{ModeExternalOffsets}, Duration: Duration(5 * time.Second)},
	)
}

// assertApplicationVerdicts checks what the application-level modes must
// show: single-writer-check 0 lost and 0 duplicated under ack-loss, with
// recoveries that found lost acknowledgements; consumer-dedup 0 lost and 0
// duplicated in its table although its input held copies; external-offsets
// every input record exactly once in its table, also across the crashes.
func assertApplicationVerdicts(t *testing.T, results *report.Results) {
	t.Helper()
	runs := runsByName(results)
	for _, name := range []string{"single-writer-check:ack-loss", "consumer-dedup:ack-loss", "external-offsets:ack-loss", "external-offsets:consumer-crash"} {
		run := runs[name]
		if run == nil {
			t.Fatalf("run %s missing", name)
		}
		seen := observe(run)
		if run.Status != report.StatusPass || seen.lost != 0 || seen.duplicated != 0 || run.Application == nil {
			t.Errorf("%s: %s (%s) %s", name, run.Status, run.Reason, run.Expectation.Observed)
			continue
		}
		if usesDatabase(run.Mode) {
			table := run.Checks[0]
			if table.Reader != TableReader || !table.Complete || table.Counts.Unique < run.Producers.Acknowledged {
				t.Errorf("%s: table check %+v, acknowledged %d", name, table, run.Producers.Acknowledged)
			}
		}
	}
	writer := runs["single-writer-check:ack-loss"].Application
	if writer.Recoveries == 0 || writer.FoundWritten == 0 || writer.WriterCopies != 0 {
		t.Errorf("single-writer-check under ack-loss: %s: the recoveries must find lost acknowledgements", writer.Describe())
	}
	dedup := runs["consumer-dedup:ack-loss"].Application
	if dedup.InputDuplicates == 0 || dedup.DroppedDuplicates < int64(dedup.InputDuplicates) || dedup.Unprotected != 0 {
		t.Errorf("consumer-dedup under ack-loss: %s: its input must hold copies, all dropped", dedup.Describe())
	}
	crash := runs["external-offsets:consumer-crash"]
	details := ""
	for _, event := range crash.FaultEvents {
		details += event.Detail + "\n"
	}
	if !strings.Contains(details, "right after committing") || crash.Application.Seeks < 2 {
		t.Errorf("external-offsets under consumer-crash: no crash after a database commit, or no seek after it:\n%s%s",
			details, crash.Application.Describe())
	}
}

func TestApplicationModesAgainstKfake(t *testing.T) {
	t.Parallel()
	results := runMatrix(t, newKfakeTarget(t), applicationMatrix(t))
	logMatrix(t, results)
	assertApplicationVerdicts(t, results)
}

// newQuickGroupsEmbedded starts the embedded broker without Kafka's
// initial rebalance delay, so each consume stage's group settles at once.
func newQuickGroupsEmbedded(t *testing.T) Target {
	t.Helper()
	target, err := startEmbeddedWith(t.Context(), t.TempDir(), map[string]string{"group.initial.rebalance.delay.ms": "0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Close() })
	return target
}

func TestApplicationModesAgainstEmbeddedBroker(t *testing.T) {
	t.Parallel()
	results := runMatrix(t, newQuickGroupsEmbedded(t), applicationMatrix(t))
	logMatrix(t, results)
	assertApplicationVerdicts(t, results)
}

// TestApplicationModesWithPostgres runs the database modes with their
// state in PostgreSQL (ci/postgres.sh starts the server in CI).
func TestApplicationModesWithPostgres(t *testing.T) {
	t.Parallel()
	url := postgresURL(t)
	workload := matrixWorkload(t, MatrixEntry{Plan: "ack-loss", Modes: []string{ModeConsumerDedup, ModeExternalOffsets}})
	results, err := Run(t.Context(), Options{Workload: workload, Target: newKfakeTarget(t), Self: testSelf(), Database: url})
	if err != nil {
		t.Fatal(err)
	}
	logMatrix(t, results)
	for _, run := range results.Runs {
		if run.Status != report.StatusPass || run.Application == nil || !strings.HasPrefix(run.Application.Database, "postgres") {
			t.Errorf("%s: %s (%s), database %+v", run.Name, run.Status, run.Reason, run.Application)
		}
	}
}
