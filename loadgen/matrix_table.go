package loadgen

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// WriteMatrix prints the expectations table of a fault matrix in
// report.SummaryWidth columns (WriteMatrixWith without wide).
func WriteMatrix(w io.Writer, results *report.Results) error {
	return WriteMatrixWith(w, results, false)
}

// WriteMatrixWith prints the expectations table of a fault matrix: one row
// per run (fault plan × mode) with the verdict and the bounds expected,
// then, under each row that is not a pass, why and what was observed,
// and for a FAIL the offending records, wrapped to report.SummaryWidth.
// wide puts the whole expectation and what was observed in the table,
// as wide as it takes. It prints nothing for results without
// expectations.
func WriteMatrixWith(w io.Writer, results *report.Results, wide bool) error {
	var rows []*report.Run
	for _, run := range results.Runs {
		if run.Expectation != nil {
			rows = append(rows, run)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nfault matrix against %s: %d runs\n", results.Target.Kind, len(rows))
	width := report.SummaryWidth
	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if wide {
		width = 0
		fmt.Fprintln(table, "plan\tmode\tverdict\texpected\tobserved")
	} else {
		fmt.Fprintln(table, "plan\tmode\tverdict\texpected")
	}
	tally := map[string]int{}
	for _, run := range rows {
		expectation := run.Expectation
		tally[expectation.Verdict]++
		mode, verdict := strings.TrimSuffix(run.Name, ":"+run.FaultPlan), strings.ToUpper(expectation.Verdict)
		if wide {
			fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\n", run.FaultPlan, mode, verdict, expectation.Expected, expectation.Observed)
		} else {
			fmt.Fprintf(table, "%s\t%s\t%s\t%s\n", run.FaultPlan, mode, verdict, bounds(expectation.Expected))
		}
	}
	if err := table.Flush(); err != nil {
		return fmt.Errorf("write matrix: %w", err)
	}
	for _, run := range rows {
		expectation := run.Expectation
		if expectation.Verdict == report.StatusPass && expectation.Why == "" {
			continue
		}
		report.WriteWrapped(w, "  ", fmt.Sprintf("%s %s: %s", strings.ToUpper(expectation.Verdict), run.Name, expectation.Why), width)
		if !wide && expectation.Verdict != report.StatusPass {
			report.WriteWrapped(w, "      ", "expected "+expectation.Expected+"; observed "+expectation.Observed, width)
		}
		for _, offender := range expectation.Offenders {
			fmt.Fprintf(w, "      %s\n", offender)
		}
	}
	var parts []string
	for _, verdict := range []string{report.StatusPass, report.StatusFail, report.StatusUntestable, report.StatusUnsupported,
		report.StatusNotApplicable, report.StatusError} {
		if tally[verdict] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", tally[verdict], verdict))
		}
	}
	_, err := fmt.Fprintf(w, "matrix: %s\n", strings.Join(parts, ", "))
	return err
}

// bounds is the part of an expectation the narrow table shows: the
// bounds on lost, duplicated and reordered records, without the sign the
// fault must show or the notes in parentheses (the lines under a row
// that is not a pass give the whole expectation).
func bounds(expected string) string {
	expected, _, _ = strings.Cut(expected, ";")
	expected, _, _ = strings.Cut(expected, " (")
	return expected
}
