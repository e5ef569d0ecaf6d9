package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// SummaryWidth is the width in columns the default summary fits in.
const SummaryWidth = 120

// SummaryOptions say how WriteSummaryWith prints.
type SummaryOptions struct {
	// Wide prints every column (MB/s, every latency percentile, sent and
	// acknowledged, each anomaly) in a table as wide as it takes; else
	// the table has the columns a person reads first and fits
	// SummaryWidth.
	Wide bool
}

// WriteSummary prints the summary of results in SummaryWidth columns
// (WriteSummaryWith without Wide).
func WriteSummary(w io.Writer, results *Results) error {
	return WriteSummaryWith(w, results, SummaryOptions{})
}

// WriteSummaryWith prints one table row per run: by default its status,
// throughput and ratio to the at-least-once baseline, ack and end-to-end
// p99 and the checker's lost, duplicated and reordered counts with the
// other anomalies summed; with Wide also MB/s, the produce-ack latency
// percentiles and maximum (from the scheduled send time at a fixed rate)
// with the uncorrected p99.9 and maximum beside them ("-" unpaced),
// end-to-end p50, sent and acknowledged, and each anomaly on its own
// (see checkTotals). Then what the latencies count from, one line per
// run with a reason or transactions, then the verdict.
func WriteSummaryWith(w io.Writer, results *Results, options SummaryOptions) error {
	width := SummaryWidth
	if options.Wide {
		width = 0
	}
	WriteWrapped(w, "", fmt.Sprintf("exactly loadgen run %s against %s (%s)", results.RunID, results.Target.Kind, results.Target.Description), width)
	if shared := results.Target.SharesMachine; shared != nil && *shared {
		WriteWrapped(w, "  ", fmt.Sprintf("warning: client and broker on one machine (%d CPUs): %s; differences of a few percent between modes are not evidence",
			results.Machine.NumCPU, results.Target.Sharing), width)
	}
	var err error
	if options.Wide {
		err = writeWideTable(w, results.Runs)
	} else {
		err = writeNarrowTable(w, results.Runs)
	}
	if err != nil {
		return err
	}
	writeLatencyOrigins(w, results.Runs, width, options.Wide)
	for _, run := range results.Runs {
		if run.Reason != "" {
			WriteWrapped(w, "  ", fmt.Sprintf("%s: %s: %s", run.Name, run.Status, run.Reason), width)
		}
		if commit := run.Latency[LatencyTransactionCommit]; commit != nil {
			what := "commits"
			if run.Application != nil {
				what = "database commits"
			}
			WriteWrapped(w, "  ", fmt.Sprintf("%s: %d %s, %d aborts; commit latency p50 %s ms, p99 %s ms", run.Name,
				run.Transactions.Committed, what, run.Transactions.Aborted, millis(commit.Percentile(50)), millis(commit.Percentile(99))), width)
		}
		if application := run.Application; application != nil {
			WriteWrapped(w, "  ", fmt.Sprintf("%s: %s", run.Name, application.Describe()), width)
		}
		if share := run.ShareGroup; share != nil {
			WriteWrapped(w, "  ", fmt.Sprintf("%s: share group: %s", run.Name, share.Describe()), width)
		}
		if run.RebalancePauses != nil {
			WriteWrapped(w, "  ", fmt.Sprintf("%s: %s", run.Name, run.RebalancePauses.Text()), width)
		}
	}
	verdict := "PASS: every run met its expectation"
	if !results.Passed {
		verdict = "FAIL: at least one run did not meet its expectation"
	}
	_, err = fmt.Fprintln(w, verdict)
	return err
}

