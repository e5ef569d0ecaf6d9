package report

import (
	"fmt"
	"html"
	"html/template"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// networkView is the dashboard's cost against round-trip time for one
// results file's sweep (one path, fault plan and offered load): a chart
// per measure, one of absolute throughput, and the table under them.
type networkView struct {
	File  *fileView
	Title string
	// Path, Plan and Rate identify the sweep (data attributes).
	Path, Plan string
	Rate       int
	Charts     []chartView
	// Steps head the table's columns ("0 ms", "5 ms"); Span is how many
	// columns the table has.
	Steps []string
	Span  int
	// Lines are the rows above the measures: the measured round trip,
	// the baseline's own values.
	Lines []networkLine
	// Measures are the ratio rows, one block per measure.
	Measures []networkTableMeasure
	// Links say how each step impaired each direction; Notes what did
	// not run.
	Links, Notes []string
}

// networkLine is one row of plain values above a network table's ratios.
type networkLine struct {
	Name  string
	Cells []string
}

// networkTableMeasure is one measure's rows in a network table.
type networkTableMeasure struct {
	Key, Name, Better string
	Rows              []networkTableRow
}

// networkTableRow is one slot's cells across the steps.
type networkTableRow struct {
	Slot       string
	NoiseFloor bool
	Cells      []networkCell
}

// networkCell is one ratio with its verdict; Class colours it as the
// overhead tables do ("worse" or "").
type networkCell struct {
	Text, Class string
}

// networkViews builds the cost against round-trip time of every file
// whose overhead section swept a degraded network, file by file, so that
// files compared side by side follow one another.
func networkViews(files []*fileView) []networkView {
	var views []networkView
	for _, file := range files {
		overhead := file.Results.Overhead
		for index, sweep := range networkSweeps(overhead) {
			view := networkView{File: file, Title: file.Label + ": " + networkSweepTitle(overhead, sweep),
				Path: sweep.Path, Plan: sweep.Plan, Rate: sweep.Rate, Notes: sweep.Notes}
			if len(sweep.Steps) == 0 {
				views = append(views, view)
				continue
			}
			id := fmt.Sprintf("network-%d-%d", file.Index, index)
			for _, measure := range sweep.measures() {
				view.Charts = append(view.Charts, networkRatioChart(id, overhead, sweep, measure))
			}
			view.Charts = append(view.Charts, networkThroughputChart(id, overhead, sweep))
			fillNetworkTable(&view, overhead, sweep)
			views = append(views, view)
		}
	}
	return views
}

// fillNetworkTable puts the text table's rows into view, with classes.
func fillNetworkTable(view *networkView, overhead *Overhead, sweep networkSweep) {
	measured := networkLine{Name: "round trip measured on the path"}
	throughput := networkLine{Name: overhead.Baseline + " records/s (median)"}
	ackP99 := networkLine{Name: overhead.Baseline + " p99 ack ms (median)"}
	endToEnd := networkLine{Name: overhead.Baseline + " p99 end-to-end ms (median)"}
	for step, load := range sweep.Steps {
		view.Steps = append(view.Steps, rttText(load.Network.RTTMs))
		measured.Cells = append(measured.Cells, millisText(load.Network.MeasuredRTTMs))
		base := sweep.baselineRow(step)
		throughput.Cells = append(throughput.Cells, number(base.Throughput.BaselineMedian(), 0))
		ackP99.Cells = append(ackP99.Cells, number(base.AckP99.BaselineMedian(), 2))
		endToEnd.Cells = append(endToEnd.Cells, number(base.EndToEndP99.BaselineMedian(), 2))
		if load.Network.Link != "" {
			view.Links = append(view.Links, rttText(load.Network.RTTMs)+": "+load.Network.Link)
		}
	}
	view.Span = len(view.Steps) + 1
	if sweep.hasMeasuredRTT() {
		view.Lines = append(view.Lines, measured)
	}
	view.Lines = append(view.Lines, throughput, ackP99)
	if sweep.hasEndToEnd() {
		view.Lines = append(view.Lines, endToEnd)
	}
	for _, measure := range sweep.measures() {
		table := networkTableMeasure{Key: measure.Key, Name: fmt.Sprintf("%s to %s", measure.Name, overhead.Baseline), Better: measure.Better}
		for _, slot := range sweep.Slots {
			row := networkTableRow{Slot: slot, NoiseFloor: slot == sweep.NoiseFloor}
			for step := range sweep.Steps {
				cell := networkCell{Text: sweep.cell(step, slot, measure)}
				if slotRow, ok := sweep.row(step, slot); ok && !slotRow.NoiseFloor {
					cell.Class = verdictClass(measure.pick(slotRow).Verdict)
					if measure.Key == "throughput" && slotRow.KeptUp != nil && *slotRow.KeptUp {
						cell.Class = "" // keeping up a fixed load is no cost
					}
				}
				row.Cells = append(row.Cells, cell)
			}
			table.Rows = append(table.Rows, row)
		}
		view.Measures = append(view.Measures, table)
	}
}

// networkAxis puts the steps of a sweep on a categorical x axis: step i
// at x = i, labelled with its round-trip time, so that 0 ms shows and
// 1 ms and 50 ms are as far apart as their neighbours.
func networkAxis(p *plot.Plot, sweep networkSweep) {
	var ticks plot.ConstantTicks
	for index, step := range sweep.Steps {
		ticks = append(ticks, plot.Tick{Value: float64(index), Label: rttText(step.Network.RTTMs)})
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = -0.5, float64(len(sweep.Steps))-0.5
}

// networkXLabel is the x axis's label of every network chart.
const networkXLabel = "round-trip time added (steps evenly spaced)"

// intervalPoints are medians with their intervals, as the error bars
// take them (the distances below and above each median).
type intervalPoints struct {
	plotter.XYs
	plotter.YErrors
}

// networkRatioChart draws one measure of a sweep: each slot's median
// ratio to the baseline against the round-trip time added, with its
// 95 % interval as an error bar, over the A/A noise floor drawn as a
// grey band around 1 (each step's own).
func networkRatioChart(id string, overhead *Overhead, sweep networkSweep, measure networkMeasure) chartView {
	title := fmt.Sprintf("%s relative to %s against added round-trip time (%s), median and %.0f%% interval",
		measure.Title, overhead.Baseline, pathShort(sweep.Path), overhead.Confidence*100)
	p := newPlot(title, networkXLabel, "median ratio to "+overhead.Baseline)
	networkAxis(p, sweep)
	low, high := 1.0, 1.0
	var legend []legendEntry
	// The noise floor: a band from each step's low to its high.
	var band plotter.XYs
	for step, load := range sweep.Steps {
		if bandLow, _ := measure.band(load.NoiseBand); bandLow > 0 {
			band = append(band, plotter.XY{X: float64(step), Y: bandLow})
		}
	}
	for step := len(sweep.Steps) - 1; step >= 0; step-- {
		if bandLow, bandHigh := measure.band(sweep.Steps[step].NoiseBand); bandLow > 0 && bandHigh > 0 {
			band = append(band, plotter.XY{X: float64(step), Y: bandHigh})
		}
	}
	if len(band) == 2 { // one step: a band of a little width
		band = plotter.XYs{{X: band[0].X - 0.2, Y: band[0].Y}, {X: band[0].X + 0.2, Y: band[0].Y},
			{X: band[1].X + 0.2, Y: band[1].Y}, {X: band[1].X - 0.2, Y: band[1].Y}}
	}
	if len(band) >= 3 {
		if polygon, err := plotter.NewPolygon(band); err == nil {
			polygon.Color, polygon.LineStyle.Width = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}, 0
			p.Add(polygon)
			for _, point := range band {
				low, high = math.Min(low, point.Y), math.Max(high, point.Y)
			}
			legend = append(legend, legendEntry{Name: "noise floor: the A/A interval made symmetric around 1 (grey band)",
				Color: "#dddddd"})
		}
	}
	if one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(sweep.Steps)) - 0.5, Y: 1}}); err == nil {
		one.Color, one.Dashes, one.Width = color.Gray{Y: 0x55}, []vg.Length{vg.Points(4), vg.Points(3)}, vg.Points(1)
		p.Add(one)
		legend = append(legend, legendEntry{Name: "1 = same as " + overhead.Baseline, Color: "#555555", Dashed: true})
	}
	var slots []string
	for _, slot := range sweep.Slots {
		if slot != sweep.NoiseFloor {
			slots = append(slots, slot)
		}
	}
	drawn := 0
	for index, slot := range slots {
		// Slots side by side around each step, so that their bars do not
		// hide one another.
		offset := 0.0
		if len(slots) > 1 {
			offset = (float64(index) - float64(len(slots)-1)/2) * math.Min(0.5/float64(len(slots)), 0.08)
		}
		var points intervalPoints
		for step := range sweep.Steps {
			row, ok := sweep.row(step, slot)
			if !ok {
				continue
			}
			stat := measure.pick(row)
			if len(stat.Ratios) == 0 || stat.MedianRatio <= 0 {
				continue
			}
			points.XYs = append(points.XYs, plotter.XY{X: float64(step) + offset, Y: stat.MedianRatio})
			points.YErrors = append(points.YErrors, struct{ Low, High float64 }{
				stat.MedianRatio - math.Min(stat.CILow, stat.MedianRatio), math.Max(stat.CIHigh, stat.MedianRatio) - stat.MedianRatio})
			low, high = math.Min(low, math.Min(stat.CILow, stat.MedianRatio)), math.Max(high, math.Max(stat.CIHigh, stat.MedianRatio))
		}
		if len(points.XYs) == 0 {
			continue
		}
		colour := seriesColor(index)
		if addLine(p, &legend, slot, points.XYs, colour, false, true) != nil {
			continue
		}
		if bars, err := plotter.NewYErrorBars(points); err == nil {
			bars.Color, bars.Width = colour, vg.Points(1.4)
			p.Add(bars)
		}
		drawn++
	}
	pad := math.Max((high-low)*0.08, 0.02)
	p.Y.Min, p.Y.Max = math.Max(low-pad, 0), high+pad
	view := captionedChart(fmt.Sprintf("%s-%s", id, measure.Key), p, legend,
		"error bars: the 95% bootstrap interval over the rounds; "+measure.Better)
	if drawn == 0 {
		view.SVG, view.Note = "", "no slot measured "+measure.Title
	}
	return view
}

