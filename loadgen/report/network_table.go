package report

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// networkSweep is the loads of one overhead section that swept the
// round-trip time of one path under one fault plan at one offered load:
// one step per round-trip time, by increasing round-trip time.
type networkSweep struct {
	// Path, Plan, Rate and Fraction are what every step shares (see
	// NetworkPoint and OverheadLoad).
	Path     string
	Plan     string
	Rate     int
	Fraction float64
	// BaselineWithoutFaults is set when any step ran the baseline
	// without the plan's faults.
	BaselineWithoutFaults bool
	// Steps are the loads that ran, by increasing Network.RTTMs.
	Steps []OverheadLoad
	// Slots name the rows, the A/A slot (the noise floor) first, then in
	// the order the steps list them.
	Slots []string
	// NoiseFloor names the A/A slot ("" when no step has one).
	NoiseFloor string
	// Notes say what did not run: steps not applicable on the target,
	// slots the plan could not touch.
	Notes []string
}

// networkSweeps groups the loads of overhead that carry a network step
// into sweeps, in the order their first step appears. Loads without a
// network step belong to no sweep.
func networkSweeps(overhead *Overhead) []networkSweep {
	if overhead == nil {
		return nil
	}
	type key struct {
		path, plan string
		rate       int
	}
	var sweeps []networkSweep
	index := map[key]int{}
	for _, load := range overhead.Loads {
		if load.Network == nil {
			continue
		}
		k := key{load.Network.Path, load.Network.Plan, load.Rate}
		position, seen := index[k]
		if !seen {
			position = len(sweeps)
			index[k] = position
			sweeps = append(sweeps, networkSweep{Path: k.path, Plan: k.plan, Rate: k.rate, Fraction: load.Fraction})
		}
		sweep := &sweeps[position]
		if load.NotApplicable != "" {
			sweep.Notes = append(sweep.Notes, fmt.Sprintf("%s added: not run, %s", rttText(load.Network.RTTMs), load.NotApplicable))
			continue
		}
		sweep.BaselineWithoutFaults = sweep.BaselineWithoutFaults || load.BaselineWithoutFaults
		sweep.Steps = append(sweep.Steps, load)
	}
	for i := range sweeps {
		sweep := &sweeps[i]
		sort.SliceStable(sweep.Steps, func(a, b int) bool { return sweep.Steps[a].Network.RTTMs < sweep.Steps[b].Network.RTTMs })
		seen := map[string]bool{}
		for _, step := range sweep.Steps {
			for _, row := range step.Rows {
				if row.NoiseFloor && sweep.NoiseFloor == "" {
					sweep.NoiseFloor = row.Slot
				}
				if row.Skipped() != "" {
					note := fmt.Sprintf("%s: %s", row.Slot, row.Skipped())
					if !seen[note] {
						seen[note] = true
						sweep.Notes = append(sweep.Notes, note)
					}
				}
				if !seen[row.Slot] {
					seen[row.Slot] = true
					sweep.Slots = append(sweep.Slots, row.Slot)
				}
			}
		}
		if sweep.NoiseFloor != "" {
			// The noise floor first, whatever order the steps listed it in.
			slots := []string{sweep.NoiseFloor}
			for _, slot := range sweep.Slots {
				if slot != sweep.NoiseFloor {
					slots = append(slots, slot)
				}
			}
			sweep.Slots = slots
		}
	}
	return sweeps
}

// row returns the row of slot at step, ok false when the slot did not
// run there (absent, or the plan could not touch it).
func (s networkSweep) row(step int, slot string) (OverheadRow, bool) {
	for _, row := range s.Steps[step].Rows {
		if row.Slot == slot {
			return row, row.Skipped() == ""
		}
	}
	return OverheadRow{}, false
}

// baselineRow returns a row of step that carries the baseline's values
// (every row of a load holds the same ones), or an empty row.
func (s networkSweep) baselineRow(step int) OverheadRow {
	for _, row := range s.Steps[step].Rows {
		if len(row.Throughput.Baseline) > 0 {
			return row
		}
	}
	return OverheadRow{}
}

// hasEndToEnd reports whether any slot of the sweep measured end-to-end
// latency (the rounds had live consumers).
func (s networkSweep) hasEndToEnd() bool {
	for _, step := range s.Steps {
		for _, row := range step.Rows {
			if len(row.EndToEndP99.Ratios) > 0 {
				return true
			}
		}
	}
	return false
}

// hasMeasuredRTT reports whether any step measured its round trip.
func (s networkSweep) hasMeasuredRTT() bool {
	for _, step := range s.Steps {
		if step.Network.MeasuredRTTMs > 0 {
			return true
		}
	}
	return false
}

// networkMeasure is one measure a sweep's table and charts compare.
type networkMeasure struct {
	// Key names the measure in chart ids and data attributes; Name in
	// the tables; Title in chart titles.
	Key, Name, Title string
	// Better says which way is better, in words.
	Better  string
	pick    func(OverheadRow) RatioStat
	verdict func(OverheadRow) string
	band    func(NoiseBand) (low, high float64)
}

