package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/exactly-eos/exactly/loadgen/verify"
)

// runRow is one run of one results file in the throughput and latency
// table.
type runRow struct {
	File                                 *fileView
	Name, Mode, Status, Reason           string
	RecordsPerSecond, MegabytesPerSecond string
	Ratio                                string
	// Latencies are "p50 / p99 / p99.9 / max" in milliseconds (commit and
	// end-to-end: p50 / p99; uncorrected ack: p99.9 / max, fixed-rate
	// runs only). LatencyFrom says what ack and end-to-end count from.
	AckLatency, EndToEndLatency, CommitLatency string
	UncorrectedAck, LatencyFrom                string
	Sent, Acknowledged, Errored, Retries       uint64
	Committed, Aborted                         int64
	// Errors is the total count of client errors; ErrorCodes lists them
	// by code in the run's note.
	Errors      int64
	ErrorCodes  string
	FaultsFired int64
	// Share is the share-group mode's figures (redeliveries by cause,
	// archived, max delivery count), in the run's note.
	Share       string
	FirstOfName bool
	// NoteNumber numbers the run's reason in the notes under the table
	// (0: no reason).
	NoteNumber int
}

// runRows lists every run, grouped by run name so that files sit next to
// each other.
func runRows(files []*fileView, names []string) []runRow {
	var rows []runRow
	notes := 0
	for _, name := range names {
		first := true
		for _, file := range files {
			run := file.run(name)
			if run == nil {
				continue
			}
			ack, endToEnd, commit := run.Latency[LatencyProduceAck], run.Latency[LatencyEndToEnd], run.Latency[LatencyTransactionCommit]
			rows = append(rows, runRow{File: file, Name: run.Name, Mode: run.Mode, Status: run.Status, Reason: run.Reason,
				RecordsPerSecond: number(run.Throughput.RecordsPerSecond, 0), MegabytesPerSecond: number(run.Throughput.MegabytesPerSecond, 1),
				Ratio:      times(run.Throughput.RatioToBaseline),
				AckLatency: percentiles(ack, 50, 99, 99.9, 100), EndToEndLatency: percentiles(endToEnd, 50, 99),
				UncorrectedAck: percentiles(run.Latency[LatencyProduceAckUncorrected], 99.9, 100), LatencyFrom: latencyFrom(run),
				CommitLatency: percentiles(commit, 50, 99),
				Sent:          run.Producers.Sent, Acknowledged: run.Producers.Acknowledged, Errored: run.Producers.Errored,
				Retries: uint64(max(run.Retries, 0)), Committed: run.Transactions.Committed, Aborted: run.Transactions.Aborted,
				Errors: errorTotal(run.ErrorsByCode), ErrorCodes: errorsText(run.ErrorsByCode), FaultsFired: run.FaultsFired, FirstOfName: first})
			first = false
			if run.ShareGroup != nil {
				rows[len(rows)-1].Share = run.ShareGroup.Describe()
			}
			if run.Reason != "" || len(run.ErrorsByCode) > 0 || run.ShareGroup != nil {
				rows[len(rows)-1].NoteNumber = notes + 1
				notes++
			}
		}
	}
	return rows
}

// latencyFrom names, for the run table, what a run's ack and end-to-end
// latencies count from.
func latencyFrom(run *Run) string {
	switch {
	case len(run.Latency) == 0:
		return "-"
	case run.LatencyOrigin == LatencyFromSchedule:
		return "scheduled send time"
	}
	return "creation (unpaced)"
}

// runNotes returns the rows that carry a reason, in note order.
func runNotes(rows []runRow) []runRow {
	var notes []runRow
	for _, row := range rows {
		if row.NoteNumber > 0 {
			notes = append(notes, row)
		}
	}
	return notes
}

// percentiles renders h's values at the given percentiles as
// "1.23 / 45.6 / 789", or "-" when h is nil.
func percentiles(h *Histogram, at ...float64) string {
	if h == nil {
		return "-"
	}
	parts := make([]string, len(at))
	for index, percentile := range at {
		parts[index] = shortMillis(h.Percentile(percentile))
	}
	return strings.Join(parts, " / ")
}

// shortMillis renders milliseconds with three or four significant digits.
func shortMillis(value float64) string {
	switch {
	case value < 0:
		return "-"
	case value >= 100:
		return fmt.Sprintf("%.0f", value)
	case value >= 10:
		return fmt.Sprintf("%.1f", value)
	}
	return fmt.Sprintf("%.2f", value)
}

// times renders a ratio as "×0.87", or "-" when there is none.
func times(value float64) string {
	if value <= 0 {
		return "-"
	}
	return fmt.Sprintf("×%.2f", value)
}

func errorTotal(errors map[string]int64) int64 {
	var total int64
	for _, count := range errors {
		total += count
	}
	return total
}

