package report

import (
	"fmt"
	"math"

	"github.com/exactly-eos/exactly/loadgen/stats"
)

// Comparing two results files.
//
// A difference between two files is shown as one only when both files
// measured it over rounds. For a slot of an overhead section (keyed by
// fault plan, offered load and slot, [slotKeyOf]) present with at least
// two rounds in both files, the cell gives the ratio of medians, file B's
// over file A's, with a bootstrap interval that resamples each file's
// rounds independently ([stats.BootstrapRatioOfMedians]; the files'
// rounds are not paired, so no per-round ratio exists). It is coloured
// better or worse only when that whole interval lies outside the noise
// floor; otherwise it reads "no difference (within noise ±x%)".
//
// The floor is the wider of the two files' A/A bands for the measure at
// that fault plan and load ([stats.WiderBand] of each file's
// [OverheadLoad.NoiseBand]). Each A/A band is how far two identical
// configurations measured apart in that invocation; a difference between
// the files that either invocation's own noise could produce is not
// evidence, so the floor must cover both. Pooling the two A/A rows into one
// band would let a quiet file narrow the floor of a noisy one. The floor
// does not cover drift between the invocations (another load on the
// machine in between): the interval of the unpaired ratio carries only
// the spread within each file's rounds.
//
// Everything else (runs measured once, or a slot with rounds in one file
// only) is shown side by side with "one run each: no interval", or
// "rounds in one file only: no interval", and no colour: one run each
// has no spread to judge a difference against.

// slotKey names one slot of an overhead table across results files.
type slotKey struct {
	// Faults is the fault plan of the rounds ("": none).
	Faults string
	// Rate is the offered load (0: saturation).
	Rate int
	Slot string
}

// slotKeyOf is the key of slot at load; the baseline slot is keyed by
// the overhead section's baseline name.
func slotKeyOf(load OverheadLoad, slot string) slotKey {
	return slotKey{Faults: load.Faults, Rate: load.Rate, Slot: slot}
}

// Label names the slot on the page: "idempotent at saturation, no faults".
func (key slotKey) Label() string {
	faults := "no faults"
	if key.Faults != "" && key.Faults != "none" {
		faults = "under " + key.Faults
	}
	load := "saturation"
	if key.Rate > 0 {
		load = fmt.Sprintf("%d records/s", key.Rate)
	}
	return fmt.Sprintf("%s at %s, %s", key.Slot, load, faults)
}

// compareMeasure is one measure the files are compared on. Adding a
// measure to the overhead rows (end-to-end p99, recovery time) means
// adding one entry to compareMeasures.
type compareMeasure struct {
	// Name heads the measure's columns.
	Name           string
	HigherIsBetter bool
	// format renders one value ("-" for none).
	format func(float64) string
	// rounds picks the measure's statistic from an overhead row.
	rounds func(OverheadRow) RatioStat
	// band picks the measure's A/A band.
	band func(NoiseBand) (low, high float64)
	// single is the measure of one run (nil: not measured per run).
	single func(*Run) float64
}

var compareMeasures = []compareMeasure{
	{Name: "records/s", HigherIsBetter: true, format: func(v float64) string { return number(v, 0) },
		rounds: func(row OverheadRow) RatioStat { return row.Throughput },
		band:   func(band NoiseBand) (float64, float64) { return band.ThroughputLow, band.ThroughputHigh },
		single: func(run *Run) float64 { return run.Throughput.RecordsPerSecond }},
	{Name: "ack p99 ms", HigherIsBetter: false, format: func(v float64) string { return number(v, 2) },
		rounds: func(row OverheadRow) RatioStat { return row.AckP99 },
		band:   func(band NoiseBand) (float64, float64) { return band.AckP99Low, band.AckP99High },
		single: func(run *Run) float64 { return run.Latency[LatencyProduceAck].Percentile(99) }},
	{Name: "e2e p99 ms", HigherIsBetter: false, format: func(v float64) string { return number(v, 2) },
		rounds: func(row OverheadRow) RatioStat { return row.EndToEndP99 },
		band:   func(band NoiseBand) (float64, float64) { return band.EndToEndP99Low, band.EndToEndP99High },
		single: func(run *Run) float64 { return run.Latency[LatencyEndToEnd].Percentile(99) }},
}