// writeWideTable prints every column of the summary, as wide as it takes.
func writeWideTable(w io.Writer, runs []*Run) error {
	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(table, "run\tstatus\trecords/s\tMB/s\tvs base\tack p50 ms\tp99\tp99.9\tmax\tuncorr p99.9\tmax\te2e p50 ms\tp99\tsent\tacked\t"+
		"lost\tdup\treord\taborted-read\tincons\tpoll-skip\tpoll-back\tambiguous\t")
	for _, run := range runs {
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
	return nil
}

// narrowHeader is the header of the default summary table.
var narrowHeader = []string{"run", "status", "rec/s", "vs base", "ack p99", "e2e p99", "lost", "dup", "reord", "other"}

// writeNarrowTable prints the columns a person reads first, within
// SummaryWidth: run names too long for it are shortened in the middle.
func writeNarrowTable(w io.Writer, runs []*Run) error {
	rows := [][]string{narrowHeader}
	for _, run := range runs {
		totals := checkTotals(run.Checks)
		rows = append(rows, []string{run.Name, run.Status,
			number(run.Throughput.RecordsPerSecond, 0), ratio(run.Throughput.RatioToBaseline),
			millis(run.Latency[LatencyProduceAck].Percentile(99)), millis(run.Latency[LatencyEndToEnd].Percentile(99)),
			fmt.Sprint(totals.lost), fmt.Sprint(totals.duplicated), fmt.Sprint(totals.reordered), totals.other()})
	}
	if err := writeFittedTable(w, rows); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	_, err := fmt.Fprintln(w, "  ack, e2e p99 in ms; other: aborted reads, inconsistent offsets, poll skips and moves back (--wide shows each)")
	return err
}

// writeFittedTable prints rows (the first the header) right-aligned in
// columns two apart within SummaryWidth: every column but the first is as
// wide as its widest cell; the first (run names) gets what is left, names
// too long for it shortened in the middle.
func writeFittedTable(w io.Writer, rows [][]string) error {
	const gap = 2
	rest := 0
	for column := 1; column < len(rows[0]); column++ {
		widest := 0
		for _, row := range rows {
			widest = max(widest, utf8.RuneCountInString(row[column]))
		}
		rest += gap + widest
	}
	nameWidth := max(SummaryWidth-gap-rest, len(rows[0][0]))
	table := tabwriter.NewWriter(&lineTrimmer{w: w}, 0, 0, gap, ' ', tabwriter.AlignRight)
	for _, row := range rows {
		row[0] = shorten(row[0], nameWidth)
		fmt.Fprintln(table, strings.Join(row, "\t")+"\t")
	}
	return table.Flush()
}

// shorten cuts text to width runes, replacing its middle with "…".
func shorten(text string, width int) string {
	runes := []rune(text)
	if len(runes) <= width || width < 3 {
		return text
	}
	head := (width - 1) / 2
	return string(runes[:head]) + "…" + string(runes[len(runes)-(width-1-head):])
}

// WriteWrapped prints text after indent, wrapped at spaces to width
// runes (0: not wrapped); continuation lines are indented four more.
func WriteWrapped(w io.Writer, indent, text string, width int) {
	if width <= 0 {
		fmt.Fprintln(w, indent+text)
		return
	}
	line, prefix := "", indent
	for _, word := range strings.Fields(text) {
		if line != "" && utf8.RuneCountInString(prefix+line+" "+word) > width {
			fmt.Fprintln(w, prefix+line)
			line, prefix = "", indent+"    "
		}
		if line == "" {
			line = word
		} else {
			line += " " + word
		}
	}
	fmt.Fprintln(w, prefix+line)
}

// writeLatencyOrigins says, below the table, what its ack and e2e
// latencies count from: one line per origin the runs used.
func writeLatencyOrigins(w io.Writer, runs []*Run, width int, wide bool) {
	var scheduled, created bool
	for _, run := range runs {
		if run.Status == StatusNotApplicable || len(run.Latency) == 0 {
			continue
		}
		scheduled = scheduled || run.LatencyOrigin == LatencyFromSchedule
		created = created || run.LatencyOrigin != LatencyFromSchedule
	}
	if scheduled {
		text := "ack, e2e: latency from the scheduled send time (fixed rate: time a producer spent behind its schedule counts)"
		if wide {
			text += "; uncorr: from when the record was handed to the client, which hides that time"
		}
		WriteWrapped(w, "  ", text, width)
	}
	if created {
		WriteWrapped(w, "  ", "ack, e2e of unpaced runs: latency from when the record was created (no schedule at maximum rate)", width)
	}
}

// totals are the worst counts of a run's checks, as the summary shows them.
type totals struct {
	lost, duplicated, reordered, inconsistent, ambiguous uint64
	// abortedRead is the aborted records read under read_committed (a
	// violation) with, in parentheses, those read under read_uncommitted
	// (expected).
	abortedRead string
	// committedAborted and uncommittedAborted are the aborted records
	// read under read_committed and read_uncommitted; the saw flags say
	// whether such readers were judged. skips and backs are the poll
	// counts, when sawPolls.
	committedAborted, uncommittedAborted   uint64
	sawCommitted, sawUncommitted, sawPolls bool
	skips, backs                           uint64
	// violations is the sum of the aborted records read under
	// read_committed, the inconsistent offsets, the poll skips and the
	// moves back: the narrow table's "other".
	violations uint64
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
	t.violations = committed + t.inconsistent + skips + backs
	t.committedAborted, t.uncommittedAborted, t.skips, t.backs = committed, uncommitted, skips, backs
	t.sawCommitted, t.sawUncommitted, t.sawPolls = sawCommitted, sawUncommitted, sawPolls
	return t
}

// other is the narrow table's "other" column: the violations summed.
func (t totals) other() string { return fmt.Sprint(t.violations) }

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

// lineTrimmer drops the spaces at the end of each line written through
// it (the padding tabwriter leaves after a table's last cell). It holds
// a line until its newline.
type lineTrimmer struct {
	w       io.Writer
	pending []byte
}

// Write passes on every complete line of p, trimmed.
func (t *lineTrimmer) Write(p []byte) (int, error) {
	t.pending = append(t.pending, p...)
	for {
		end := bytes.IndexByte(t.pending, '\n')
		if end < 0 {
			return len(p), nil
		}
		line := append(bytes.TrimRight(t.pending[:end], " "), '\n')
		if _, err := t.w.Write(line); err != nil {
			return 0, err
		}
		t.pending = t.pending[end+1:]
	}
}
