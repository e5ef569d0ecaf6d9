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
	table := tabwriter.NewWriter(&lineTrimmer{w: w}, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "fault\tload\tslot\tthroughput\tack p99\te2e p99\trecovery\t>1s ack/e2e\tlost/dup\t")
	for _, load := range overhead.Loads {
		if load.Faults == "" {
			continue
		}
		loadText := costLoadText(load)
		if load.NotApplicable != "" {
			// Under the table: a short line would break its columns.
			notes = append(notes, fmt.Sprintf("%s at %s: %s", load.Faults, loadText, load.NotApplicable))
			continue
		}
		baseline := overhead.Baseline
		if load.BaselineWithoutFaults {
			baseline += " (no faults)"
		}
		var throughput, ackP99, endToEndP99 string
		if len(load.Rows) > 0 {
			first := load.Rows[0]
			throughput = number(first.Throughput.BaselineMedian(), 0) + " rec/s"
			ackP99 = millisText(first.AckP99.BaselineMedian())
			endToEndP99 = millisText(first.EndToEndP99.BaselineMedian())
		}
		fmt.Fprintf(table, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", load.Faults, loadText, baseline, throughput, ackP99, endToEndP99,
			load.BaselineCost.RecoveryText(), load.BaselineCost.DelayedText(), load.BaselineCost.CheckedText())
		for _, row := range load.Rows {
			if row.CannotBite != "" {
				note := fmt.Sprintf("%s: %s cannot be touched (%s)", load.Faults, row.Slot, row.CannotBite)
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
			fmt.Fprintf(table, "\t\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.Slot, throughput, ackP99, endToEndP99,
				row.Cost.RecoveryText(), row.Cost.DelayedText(), row.Cost.CheckedText())
		}
	}
	if err := table.Flush(); err != nil {
		return fmt.Errorf("write cost: %w", err)
	}
	for _, note := range notes {
		WriteWrapped(w, "  ", note, SummaryWidth)
	}
	_, err := fmt.Fprintln(w, "the baseline's row shows its own values; the others are ratios to it, round by round. A ratio is faster\n"+
		"or slower only when its interval lies outside the A/A floor (the baseline against itself), else ≈ (within noise).\n"+
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
// the interval is wide enough for them, else as RatioText.
func compactRatio(stat RatioStat) string {
	if len(stat.Ratios) == 0 {
		return "-"
	}
	if stat.CIHigh-stat.CILow >= 0.1 {
		return fmt.Sprintf("%.2f [%.2f, %.2f]", stat.MedianRatio, stat.CILow, stat.CIHigh)
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