// measures are the measures of the sweep: throughput and the p99
// acknowledgement latency, and the p99 end-to-end latency when measured.
func (s networkSweep) measures() []networkMeasure {
	measures := []networkMeasure{
		{Key: "throughput", Name: "throughput ratio", Title: "throughput", Better: "higher is better",
			pick:    func(row OverheadRow) RatioStat { return row.Throughput },
			verdict: func(row OverheadRow) string { return row.ThroughputVerdict() },
			band:    func(band NoiseBand) (float64, float64) { return band.ThroughputLow, band.ThroughputHigh }},
		{Key: "ack-p99", Name: "p99 ack ratio", Title: "p99 acknowledgement latency", Better: "lower is better",
			pick:    func(row OverheadRow) RatioStat { return row.AckP99 },
			verdict: func(row OverheadRow) string { return row.AckP99.Verdict },
			band:    func(band NoiseBand) (float64, float64) { return band.AckP99Low, band.AckP99High }},
	}
	if s.hasEndToEnd() {
		measures = append(measures, networkMeasure{Key: "e2e-p99", Name: "p99 end-to-end ratio", Title: "p99 end-to-end latency",
			Better:  "lower is better",
			pick:    func(row OverheadRow) RatioStat { return row.EndToEndP99 },
			verdict: func(row OverheadRow) string { return row.EndToEndP99.Verdict },
			band:    func(band NoiseBand) (float64, float64) { return band.EndToEndP99Low, band.EndToEndP99High }})
	}
	return measures
}

// cell renders slot's measure at step for the tables: "floor ±2.1%" on
// the noise floor's row, the ratio with its interval and verdict
// ("0.52 [0.50, 0.55] slower", "≈" for within noise) on the others, "-"
// when the slot did not run there.
func (s networkSweep) cell(step int, slot string, measure networkMeasure) string {
	row, ok := s.row(step, slot)
	switch {
	case !ok:
		return "-"
	case row.NoiseFloor:
		return "floor " + BandText(measure.band(s.Steps[step].NoiseBand))
	}
	return ratioVerdict(measure.pick(row), measure.verdict(row))
}

// pathText says in words which path a sweep slowed ("between the
// clients and the brokers"); pathShort is its arrow form.
func pathText(path string) string {
	switch path {
	case "clients":
		return "between the clients and the brokers"
	case "follower":
		return "between a follower and the other brokers"
	}
	return "on the " + path + " path"
}

// pathShort names a path for chart titles: "clients ↔ brokers".
func pathShort(path string) string {
	switch path {
	case "clients":
		return "clients ↔ brokers"
	case "follower":
		return "follower ↔ other brokers"
	}
	return path
}

// planText names the fault plan under a sweep's network in words.
func planText(plan string) string {
	if plan == "" || plan == "none" {
		return "no other fault"
	}
	return "under the fault plan " + plan
}

// rttText renders a round-trip time added: "0 ms", "0.5 ms", "20 ms".
func rttText(ms float64) string {
	return strconv.FormatFloat(ms, 'f', -1, 64) + " ms"
}

// networkSweepTitle says what a sweep's table or charts are about.
func networkSweepTitle(overhead *Overhead, sweep networkSweep) string {
	load := LoadText(sweep.Rate)
	if sweep.Fraction > 0 {
		load = fmt.Sprintf("%.0f%% of the sustainable rate (%d records/s offered)", 100*sweep.Fraction, sweep.Rate)
	}
	title := fmt.Sprintf("round-trip time added %s (%s), %s, at %s", pathText(sweep.Path), pathShort(sweep.Path),
		planText(sweep.Plan), load)
	if sweep.BaselineWithoutFaults {
		title += fmt.Sprintf(" (%s ran without the plan's faults: they cannot touch it)", overhead.Baseline)
	}
	return title
}

