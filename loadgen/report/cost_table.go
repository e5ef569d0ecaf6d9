package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteCost prints the cost table of an overhead section's loads under
// faults: for each fault plan and offered load, every slot's throughput,
// p99 acknowledgement and p99 end-to-end ratios to the baseline under the
// same faults (median over the rounds with its bootstrap interval, and
// the verdict against the A/A noise floor), its recovery after the fault,
// the records the fault held past a second and what the checker counted.
// It prints nothing when no load ran under faults.
func WriteCost(w io.Writer, results *Results) error {
	overhead := results.Overhead
	if overhead == nil || !hasFaultLoads(overhead) {
		return nil
	}
	fmt.Fprintln(w)
	WriteWrapped(w, "", fmt.Sprintf("what each guarantee costs under each fault class: %d rounds, ratio to %s under the same faults, "+
		"median of the rounds [%.0f%% bootstrap interval]", overhead.Rounds, overhead.Baseline, overhead.Confidence*100), SummaryWidth)
	if overhead.SustainableRate > 0 {
		fmt.Fprintf(w, "fixed loads are shares of %s's sustainable rate, %d records/s (%s)\n", overhead.Baseline,
			overhead.SustainableRate, overhead.SustainableSource)
	}
	var notes []string // what did not run, and why
	// Two tables, so that each fits 120 columns: the ratios, then what the
	// fault did to each slot. Each fault and load is a heading line
	// between the rows (alignedRows keeps the columns across them).
	var ratios, tolls []alignedRow
	ratios = append(ratios, alignedRow{cells: []string{"  slot", "throughput", "ack p99", "e2e p99"}})
	tolls = append(tolls, alignedRow{cells: []string{"  slot", "recovery", ">1s ack/e2e", "lost/dup"}})
	for _, load := range overhead.Loads {
		if load.Faults == "" {
			continue
		}
		loadText := costLoadText(load)
		if load.NotApplicable != "" {
			notes = append(notes, fmt.Sprintf("%s at %s: %s", load.Faults, loadText, load.NotApplicable))
			continue
		}
		heading := alignedRow{heading: fmt.Sprintf("%s at %s", load.Faults, loadText)}
		baseline := overhead.Baseline
		if load.BaselineWithoutFaults {
			// In the heading: in the slot column it would widen every row.
			heading.heading += fmt.Sprintf(" (%s ran without faults: the plan cannot touch it)", baseline)
		}
		ratios, tolls = append(ratios, heading), append(tolls, heading)
		var throughput, ackP99, endToEndP99 string
		if len(load.Rows) > 0 {
			first := load.Rows[0]
			throughput = number(first.Throughput.BaselineMedian(), 0) + " rec/s"
			ackP99 = millisText(first.AckP99.BaselineMedian())
			endToEndP99 = millisText(first.EndToEndP99.BaselineMedian())
		}
		ratios = append(ratios, alignedRow{cells: []string{"  " + baseline, throughput, ackP99, endToEndP99}})
		tolls = append(tolls, alignedRow{cells: []string{"  " + baseline, load.BaselineCost.RecoveryText(),
			load.BaselineCost.DelayedText(), load.BaselineCost.CheckedText()}})
		for _, row := range load.Rows {
			if row.Skipped() != "" {
				note := fmt.Sprintf("%s: %s cannot be touched (%s)", load.Faults, row.Slot, row.CannotBite)
				if row.CannotBite == "" {
					note = fmt.Sprintf("%s: %s not run at this load (%s)", load.Faults, row.Slot, row.NotRun)
				}
				if !slices.Contains(notes, note) {
					notes = append(notes, note)
				}
				continue
			}
			throughput := ratioVerdict(row.Throughput, row.ThroughputVerdict())
			ackP99, endToEndP99 := ratioVerdict(row.AckP99, row.AckP99.Verdict), ratioVerdict(row.EndToEndP99, row.EndToEndP99.Verdict)
			if row.NoiseFloor {
				throughput = "floor " + BandText(load.NoiseBand.ThroughputLow, load.NoiseBand.ThroughputHigh)
				ackP99 = "floor " + BandText(load.NoiseBand.AckP99Low, load.NoiseBand.AckP99High)
				endToEndP99 = "floor " + BandText(load.NoiseBand.EndToEndP99Low, load.NoiseBand.EndToEndP99High)
			}
			ratios = append(ratios, alignedRow{cells: []string{"  " + row.Slot, throughput, ackP99, endToEndP99}})
			tolls = append(tolls, alignedRow{cells: []string{"  " + row.Slot, row.Cost.RecoveryText(),
				row.Cost.DelayedText(), row.Cost.CheckedText()}})
		}
	}
	fmt.Fprintln(w, "ratios to the baseline (its own row shows its values):")
	if err := writeAligned(w, ratios); err != nil {
		return fmt.Errorf("write cost: %w", err)
	}
	fmt.Fprintln(w, "what the fault did:")
	if err := writeAligned(w, tolls); err != nil {
		return fmt.Errorf("write cost: %w", err)
	}
	for _, note := range notes {
		WriteWrapped(w, "  ", note, SummaryWidth)
	}
	_, err := fmt.Fprintln(w, "ratios are taken round by round. A ratio is faster or slower only when its interval lies outside\n"+
		"the A/A floor (the baseline against itself), else ≈ (within noise).\n"+
		"recovery: from the fault until acknowledged throughput was back to 90% of what it was before (median of the\n"+
		"rounds' worst); continuous: the fault hits a share of all requests, so only the delayed records say what it\n"+
		"costs; >1s: records acknowledged (or read end to end) more than a second after they were due, median per round")
	return err
}