// Texts of cells that have no interval.
const (
	oneRunEach       = "one run each: no interval"
	roundsInOneFile  = "rounds in one file only: no interval"
	withinNoiseStart = "no difference (within noise "
)

// slotRounds is one file's rounds of one slot: per measure, the values
// of the rounds and the file's A/A band at the slot's load.
type slotRounds struct {
	values [][]float64
	bands  []stats.Interval
}

// slotsOf returns the slots of a file's overhead section in table order,
// the baseline first at each load.
func slotsOf(results *Results) ([]slotKey, map[slotKey]slotRounds) {
	slots := map[slotKey]slotRounds{}
	overhead := results.Overhead
	if overhead == nil {
		return nil, slots
	}
	var keys []slotKey
	add := func(key slotKey, load OverheadLoad, pick func(compareMeasure) []float64) {
		if _, seen := slots[key]; seen {
			return
		}
		rounds := slotRounds{}
		for _, measure := range compareMeasures {
			low, high := measure.band(load.NoiseBand)
			rounds.values = append(rounds.values, pick(measure))
			rounds.bands = append(rounds.bands, stats.Interval{Median: 1, Low: low, High: high})
		}
		keys = append(keys, key)
		slots[key] = rounds
	}
	for _, load := range overhead.Loads {
		if len(load.Rows) == 0 {
			continue
		}
		first := load.Rows[0]
		add(slotKeyOf(load, overhead.Baseline), load, func(m compareMeasure) []float64 { return m.rounds(first).Baseline })
		for _, row := range load.Rows {
			add(slotKeyOf(load, row.Slot), load, func(m compareMeasure) []float64 { return m.rounds(row).Values })
		}
	}
	return keys, slots
}

// slotRunNames are the names of the runs an overhead section groups into
// slots; the comparison shows them by slot, not one by one.
func slotRunNames(results *Results) map[string]bool {
	names := map[string]bool{}
	if results.Overhead == nil {
		return names
	}
	for _, load := range results.Overhead.Loads {
		for _, name := range load.BaselineRuns {
			names[name] = true
		}
		for _, row := range load.Rows {
			for _, name := range row.Runs {
				names[name] = true
			}
		}
	}
	return names
}

// bootstrapSettings are the resamples, level and random stream of the
// cross-file intervals: the reference file's overhead settings, or 2000
// resamples at 95 % from stream 1. A fixed stream makes the same files
// give the same page.
func bootstrapSettings(reference *Results) (resamples int, level float64, stream uint64) {
	resamples, level, stream = 2000, 0.95, 1
	if overhead := reference.Overhead; overhead != nil {
		if overhead.Resamples > 0 {
			resamples = overhead.Resamples
		}
		if overhead.Confidence > 0 && overhead.Confidence < 1 {
			level = overhead.Confidence
		}
		if overhead.RandomStream != 0 {
			stream = overhead.RandomStream
		}
	}
	return resamples, level, stream
}

// compareRounds judges one measure of one slot measured over rounds in
// both files: the ratio of medians (other over reference) with its
// interval, coloured only when the interval clears the wider A/A band.
func compareRounds(measure compareMeasure, reference, other []float64, referenceBand, otherBand stats.Interval,
	resamples int, level float64, stream uint64) measureCell {
	interval := stats.BootstrapRatioOfMedians(reference, other, resamples, level, stream)
	if math.IsNaN(interval.Median) {
		return measureCell{Comparison: "-"}
	}
	text := ratioInterval(interval)
	if !validBand(referenceBand) || !validBand(otherBand) {
		return measureCell{Comparison: text + " not judged: no A/A floor in both files"}
	}
	floor := stats.WiderBand(stats.NoiseBand(referenceBand), stats.NoiseBand(otherBand))
	switch stats.VerdictBeyond(interval, floor, measure.HigherIsBetter) {
	case stats.Faster:
		return measureCell{Comparison: text + " better, beyond noise " + BandText(floor.Low, floor.High), Class: "better"}
	case stats.Slower:
		return measureCell{Comparison: text + " worse, beyond noise " + BandText(floor.Low, floor.High), Class: "worse"}
	}
	return measureCell{Comparison: text + " " + withinNoiseStart + BandText(floor.Low, floor.High) + ")"}
}

func validBand(band stats.Interval) bool { return band.Low > 0 && band.High > 0 }