// networkThroughputChart draws each slot's median throughput in
// records/s against the round-trip time added, the baseline's in black:
// where a line falls as the round trip grows, the slot waits on round
// trips (a transaction's commit does several).
func networkThroughputChart(id string, overhead *Overhead, sweep networkSweep) chartView {
	title := fmt.Sprintf("acknowledged records/s of each slot against added round-trip time (%s), median of the rounds",
		pathShort(sweep.Path))
	p := newPlot(title, networkXLabel, "acknowledged records/s (median)")
	networkAxis(p, sweep)
	var legend []legendEntry
	highest := 0.0
	var baseline plotter.XYs
	for step := range sweep.Steps {
		if value := sweep.baselineRow(step).Throughput.BaselineMedian(); value > 0 {
			baseline = append(baseline, plotter.XY{X: float64(step), Y: value})
			highest = math.Max(highest, value)
		}
	}
	if len(baseline) > 0 {
		_ = addLine(p, &legend, overhead.Baseline+" (the baseline)", baseline, color.Black, false, true)
	}
	index := 0
	for _, slot := range sweep.Slots {
		if slot == sweep.NoiseFloor {
			continue // the baseline's mode again: the line above
		}
		var points plotter.XYs
		for step := range sweep.Steps {
			if row, ok := sweep.row(step, slot); ok {
				if value := row.Throughput.Median(); value > 0 {
					points = append(points, plotter.XY{X: float64(step), Y: value})
					highest = math.Max(highest, value)
				}
			}
		}
		if len(points) > 0 {
			_ = addLine(p, &legend, slot, points, seriesColor(index), false, true)
		}
		index++
	}
	p.Y.Min = 0
	p.Y.Tick.Marker = humanTicks{}
	setHeadroom(p, highest)
	view := captionedChart(id+"-records", p, legend,
		"where a line falls as the round trip grows, that slot waits on round trips rather than on the broker")
	if highest == 0 {
		view.SVG, view.Note = "", "no throughput measured"
	}
	return view
}

// captionedChart renders p as a panel whose title is the figure's
// caption (too long to fit above the plot): the SVG itself has none but
// keeps it as its label for screen readers.
func captionedChart(id string, p *plot.Plot, legend []legendEntry, note string) chartView {
	title := p.Title.Text
	p.Title.Text = ""
	view := chart(id, p, panelWidth, panelHeight, legend, note)
	view.Title = title
	view.SVG = template.HTML(strings.Replace(string(view.SVG), `aria-label=""`,
		`aria-label="`+html.EscapeString(title)+`"`, 1)) // the SVG is renderChart's, the title escaped
	return view
}