// hasFaultLoads reports whether any load of overhead ran under faults.
func hasFaultLoads(overhead *Overhead) bool {
	for _, load := range overhead.Loads {
		if load.Faults != "" {
			return true
		}
	}
	return false
}

// costLoadText names a load in the cost table: "max", "5000/s" or
// "50% (20500/s)".
func costLoadText(load OverheadLoad) string {
	switch {
	case load.Rate == 0:
		return "max"
	case load.Fraction > 0:
		return fmt.Sprintf("%.0f%% (%d/s)", 100*load.Fraction, load.Rate)
	}
	return fmt.Sprintf("%d/s", load.Rate)
}

// ratioVerdict renders a ratio with its interval and verdict, "-" when no
// round measured it: "0.93 [0.90, 0.95] slower", "1.02 [0.97, 1.05] ≈"
// (within noise).
func ratioVerdict(stat RatioStat, verdict string) string {
	if len(stat.Ratios) == 0 {
		return "-"
	}
	verdict = strings.Replace(verdict, "within noise", "≈", 1)
	return compactRatio(stat) + " " + verdict
}

// compactRatio renders a ratio and its interval with two decimals when
// the interval is wide enough for them to tell its ends apart (0.05),
// three when it is narrower, else (under 0.005) as RatioText, with four.
func compactRatio(stat RatioStat) string {
	if len(stat.Ratios) == 0 {
		return "-"
	}
	switch width := stat.CIHigh - stat.CILow; {
	case width >= 0.05:
		return fmt.Sprintf("%.2f [%.2f, %.2f]", stat.MedianRatio, stat.CILow, stat.CIHigh)
	case width >= 0.005:
		// Three decimals still tell the interval's ends apart.
		return fmt.Sprintf("%.3f [%.3f, %.3f]", stat.MedianRatio, stat.CILow, stat.CIHigh)
	}
	return stat.RatioText()
}

// millisText renders milliseconds, "-" for none.
func millisText(value float64) string {
	if value <= 0 {
		return "-"
	}
	return number(value, 1) + " ms"
}

// alignedRow is a row of a table whose columns stay aligned across
// heading lines: a heading is printed as it is, between the rows.
type alignedRow struct {
	heading string
	cells   []string
}

// writeAligned prints rows with their columns aligned over every row,
// two spaces apart, headings on lines of their own.
func writeAligned(w io.Writer, rows []alignedRow) error {
	var buffer strings.Builder
	table := tabwriter.NewWriter(&buffer, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		if row.heading == "" {
			fmt.Fprintln(table, strings.Join(row.cells, "\t")+"\t")
		}
	}
	if err := table.Flush(); err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(buffer.String(), "\n"), "\n")
	next := 0
	for _, row := range rows {
		if row.heading != "" {
			if _, err := fmt.Fprintln(w, row.heading); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(lines[next], " ")); err != nil {
			return err
		}
		next++
	}
	return nil
}
