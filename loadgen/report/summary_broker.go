package report

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteBrokerSide prints the broker-side table of the runs that carry
// broker metrics (nothing when none does): per run, the mean Produce
// request split into queue / local append / durability wait / send, the
// EndTxn and AddPartitionsToTxn means, markers per commit and fsyncs per
// second, as the dashboard's broker-side section shows them; then each
// run's scrape warnings.
func WriteBrokerSide(w io.Writer, results *Results) error {
	return WriteBrokerSideWith(w, results, false)
}

// WriteBrokerSideWith is WriteBrokerSide within SummaryWidth columns (the
// Produce split left out, run names shortened where they must be), or
// with wide every column however wide.
func WriteBrokerSideWith(w io.Writer, results *Results, wide bool) error {
	var rows []brokerRow
	for _, run := range results.Runs {
		if run.BrokerMetrics != nil {
			rows = append(rows, newBrokerRow(nil, run, false))
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nbroker-side (the broker's /metrics before and after each cell; mean ms per request unless noted below):")
	if wide {
		table := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(table, "run\trecords/s\tProduce ms\tqueue / local / durability / send\tEndTxn ms\tAddPartitionsToTxn ms\tmarkers/commit\tfsyncs/s\tdup dropped\t")
		for _, row := range rows {
			fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.Name, row.RecordsPerSecond, row.ProduceTotal, row.PartsText(),
				row.EndTxn, row.AddPartitions, row.MarkersPerCommit, row.Fsyncs, row.Duplicates)
		}
		if err := table.Flush(); err != nil {
			return fmt.Errorf("write broker-side table: %w", err)
		}
	} else {
		cells := [][]string{{"run", "rec/s", "Produce ms", "EndTxn ms", "AddPartitions ms", "markers/commit", "fsyncs/s", "dup dropped"}}
		for _, row := range rows {
			cells = append(cells, []string{row.Name, row.RecordsPerSecond, row.ProduceTotal, row.EndTxn, row.AddPartitions,
				row.MarkersPerCommit, row.Fsyncs, row.Duplicates})
		}
		if err := writeFittedTable(w, cells); err != nil {
			return fmt.Errorf("write broker-side table: %w", err)
		}
	}
	for _, row := range rows {
		if row.Flavour != "exactly" {
			fmt.Fprintf(w, "  %s: %s broker's metric names", row.Name, row.Flavour) // short: not wrapped
			if row.Statistic != "" {
				fmt.Fprintf(w, "; times are the broker's %ss, not means over the cell", row.Statistic)
			}
			fmt.Fprintln(w)
		}
		if row.Other != "" {
			WriteWrapped(w, "  ", row.Name+": "+row.Other, SummaryWidth)
		}
		for _, note := range row.Notes {
			WriteWrapped(w, "  ", row.Name+": note: "+note, SummaryWidth)
		}
		for _, warning := range row.Warnings {
			WriteWrapped(w, "  ", row.Name+": warning: "+warning, SummaryWidth)
		}
	}
	return nil
}
