package loadgen

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/exactly-eos/exactly/loadgen/report"
)

// WriteMatrix prints the expectations table of a fault matrix: one row per
// run (fault plan × mode) with what was expected, what was observed and the
// verdict, then, under each row that is not a pass, why, and for a FAIL the
// offending records. It prints nothing for results without expectations.
func WriteMatrix(w io.Writer, results *report.Results) error {
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
	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "plan\tmode\tverdict\texpected\tobserved")
	tally := map[string]int{}
	for _, run := range rows {
		expectation := run.Expectation
		tally[expectation.Verdict]++
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\n", run.FaultPlan, strings.TrimSuffix(run.Name, ":"+run.FaultPlan),
			strings.ToUpper(expectation.Verdict), expectation.Expected, expectation.Observed)
	}
	if err := table.Flush(); err != nil {
		return fmt.Errorf("write matrix: %w", err)
	}
	for _, run := range rows {
		expectation := run.Expectation
		if expectation.Verdict == report.StatusPass && expectation.Why == "" {
			continue
		}
		fmt.Fprintf(w, "  %s %s: %s\n", strings.ToUpper(expectation.Verdict), run.Name, expectation.Why)
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