// errorsText lists error codes by decreasing count.
func errorsText(errors map[string]int64) string {
	codes := make([]string, 0, len(errors))
	for code := range errors {
		codes = append(codes, code)
	}
	sort.Slice(codes, func(i, j int) bool {
		if errors[codes[i]] != errors[codes[j]] {
			return errors[codes[i]] > errors[codes[j]]
		}
		return codes[i] < codes[j]
	})
	parts := make([]string, len(codes))
	for index, code := range codes {
		parts[index] = fmt.Sprintf("%s ×%d", code, errors[code])
	}
	return strings.Join(parts, ", ")
}

// comparisonView compares several results files (usually different
// targets, or two builds) with the first file; see compareRounds for
// when a difference is one.
type comparisonView struct {
	Reference *fileView
	Others    []*fileView
	// Measures head the columns, one value (and, for the other files, one
	// comparison) each.
	Measures []string
	// Tables are the slots of the overhead sections, measured over
	// rounds, then the runs measured once, by name (either left out when
	// empty).
	Tables []comparisonTable
}

// comparisonTable is one table of a comparisonView.
type comparisonTable struct {
	View         *comparisonView
	Title, Class string
	// Head heads the first column ("slot", "run").
	Head string
	Rows []comparisonRow
	// Span is how many columns an other file's status cell spans.
	Span int
}

type comparisonRow struct {
	Name string
	// Slot, Rate and Faults are a slot row's key (data attributes).
	Slot   string
	Rate   int
	Faults string
	Cells  []comparisonCell // one per file, the reference first
}

// comparisonCell is one file's side of a row: its status when the run
// was not measured ("absent", "unsupported"), and each measure.
type comparisonCell struct {
	Status   string
	Measures []measureCell // in the order of compareMeasures
}

// measureCell is one measure of one file. Comparison is the text against
// the reference file ("-" in the reference's own cell); Class is
// "better", "worse" or "", and is set only for an interval outside the
// noise floor.
type measureCell struct {
	Value, Comparison, Class string
}

func compareFiles(files []*fileView, names []string) *comparisonView {
	view := &comparisonView{Reference: files[0], Others: files[1:]}
	for _, measure := range compareMeasures {
		view.Measures = append(view.Measures, measure.Name)
	}
	span := 2 * len(compareMeasures)
	if slots := compareSlots(files); len(slots) > 0 {
		view.Tables = append(view.Tables, comparisonTable{View: view, Title: "Slots measured over rounds", Class: "comparison-slots",
			Head: "slot", Rows: slots, Span: span})
	}
	if runs := compareRuns(files, names); len(runs) > 0 {
		view.Tables = append(view.Tables, comparisonTable{View: view, Title: "Runs", Class: "comparison", Head: "run", Rows: runs, Span: span})
	}
	return view
}

// faultSummaryRow counts one kind of fault fired in one run.
type faultSummaryRow struct {
	File         *fileView
	Run, Kind    string
	Count        int
	First, Last  string
	WithoutTimes bool
}

// faultSummaryRows counts each run's fault events by kind, in order of
// first appearance; a run that fired faults without recording events gets
// one row saying so.
func faultSummaryRows(file *fileView) []faultSummaryRow {
	var rows []faultSummaryRow
	for _, run := range file.Results.Runs {
		events := runFaultEvents(run)
		if len(events) == 0 && run.FaultsFired > 0 {
			rows = append(rows, faultSummaryRow{File: file, Run: run.Name, Kind: "any", Count: int(run.FaultsFired), WithoutTimes: true})
			continue
		}
		position := map[string]int{}
		for _, event := range events {
			at := fmt.Sprintf("%.3f s", event.ElapsedSeconds)
			index, seen := position[event.Kind]
			if !seen {
				index = len(rows)
				position[event.Kind] = index
				rows = append(rows, faultSummaryRow{File: file, Run: run.Name, Kind: event.Kind, First: at})
			}
			rows[index].Count++
			rows[index].Last = at
		}
	}
	return rows
}

// faultRow is one fault event.
type faultRow struct {
	File                  *fileView
	Run                   string
	Elapsed, Kind, Broker string
	Detail                string
}

func faultRows(file *fileView) []faultRow {
	var rows []faultRow
	for _, run := range file.Results.Runs {
		events := runFaultEvents(run)
		listed := events[:min(len(events), maxMarkedEvents)]
		for _, event := range listed {
			rows = append(rows, faultRow{File: file, Run: run.Name, Elapsed: fmt.Sprintf("%.3f s", event.ElapsedSeconds),
				Kind: event.Kind, Broker: event.Broker, Detail: event.Detail})
		}
		if left := len(events) - len(listed); left > 0 {
			rows = append(rows, faultRow{File: file, Run: run.Name, Elapsed: "…",
				Kind: fmt.Sprintf("%d more events", left), Detail: "see fault_events in the results file"})
		}
	}
	return rows
}

// checkRow is one verification read of one run: the checker's counts with
// the ones that break the run's guarantee highlighted.
type checkRow struct {
	File                      *fileView
	Run, Mode, Status, Reader string
	Topic, FaultPlan          string
	FaultsFired               int64
	Complete                  bool
	Counts                    []countCell
	Violations                []string
	// Note replaces the counts of a run that was not read back.
	Note string
}