// WriteNetworkCost prints the cost against round-trip time of an
// overhead section whose loads swept a degraded network: for each path,
// fault plan and offered load, one block whose rows are the slots (the
// A/A noise floor first) and whose columns are the round-trip times
// added, for each measure: the median ratio to the baseline at the same
// round-trip time with its bootstrap interval and verdict. Above them,
// the baseline's own median throughput and p99 latencies at each step,
// and the round trip measured on the path when it was. Columns that do
// not fit SummaryWidth continue in a second table under the first. It
// prints nothing when no load carries a network step.
func WriteNetworkCost(w io.Writer, results *Results) error {
	overhead := results.Overhead
	if overhead == nil {
		return nil
	}
	sweeps := networkSweeps(overhead)
	if len(sweeps) == 0 {
		return nil
	}
	for _, sweep := range sweeps {
		fmt.Fprintln(w)
		WriteWrapped(w, "", fmt.Sprintf("cost against %s; each slot's ratio to %s at the same added round-trip time, "+
			"median of %d rounds [%.0f%% bootstrap interval]", networkSweepTitle(overhead, sweep), overhead.Baseline,
			overhead.Rounds, overhead.Confidence*100), SummaryWidth)
		if len(sweep.Steps) == 0 {
			for _, note := range sweep.Notes {
				WriteWrapped(w, "  ", note, SummaryWidth)
			}
			continue
		}
		if err := writeColumns(w, networkSweepRows(overhead, sweep), SummaryWidth); err != nil {
			return fmt.Errorf("write network cost: %w", err)
		}
		var links []string
		for _, step := range sweep.Steps {
			if step.Network.Link != "" {
				links = append(links, rttText(step.Network.RTTMs)+": "+step.Network.Link)
			}
		}
		if len(links) > 0 {
			WriteWrapped(w, "  ", "each direction of the path: "+strings.Join(links, "; "), SummaryWidth)
		}
		for _, note := range sweep.Notes {
			WriteWrapped(w, "  ", note, SummaryWidth)
		}
	}
	WriteWrapped(w, "", fmt.Sprintf("0 ms is the same path through the same proxies without delay, the reference; each direction "+
		"is delayed by half the round-trip time added. A ratio is the slot over %[1]s in the same round at the same round-trip "+
		"time: what the guarantee costs over that network. The %[1]s lines give its own values: what the network costs. "+
		"A ratio reads faster or slower only when its interval lies outside that step's A/A floor (floor ±x), else ≈ (within noise).",
		overhead.Baseline), SummaryWidth)
	return nil
}

// networkSweepRows are the rows of a sweep's text table: the steps
// heading the columns, the measured round trip and the baseline's values,
// then each measure's slots under a heading line.
func networkSweepRows(overhead *Overhead, sweep networkSweep) []alignedRow {
	head := []string{"  added round-trip time"}
	for _, step := range sweep.Steps {
		head = append(head, rttText(step.Network.RTTMs))
	}
	rows := []alignedRow{{cells: head}}
	if sweep.hasMeasuredRTT() {
		cells := []string{"  measured round trip"}
		for _, step := range sweep.Steps {
			cells = append(cells, millisText(step.Network.MeasuredRTTMs))
		}
		rows = append(rows, alignedRow{cells: cells})
	}
	throughput := []string{"  " + overhead.Baseline + " rec/s"}
	ackP99 := []string{"  " + overhead.Baseline + " ack p99"}
	endToEnd := []string{"  " + overhead.Baseline + " e2e p99"}
	for step := range sweep.Steps {
		base := sweep.baselineRow(step)
		throughput = append(throughput, number(base.Throughput.BaselineMedian(), 0))
		ackP99 = append(ackP99, millisText(base.AckP99.BaselineMedian()))
		endToEnd = append(endToEnd, millisText(base.EndToEndP99.BaselineMedian()))
	}
	rows = append(rows, alignedRow{cells: throughput}, alignedRow{cells: ackP99})
	if sweep.hasEndToEnd() {
		rows = append(rows, alignedRow{cells: endToEnd})
	}
	for _, measure := range sweep.measures() {
		rows = append(rows, alignedRow{heading: fmt.Sprintf("%s to %s (%s):", measure.Name, overhead.Baseline, measure.Better)})
		for _, slot := range sweep.Slots {
			label := "  " + slot
			if slot == sweep.NoiseFloor {
				label += " noise floor"
			}
			cells := []string{label}
			for step := range sweep.Steps {
				cells = append(cells, sweep.cell(step, slot, measure))
			}
			rows = append(rows, alignedRow{cells: cells})
		}
	}
	return rows
}

// writeColumns prints rows as writeAligned does, but when the columns
// after the first do not fit width, in several tables one under the
// other, each repeating the first column and taking as many of the rest
// as fit (at least one).
func writeColumns(w io.Writer, rows []alignedRow, width int) error {
	columns := 0
	for _, row := range rows {
		columns = max(columns, len(row.cells))
	}
	widths := make([]int, columns)
	for _, row := range rows {
		for index, cell := range row.cells {
			widths[index] = max(widths[index], utf8.RuneCountInString(cell))
		}
	}
	for start := 1; ; {
		end, used := start, widths[0]
		for end < columns && (end == start || used+2+widths[end] <= width) {
			used += 2 + widths[end]
			end++
		}
		var chunk []alignedRow
		for _, row := range rows {
			if row.heading != "" {
				chunk = append(chunk, row)
				continue
			}
			cells := []string{row.cells[0]}
			for index := start; index < end; index++ {
				cell := ""
				if index < len(row.cells) {
					cell = row.cells[index]
				}
				cells = append(cells, cell)
			}
			chunk = append(chunk, alignedRow{cells: cells})
		}
		if start > 1 {
			if _, err := fmt.Fprintln(w, "  (continued)"); err != nil {
				return err
			}
		}
		if err := writeAligned(w, chunk); err != nil {
			return err
		}
		if end >= columns {
			return nil
		}
		start = end
	}
}
