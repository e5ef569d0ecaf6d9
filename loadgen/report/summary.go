package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteSummary prints one table row per run: throughput, ratio to the
// at-least-once baseline, produce-ack latency percentiles and maximum
// (from the scheduled send time at a fixed rate) with the uncorrected p99.9
// and maximum beside them ("-" unpaced), end-to-end latency percentiles,
// and the checker's counts (see checkTotals); then what the latencies count
// from, one line per run with a reason or transactions, then the verdict.
func WriteSummary(w io.Writer, results *Results) error {
	fmt.Fprintf(w, "exactly loadgen run %s against %s (%s)\n", results.RunID, results.Target.Kind, results.Target.Description)
	if shared := results.Target.SharesMachine; shared != nil && *shared {
		fmt.Fprintf(w, "  warning: client and broker on one machine (%d CPUs): %s; differences of a few percent between modes are not evidence\n",
			results.Machine.NumCPU, results.Target.Sharing)
	}
	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "run\tstatus\trecords/s\tMB/s\tvs base\tack p50 ms\tp99\tp99.9\tmax\tuncorr p99.9\tmax\te2e p50 ms\tp99\tsent\tacked\t"+
		"lost\tdup\treord\taborted-read\tincons\tpoll-skip\tpoll-back\tambiguous\t")
	for _, run := range results.Runs {
		produce, endToEnd := run.Latency[LatencyProduceAck], run.Latency[LatencyEndToEnd]
		uncorrected := run.Latency[LatencyProduceAckUncorrected]
		totals := checkTotals(run.Checks)
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t%s\t%d\t\n",
			run.Name, run.Status,
			number(run.Throughput.RecordsPerSecond, 0), number(run.Throughput.MegabytesPerSecond, 1),
			ratio(run.Throughput.RatioToBaseline),
			millis(produce.Percentile(50)), millis(produce.Percentile(99)), millis(produce.Percentile(99.9)), millis(produce.Percentile(100)),
			millis(uncorrected.Percentile(99.9)), millis(uncorrected.Percentile(100)),
			millis(endToEnd.Percentile(50)), millis(endToEnd.Percentile(99)),
			run.Producers.Sent, run.Producers.Acknowledged,
			totals.lost, totals.duplicated, totals.reordered, totals.abortedRead, totals.inconsistent,
			totals.pollSkips, totals.nonMonotonic, totals.ambiguous)
	}
	if err := table.Flush(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	writeLatencyOrigins(w, results.Runs)
	for _, run := range results.Runs {
		if run.Reason != "" {
			fmt.Fprintf(w, "  %s: %s: %s\n", run.Name, run.Status, run.Reason)
		}
		if commit := run.Latency[LatencyTransactionCommit]; commit != nil {
			what := "commits"
			if run.Application != nil {
				what = "database commits"
			}
			fmt.Fprintf(w, "  %s: %d %s, %d aborts; commit latency p50 %s ms, p99 %s ms\n", run.Name,
				run.Transactions.Committed, what, run.Transactions.Aborted, millis(commit.Percentile(50)), millis(commit.Percentile(99)))
		}
		if application := run.Application; application != nil {
			fmt.Fprintf(w, "  %s: %s\n", run.Name, application.Describe())
		}
		if run.RebalancePauses != nil {
			fmt.Fprintf(w, "  %s: %s\n", run.Name, run.RebalancePauses.Text())
		}
	}
	verdict := "PASS: every run met its expectation"
	if !results.Passed {
		verdict = "FAIL: at least one run did not meet its expectation"
	}
	_, err := fmt.Fprintln(w, verdict)
	return err
}

// writeLatencyOrigins says, below the table, what its ack and e2e
// latencies count from: one line per origin the runs used.
func writeLatencyOrigins(w io.Writer, runs []*Run) {
	var scheduled, created bool
	for _, run := range runs {
		if run.Status == StatusNotApplicable || len(run.Latency) == 0 {
			continue
		}
		scheduled = scheduled || run.LatencyOrigin == LatencyFromSchedule
		created = created || run.LatencyOrigin != LatencyFromSchedule
	}
	if scheduled {
		fmt.Fprintln(w, "  ack, e2e: latency from the scheduled send time (fixed rate: time a producer spent behind its schedule counts);"+
			" uncorr: from when the record was handed to the client, which hides that time")
	}
	if created {
		fmt.Fprintln(w, "  ack, e2e of unpaced runs: latency from when the record was created (no schedule at maximum rate)")
	}
}

// totals are the worst counts of a run's checks, as the summary shows them.
type totals struct {
	lost, duplicated, reordered, inconsistent, ambiguous uint64
	// abortedRead is the aborted records read under read_committed (a
	// violation) with, in parentheses, those read under read_uncommitted
	// (expected).
	abortedRead string
	// pollSkips and nonMonotonic are "-" when no consumer's polls were
	// judged.
	pollSkips, nonMonotonic string
}

// checkTotals takes the worst count of loss, duplicates, reordering,
// inconsistent offsets, poll skips, moves back and ambiguous-present
// records over the run's checks, and the aborted records read under
// read_committed with those read under read_uncommitted.
func checkTotals(checks []Check) totals {
	var t totals
	var committed, uncommitted, skips, backs uint64
	var sawCommitted, sawUncommitted, sawPolls bool
	for _, check := range checks {
		t.lost = max(t.lost, check.Counts.Lost)
		t.duplicated = max(t.duplicated, check.Counts.Duplicated)
		t.reordered = max(t.reordered, check.Counts.Reordered)
		t.inconsistent = max(t.inconsistent, check.Counts.InconsistentOffsets)
		t.ambiguous = max(t.ambiguous, check.Counts.AmbiguousPresent)
		skips, backs = max(skips, check.Counts.PollSkips), max(backs, check.Counts.NonMonotonicPolls)
		switch check.Reader {
		case "read_committed", "table":
			committed, sawCommitted = max(committed, check.Counts.AbortedVisible), true
		case "read_uncommitted":
			uncommitted, sawUncommitted = max(uncommitted, check.Counts.AbortedVisible), true
		case PollReader: // aborted records polled by read_committed consumers
			committed, sawPolls = max(committed, check.Counts.AbortedVisible), true
		}
	}
	var parts []string
	if sawCommitted {
		parts = append(parts, fmt.Sprint(committed))
	}
	if sawUncommitted {
		parts = append(parts, fmt.Sprintf("(ru %d)", uncommitted))
	}
	t.abortedRead, t.pollSkips, t.nonMonotonic = "-", "-", "-"
	if len(parts) > 0 {
		t.abortedRead = strings.Join(parts, " ")
	}
	if sawPolls {
		t.pollSkips, t.nonMonotonic = fmt.Sprint(skips), fmt.Sprint(backs)
	}
	return t
}

func number(value float64, decimals int) string {
	if value <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.*f", decimals, value)
}

func ratio(value float64) string {
	if value <= 0 {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", (value-1)*100)
}

func millis(value float64) string {
	if value < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", value)
}
