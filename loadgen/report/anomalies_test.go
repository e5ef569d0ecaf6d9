package report

import (
	"strings"
	"testing"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// TestDashboardShowsSharperAnomalies: lost writes, unseen records,
// inconsistent offsets, poll skips and non-monotonic polls have their
// columns; a polls check is its own row naming its consumers; lost writes
// and unseen records fall under the loss bound, the other three break
// every guarantee.
func TestDashboardShowsSharperAnomalies(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	atMostOnce, pipeline := results.Runs[0], results.Runs[5]
	// At-most-once under faults may lose: its lost writes and unseen
	// records are allowed, an inconsistent offset is not.
	atMostOnce.Name, atMostOnce.FaultPlan, atMostOnce.Status = "at-most-once:ack-loss", "ack-loss", StatusFail
	atMostOnce.Expectation = &Expectation{Expected: "lost any, dup = 0, reord any; faults must fire", Verdict: StatusFail}
	counts := &atMostOnce.Checks[0].Counts
	counts.Lost, counts.LostWrites, counts.Unseen, counts.InconsistentOffsets = 3, 2, 1, 4
	atMostOnce.Checks[0].Violations = counts.Violations(verify.ReadCommitted)
	// The pipeline's workers skipped 6 records and went back once.
	polls := Check{Reader: PollReader, Topic: "exactly.in", Consumers: "pipeline workers", Complete: true,
		Counts: verify.Counts{Read: 3000, Unique: 2994, PollSkips: 6, NonMonotonicPolls: 1, AbortedVisible: 2}}
	polls.Violations = polls.Counts.Violations(verify.ReadCommitted)
	pipeline.Checks, pipeline.Status = append(pipeline.Checks, polls), StatusFail
	page := renderFixtures(t, results)

	for _, column := range []string{"<th>lost writes</th>", "<th>unseen</th>", "<th>inconsistent offsets</th>", "<th>poll skips</th>", "<th>non-monotonic polls</th>"} {
		if !strings.Contains(page, column) {
			t.Errorf("checker table lacks %s", column)
		}
	}
	lossy := rowFor(t, page, "checks", `data-run="at-most-once:ack-loss"`)
	if !strings.Contains(lossy, `<td class="">2</td><td class="">1</td>`) || !strings.Contains(lossy, `<td class="violation">4</td>`) {
		t.Errorf("at-most-once: lost writes and unseen must be plain, inconsistent offsets red: %s", lossy)
	}
	if !strings.Contains(lossy, "<li>4 inconsistent offsets</li>") || strings.Contains(lossy, "acknowledged-but-lost") {
		t.Errorf("at-most-once: violations must list the inconsistent offsets only: %s", lossy)
	}
	row := rowFor(t, page, "checks", `data-run="eos-pipeline" data-file="A" data-reader="polls: pipeline workers"`)
	for _, want := range []string{`<td class="">3000</td>`, `<td class="violation">6</td>`, `<td class="violation">1</td>`,
		"<li>6 " + verify.ViolationPollSkips + "</li>", "<li>1 " + verify.ViolationNonMonotonicPolls + "</li>",
		"<li>2 " + verify.ViolationAbortedVisible + "</li>", `<td class="violation">2</td>`} {
		if !strings.Contains(row, want) {
			t.Errorf("polls row lacks %q: %s", want, row)
		}
	}
}

// TestSummaryShowsSharperAnomalies: the wide summary table has columns for
// inconsistent offsets and the consumers' poll skips and moves back, "-"
// for runs whose polls were not judged; aborted records polled by
// read_committed consumers count as aborted reads.
func TestSummaryShowsSharperAnomalies(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	results.Runs[5].Checks = append(results.Runs[5].Checks, Check{Reader: PollReader, Topic: "in", Consumers: "pipeline workers",
		Counts: verify.Counts{PollSkips: 6, NonMonotonicPolls: 2, InconsistentOffsets: 5, AbortedVisible: 3}})
	var summary strings.Builder
	if err := WriteSummaryWith(&summary, results, SummaryOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(summary.String(), "\n")
	if !strings.Contains(lines[1], "incons  poll-skip  poll-back") {
		t.Fatalf("header: %q", lines[1])
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case fields[0] == "eos-pipeline":
			if got := strings.Join(fields[len(fields)-5:], " "); got != "3 5 6 2 0" {
				t.Errorf("eos-pipeline: aborted-read (polled by read_committed workers), incons, poll-skip, poll-back, ambiguous = %q", got)
			}
		case fields[0] == "idempotent":
			if got := strings.Join(fields[len(fields)-4:], " "); got != "0 - - 0" {
				t.Errorf("idempotent (no consumers): %q", got)
			}
		}
	}
}

// The default summary sums those anomalies in its "other" column.
func TestNarrowSummarySumsOtherAnomalies(t *testing.T) {
	results := loadFixture(t, kfakeFixture)
	results.Runs[5].Checks = append(results.Runs[5].Checks, Check{Reader: PollReader, Topic: "in", Consumers: "pipeline workers",
		Counts: verify.Counts{PollSkips: 6, NonMonotonicPolls: 2, InconsistentOffsets: 5, AbortedVisible: 3}})
	var summary strings.Builder
	if err := WriteSummary(&summary, results); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(summary.String(), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && fields[0] == "eos-pipeline" {
			found = true
			if other := fields[len(fields)-1]; other != "16" {
				t.Errorf("eos-pipeline: other = %s, want 3+5+6+2 = 16: %q", other, line)
			}
		}
	}
	if !found {
		t.Errorf("no eos-pipeline row:\n%s", summary.String())
	}
}