// countCell is one count; Violation marks a count the checker reported as
// breaking the guarantee.
type countCell struct {
	Value     uint64
	Violation bool
}

// checkColumns are the count columns of the checker table, in order (see
// countCells).
var checkColumns = []string{"read", "unique", "lost", "lost writes", "unseen", "duplicated", "reordered", "aborted read", "phantom",
	"inconsistent offsets", "poll skips", "non-monotonic polls", "ambiguous present", "ambiguous absent"}

func checkRows(file *fileView) []checkRow {
	var rows []checkRow
	for _, run := range file.Results.Runs {
		base := checkRow{File: file, Run: run.Name, Mode: run.Mode, Status: run.Status, FaultsFired: run.FaultsFired, FaultPlan: run.FaultPlan}
		if base.FaultPlan == "" {
			base.FaultPlan = "none"
		}
		if len(run.Checks) == 0 {
			base.Note = "not read back"
			if run.Reason != "" {
				base.Note += ": " + run.Reason
			}
			rows = append(rows, base)
			continue
		}
		for _, check := range run.Checks {
			row := base
			row.Reader, row.Topic, row.Complete = check.Reader, check.Topic, check.Complete
			if check.Consumers != "" {
				row.Reader += ": " + check.Consumers
			}
			row.Counts = countCells(run, check)
			row.Violations = checkViolations(run, check, row.Counts)
			rows = append(rows, row)
		}
	}
	return rows
}

// countCells lays out a check's counts in checkColumns order, marking the
// counts that break the run's bounds (see countBound). Lost writes and
// unseen records are kinds of loss, under its bound; inconsistent offsets,
// poll skips and non-monotonic polls break every guarantee.
func countCells(run *Run, check Check) []countCell {
	counts := check.Counts
	// A polls check counts aborted records only for read_committed
	// consumers.
	committed := check.Reader == "read_committed" || check.Reader == PollReader
	broken := func(value uint64, bound string) bool { return value > 0 && !countBound(run, bound) }
	return []countCell{
		{counts.Read, false}, {counts.Unique, false},
		{counts.Lost, broken(counts.Lost, "lost")}, {counts.LostWrites, broken(counts.LostWrites, "lost")},
		{counts.Unseen, broken(counts.Unseen, "lost")}, {counts.Duplicated, broken(counts.Duplicated, "dup")},
		{counts.Reordered, broken(counts.Reordered, "reord")}, {counts.AbortedVisible, committed && counts.AbortedVisible > 0},
		{counts.Phantom, counts.Phantom > 0}, {counts.InconsistentOffsets, counts.InconsistentOffsets > 0},
		{counts.PollSkips, counts.PollSkips > 0}, {counts.NonMonotonicPolls, counts.NonMonotonicPolls > 0},
		{counts.AmbiguousPresent, false}, {counts.AmbiguousAbsent, false},
	}
}

// checkViolations is what the row lists and highlights: the checker's
// violations without those the run's expectation allows, or all of them
// when a count cell is broken.
func checkViolations(run *Run, check Check, cells []countCell) []string {
	if run.Expectation == nil {
		return check.Violations
	}
	var kept []string
	for _, violation := range check.Violations {
		allowed := (names(violation, verify.ViolationDuplicated) && countBound(run, "dup")) ||
			(names(violation, verify.ViolationReordered) && countBound(run, "reord")) ||
			(names(violation, verify.ViolationLost) && countBound(run, "lost"))
		if !allowed {
			kept = append(kept, violation)
		}
	}
	for _, cell := range cells {
		if cell.Violation && len(kept) == 0 {
			return check.Violations
		}
	}
	return kept
}

// names reports whether violation ("12 duplicated", "3
// acknowledged-but-lost (2 lost writes, 1 unseen)") is one of kind.
func names(violation, kind string) bool {
	_, rest, _ := strings.Cut(violation, " ")
	return rest == kind || strings.HasPrefix(rest, kind+" (")
}

// expectationRow is one run of the fault matrix: the bounds, what it
// showed and the verdict.
type expectationRow struct {
	File                       *fileView
	Run, FaultPlan             string
	FaultsFired                int64
	Expected, Observed, Status string
	Why                        string
	Offenders                  []string
}

// expectationRows lists the runs that carry an expectation.
func expectationRows(file *fileView) []expectationRow {
	var rows []expectationRow
	for _, run := range file.Results.Runs {
		expectation := run.Expectation
		if expectation == nil {
			continue
		}
		row := expectationRow{File: file, Run: run.Name, FaultPlan: run.FaultPlan, FaultsFired: run.FaultsFired,
			Expected: expectation.Expected, Observed: expectation.Observed, Status: expectation.Verdict, Why: expectation.Why}
		row.Offenders = expectation.Offenders[:min(len(expectation.Offenders), 5)]
		if row.Status == "" {
			row.Status = run.Status
		}
		rows = append(rows, row)
	}
	return rows
}