// ratioInterval renders "×1.87 [1.62, 2.10]", with more decimals when
// the interval is narrow.
func ratioInterval(interval stats.Interval) string {
	if interval.High-interval.Low < 0.01 {
		return fmt.Sprintf("×%.4f [%.4f, %.4f]", interval.Median, interval.Low, interval.High)
	}
	return fmt.Sprintf("×%.2f [%.2f, %.2f]", interval.Median, interval.Low, interval.High)
}

// compareSlots builds one row per slot of any file's overhead section.
func compareSlots(files []*fileView) []comparisonRow {
	type fileSlots struct {
		keys  []slotKey
		slots map[slotKey]slotRounds
	}
	all := make([]fileSlots, len(files))
	var order []slotKey
	seen := map[slotKey]bool{}
	for index, file := range files {
		keys, slots := slotsOf(file.Results)
		all[index] = fileSlots{keys, slots}
		for _, key := range keys {
			if !seen[key] {
				seen[key] = true
				order = append(order, key)
			}
		}
	}
	resamples, level, stream := bootstrapSettings(files[0].Results)
	var rows []comparisonRow
	for _, key := range order {
		row := comparisonRow{Name: key.Label(), Slot: key.Slot, Rate: key.Rate, Faults: key.Faults}
		reference, referenceHas := all[0].slots[key]
		for index := range files {
			rounds, has := all[index].slots[key]
			if !has {
				row.Cells = append(row.Cells, absentCell())
				continue
			}
			cell := comparisonCell{}
			for m, measure := range compareMeasures {
				values := rounds.values[m]
				median := 0.0
				if stats.UsableCount(values) > 0 {
					median = stats.Median(positives(values))
				}
				measured := measureCell{Value: measure.format(median), Comparison: "-"}
				if index > 0 && referenceHas {
					measured.Comparison = sideBySide(stats.UsableCount(reference.values[m]), stats.UsableCount(values))
					if stats.UsableCount(reference.values[m]) >= 2 && stats.UsableCount(values) >= 2 {
						judged := compareRounds(measure, reference.values[m], values, reference.bands[m], rounds.bands[m], resamples, level, stream)
						measured.Comparison, measured.Class = judged.Comparison, judged.Class
					}
				}
				cell.Measures = append(cell.Measures, measured)
			}
			row.Cells = append(row.Cells, cell)
		}
		rows = append(rows, row)
	}
	return rows
}

// sideBySide is the text of a pair of values without an interval; "-"
// when one side measured nothing.
func sideBySide(referenceRounds, otherRounds int) string {
	switch {
	case referenceRounds == 0 || otherRounds == 0:
		return "-"
	case referenceRounds >= 2 || otherRounds >= 2:
		return roundsInOneFile
	}
	return oneRunEach
}

func positives(values []float64) []float64 {
	var kept []float64
	for _, value := range values {
		if value > 0 && !math.IsInf(value, 0) {
			kept = append(kept, value)
		}
	}
	return kept
}

func absentCell() comparisonCell {
	cell := comparisonCell{Status: "absent"}
	for range compareMeasures {
		cell.Measures = append(cell.Measures, measureCell{Value: "-", Comparison: "-"})
	}
	return cell
}

// compareRuns builds one row per run name that no overhead section groups
// into a slot: each run is one measurement, so the values stand side by
// side without a ratio or a colour.
func compareRuns(files []*fileView, names []string) []comparisonRow {
	grouped := map[string]bool{}
	for _, file := range files {
		for name := range slotRunNames(file.Results) {
			grouped[name] = true
		}
	}
	var rows []comparisonRow
	for _, name := range names {
		if grouped[name] {
			continue
		}
		reference := files[0].run(name)
		row := comparisonRow{Name: name}
		for index, file := range files {
			run := file.run(name)
			if run == nil {
				row.Cells = append(row.Cells, absentCell())
				continue
			}
			cell := comparisonCell{}
			if !charted(run) {
				cell.Status = run.Status
			}
			for _, measure := range compareMeasures {
				measured := measureCell{Value: "-", Comparison: "-"}
				if charted(run) && measure.single != nil {
					measured.Value = measure.format(measure.single(run))
					if index > 0 && charted(reference) && measure.single(run) > 0 && measure.single(reference) > 0 {
						measured.Comparison = oneRunEach
					}
				}
				cell.Measures = append(cell.Measures, measured)
			}
			row.Cells = append(row.Cells, cell)
		}
		rows = append(rows, row)
	}
	return rows
}
