package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/exactly-eos/exactly/loadgen/modes"
)

// charted reports whether a run's measurements belong on the charts: an
// unsupported run ran with whatever the client fell back to, so its numbers
// do not describe its mode, and a not-applicable one did not run (the
// tables still list both).
func charted(run *Run) bool {
	return run != nil && run.Status != StatusUnsupported && run.Status != StatusNotApplicable
}

// throughputCharts draws records/s per run and the ratio to the baseline
// run, one bar per results file in each group.
func throughputCharts(files []*fileView, names []string) (throughput, overhead chartView) {
	rates := make([][]float64, len(files))
	ratios := make([][]float64, len(files))
	var left []string
	for fileIndex, file := range files {
		rates[fileIndex] = make([]float64, len(names))
		ratios[fileIndex] = make([]float64, len(names))
		for nameIndex, name := range names {
			run := file.run(name)
			if run == nil {
				continue
			}
			if !charted(run) {
				left = append(left, file.Letter+" "+name)
				continue
			}
			rates[fileIndex][nameIndex] = run.Throughput.RecordsPerSecond
			ratios[fileIndex][nameIndex] = run.Throughput.RatioToBaseline
		}
	}
	note := ""
	if len(left) > 0 {
		note = "not charted, unsupported by the target: " + strings.Join(left, ", ")
	}
	if capped := rateCaps(files); capped != "" {
		note = strings.TrimSpace(note + " " + capped)
	}
	throughputPlot := newPlot("Throughput per delivery mode", "", "acknowledged records/s")
	throughput = groupedBars("throughput", throughputPlot, files, names, rates, 0, note)
	overheadPlot := newPlot("Throughput relative to the "+BaselineModeName+" baseline (1 = same)", "", "ratio to baseline")
	overhead = groupedBars("overhead", overheadPlot, files, names, ratios, 1, note)
	return throughput, overhead
}

// rateCaps notes the files whose workload offered a fixed rate: their bars
// show how much of that rate each run kept, not what the mode can do.
func rateCaps(files []*fileView) string {
	var capped []string
	for _, file := range files {
		for _, kv := range file.Workload {
			if kv.Key == "rate" && kv.Value != "0" && kv.Value != "" {
				capped = append(capped, file.Letter+" at "+kv.Value+" records/s")
			}
		}
	}
	if len(capped) == 0 {
		return ""
	}
	return "Offered load was capped (" + strings.Join(capped, ", ") + "): a bar at the cap means the run kept up with it, not that modes cost the same."
}

// groupedBars draws values[file][name] as horizontal bars grouped by name,
// the first name at the top, one bar per file in each group: every run's
// name is a label of its own on the y axis, however many runs there are
// (vertical bars of 35 runs had their labels rotated over each other). The
// chart grows in height with the number of bars. A reference line is
// drawn at x = reference when it is positive.
func groupedBars(id string, p *plot.Plot, files []*fileView, names []string, values [][]float64, reference float64, note string) chartView {
	if len(names) == 0 {
		return chartView{ID: id, Title: p.Title.Text, Note: "no runs"}
	}
	// Horizontal bars are placed along y from 0 up: reverse the names so
	// that the first is on top.
	labels := make([]string, len(names))
	for i, name := range names {
		labels[len(names)-1-i] = name
	}
	var legend []legendEntry
	thickness := vg.Points(math.Max(4, math.Min(14, 28/float64(len(files)))))
	for fileIndex, file := range files {
		row := make(plotter.Values, len(names))
		for i := range names {
			row[len(names)-1-i] = values[fileIndex][i]
		}
		bars, err := plotter.NewBarChart(row, thickness)
		if err != nil {
			return chartView{ID: id, Title: p.Title.Text, Note: err.Error()}
		}
		bars.Horizontal = true
		bars.Color, bars.LineStyle.Width = fileColor(fileIndex), 0
		// The first file's bar on top within its group.
		bars.Offset = -thickness * vg.Length(float64(fileIndex)-float64(len(files)-1)/2)
		p.Add(bars)
		legend = append(legend, legendEntry{Name: file.Label, Color: file.Color})
	}
	if reference > 0 {
		line, err := plotter.NewLine(plotter.XYs{{X: reference, Y: -0.5}, {X: reference, Y: float64(len(names)) - 0.5}})
		if err == nil {
			line.Color, line.Dashes, line.Width = seriesColor(2), []vg.Length{vg.Points(4), vg.Points(3)}, vg.Points(1.2)
			p.Add(line)
			legend = append(legend, legendEntry{Name: BaselineModeName + " = 1", Color: cssColor(seriesColor(2)), Dashed: true})
		}
	}
	p.NominalY(labels...)
	p.Y.Min, p.Y.Max = -0.6, float64(len(names))-0.4
	// The value axis: the plot's x label is empty for nominal bars; the
	// y label named the value when bars were vertical.
	p.X.Label.Text, p.Y.Label.Text = p.Y.Label.Text, ""
	p.X.Min = 0
	highest := reference
	for _, row := range values {
		for _, value := range row {
			highest = math.Max(highest, value)
		}
	}
	if highest > 0 {
		p.X.Max = math.Max(p.X.Max, highest*1.08)
	}
	groupHeight := thickness*vg.Length(len(files)) + vg.Points(6)
	height := vg.Length(math.Max(float64(wideHeight), float64(groupHeight*vg.Length(len(names))+vg.Points(90))))
	return chart(id, p, wideWidth, height, legend, note)
}

// spectrumPoints returns the percentile spectrum of h in the classic
// HdrHistogram form: x = 1/(1-q) for percentile q, y in milliseconds. It
// decodes the full histogram when present and falls back to the reported
// percentiles; decoded says which.
func spectrumPoints(h *Histogram) (points plotter.XYs, decoded bool) {
	if h == nil || h.Count <= 0 {
		return nil, false
	}
	if histogram := decodeHistogram(h.Encoded); histogram != nil && histogram.TotalCount() > 0 {
		count := float64(histogram.TotalCount())
		for step := 0.0; ; step += 0.05 {
			x := math.Pow(10, step)
			if x >= count {
				break
			}
			percentile := 100 * (1 - 1/x)
			points = append(points, plotter.XY{X: x, Y: math.Max(float64(histogram.ValueAtPercentile(percentile))/1000, 0.001)})
		}
		points = append(points, plotter.XY{X: math.Max(count, 1), Y: math.Max(float64(histogram.Max())/1000, 0.001)})
		return points, true
	}
	for key, value := range h.PercentilesMs {
		percentile, err := strconv.ParseFloat(key, 64)
		if err != nil || percentile < 0 || percentile > 100 || value <= 0 {
			continue
		}
		x := float64(h.Count)
		if percentile < 100 {
			x = math.Min(1/(1-percentile/100), x)
		}
		points = append(points, plotter.XY{X: math.Max(x, 1), Y: value})
	}
	sort.Slice(points, func(i, j int) bool { return points[i].X < points[j].X })
	return points, false
}

// decodeHistogram decodes an HdrHistogram V2 encoding, or returns nil. The
// decoder indexes by lengths read from its input; corrupt input must not
// take the dashboard down.
func decodeHistogram(encoded string) (histogram *hdrhistogram.Histogram) {
	if encoded == "" {
		return nil
	}
	defer func() {
		if recover() != nil {
			histogram = nil
		}
	}()
	histogram, err := hdrhistogram.Decode([]byte(encoded))
	if err != nil {
		return nil
	}
	return histogram
}

// latencyChart draws the percentile spectrum of one latency kind for every
// run of one results file, on log-log axes.
func latencyChart(file *fileView, kind string, names []string, nameIndex map[string]int) (chartView, bool) {
	p := newPlot(file.Label+": "+latencyTitle(kind), "percentile", "latency (ms)")
	var legend []legendEntry
	var all []plotter.XYs
	var fallback []string
	maxX := 10.0
	for _, name := range names {
		run := file.run(name)
		if !charted(run) {
			continue
		}
		points, decoded := spectrumPoints(run.Latency[kind])
		if len(points) == 0 {
			continue
		}
		if !decoded {
			fallback = append(fallback, name)
		}
		if err := addLine(p, &legend, name, points, seriesColor(nameIndex[name]), false, !decoded); err != nil {
			continue
		}
		all = append(all, points)
		maxX = math.Max(maxX, points[len(points)-1].X)
	}
	id := fmt.Sprintf("latency-%s-%d", kind, file.Index)
	if len(all) == 0 {
		return chartView{ID: id, Title: p.Title.Text}, false
	}
	low, high, _ := positiveRange(all...)
	setLogY(p, low, high)
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, percentileTicks(maxX)
	p.X.Min, p.X.Max = 1, math.Pow(10, math.Ceil(math.Log10(maxX)))
	note := ""
	if len(fallback) > 0 {
		note = "no full histogram for " + strings.Join(fallback, ", ") + ": reported percentiles only (points)"
	}
	return chart(id, p, panelWidth, panelHeight, legend, note), true
}

func latencyTitle(kind string) string {
	switch kind {
	case LatencyProduceAck:
		return "produce → ack latency, from the scheduled send time (fixed rate) or the record's creation (unpaced)"
	case LatencyProduceAckUncorrected:
		return "produce → ack latency, uncorrected: from when the record was handed to the client (fixed-rate runs)"
	case LatencyEndToEnd:
		return "end-to-end latency (produce → consumed), from the same send time as produce → ack"
	case LatencyTransactionCommit:
		return "transaction commit latency"
	}
	return kind + " latency"
}

// timeSeriesChart draws records/s over each run's elapsed time, one line
// per run. Fault events are ticks in a rug under the zero line: one lane
// per run that had faults, in the run's colour, so that many events over
// many runs stay readable.
func timeSeriesChart(file *fileView, names []string, nameIndex map[string]int, events map[string][]FaultEvent) chartView {
	p := newPlot(file.Label+": throughput over time", "seconds since the run started", "records/s")
	id := fmt.Sprintf("timeseries-%d", file.Index)
	var legend []legendEntry
	var drawn, missing []string
	maxY := 0.0
	for _, name := range names {
		run := file.run(name)
		if !charted(run) {
			continue
		}
		if len(run.TimeSeries) == 0 {
			missing = append(missing, name)
			continue
		}
		points := make(plotter.XYs, len(run.TimeSeries))
		for index, sample := range run.TimeSeries {
			points[index] = plotter.XY{X: sample.ElapsedSeconds, Y: sample.RecordsPerSecond}
			maxY = math.Max(maxY, sample.RecordsPerSecond)
		}
		if addLine(p, &legend, name, points, seriesColor(nameIndex[name]), false, len(points) < 3) == nil {
			drawn = append(drawn, name)
		}
	}
	lanes, thinned := faultRug(p, drawn, nameIndex, events, math.Max(maxY, 1))
	if lanes > 0 {
		legend = append(legend, legendEntry{Name: "fault fired (ticks under zero, one lane per run, in its colour)",
			Color: cssColor(seriesColor(len(seriesPalette) - 1))})
	}
	p.X.Min = 0
	p.Y.Min = -float64(lanes) * rugLane * math.Max(maxY, 1)
	p.Y.Tick.Marker = nonNegativeTicks{humanTicks{}}
	setHeadroom(p, maxY)
	var notes []string
	if len(missing) > 0 {
		notes = append(notes, "no per-second samples (run shorter than a second): "+strings.Join(missing, ", "))
	}
	if thinned > 0 {
		notes = append(notes, fmt.Sprintf("%d fault events not marked (one tick per kind per 0.1 s, at most %d per run)", thinned, maxMarkedEvents))
	}
	if fired := file.faultsWithoutTimes(); fired > 0 {
		notes = append(notes, fmt.Sprintf("%d faults fired; this results file does not record when", fired))
	}
	if len(drawn) == 0 {
		return chartView{ID: id, Title: p.Title.Text, Note: strings.Join(notes, "; ")}
	}
	return chart(id, p, panelWidth, panelHeight, legend, strings.Join(notes, "; "))
}

// rugLane is the height of one run's lane of fault ticks, as a share of
// the chart's highest throughput.
const rugLane = 0.05

// faultRug draws the fault events of the drawn runs as ticks, lane k (from
// the top) spanning [-(k+1), -k] lane heights below zero. It returns the
// lanes used and the events left out by thinning.
func faultRug(p *plot.Plot, drawn []string, nameIndex map[string]int, events map[string][]FaultEvent, maxY float64) (lanes, thinned int) {
	lane := rugLane * maxY
	for _, name := range drawn {
		kept, dropped := thinEvents(events[name], maxMarkedEvents)
		thinned += dropped
		if len(kept) == 0 {
			continue
		}
		top, bottom := -float64(lanes)*lane-lane*0.15, -float64(lanes+1)*lane+lane*0.15
		for _, event := range kept {
			tick := plotter.XYs{{X: event.ElapsedSeconds, Y: top}, {X: event.ElapsedSeconds, Y: bottom}}
			if line, err := plotter.NewLine(tick); err == nil {
				line.Color, line.Width = seriesColor(nameIndex[name]), vg.Points(1.4)
				p.Add(line)
			}
		}
		lanes++
	}
	return lanes, thinned
}

// nonNegativeTicks drops the ticks below zero (the fault rug's lanes).
type nonNegativeTicks struct{ ticker plot.Ticker }

func (t nonNegativeTicks) Ticks(low, high float64) []plot.Tick {
	var kept []plot.Tick
	for _, tick := range t.ticker.Ticks(math.Max(low, 0), high) {
		if tick.Value >= 0 {
			kept = append(kept, tick)
		}
	}
	return kept
}

// sweepPoint is one transactional run of a commit-interval sweep.
type sweepPoint struct {
	intervalMillis   float64
	recordsPerSecond float64
	commit           *Histogram
}

// sweepSeries is the sweep of one results file under one fault plan.
type sweepSeries struct {
	// plan is the fault plan, "" without faults.
	plan   string
	points []sweepPoint
}

// sweepSeriesOf returns the runs of results in a mode that sweeps commit
// intervals (transactional) that state a positive commit interval and were measured, one series per fault plan
// (in first-seen order), each by increasing interval.
// sweepsCommitIntervals reports whether mode is registered as sweeping
// commit intervals.
func sweepsCommitIntervals(mode string) bool {
	spec, ok := modes.Lookup(mode)
	return ok && spec.SweepsCommitIntervals
}

func sweepSeriesOf(results *Results) []sweepSeries {
	var series []sweepSeries
	index := map[string]int{}
	for _, run := range results.Runs {
		if !charted(run) || !sweepsCommitIntervals(run.Mode) || run.Throughput.RecordsPerSecond <= 0 {
			continue
		}
		interval, err := strconv.ParseFloat(run.ClientSettings["commit.interval.ms"], 64)
		if err != nil || interval <= 0 {
			continue
		}
		plan := run.FaultPlan
		if plan == "none" {
			plan = ""
		}
		position, seen := index[plan]
		if !seen {
			position = len(series)
			index[plan] = position
			series = append(series, sweepSeries{plan: plan})
		}
		series[position].points = append(series[position].points,
			sweepPoint{interval, run.Throughput.RecordsPerSecond, run.Latency[LatencyTransactionCommit]})
	}
	for _, one := range series {
		sort.Slice(one.points, func(i, j int) bool { return one.points[i].intervalMillis < one.points[j].intervalMillis })
	}
	return series
}

// sweepCharts draws, per results file and fault plan, throughput and
// commit latency (p50 solid, p99 dashed) against the commit interval; ok is
// false when no file has a transactional run with an interval.
func sweepCharts(files []*fileView) (throughput, latency chartView, ok bool) {
	throughputPlot := newPlot("Transactional throughput vs commit interval", "commit interval (ms)", "records/s")
	latencyPlot := newPlot("Commit latency vs commit interval (p50 solid, p99 dashed)", "commit interval (ms)", "commit latency (ms)")
	lowX, highX, highest := math.Inf(1), math.Inf(-1), 0.0
	var latencySeries []plotter.XYs
	var throughputLegend, latencyLegend []legendEntry
	extraColours := 0
	for _, file := range files {
		fileSeries := sweepSeriesOf(file.Results)
		for seriesIndex, series := range fileSeries {
			ok = true
			// A file's first series (usually without faults) has the
			// file's colour; further fault plans take series colours.
			label, colour := strings.TrimSpace(file.Label+" "+series.plan), fileColor(file.Index)
			if seriesIndex > 0 {
				colour = seriesColor(sweepExtraColours[extraColours%len(sweepExtraColours)])
				extraColours++
			}
			rates, median, tail := sweepLines(series.points)
			for _, point := range rates {
				lowX, highX, highest = math.Min(lowX, point.X), math.Max(highX, point.X), math.Max(highest, point.Y)
			}
			_ = addLine(throughputPlot, &throughputLegend, label, rates, colour, false, true)
			if len(median) > 0 {
				_ = addLine(latencyPlot, &latencyLegend, label+" p50", median, colour, false, true)
				latencySeries = append(latencySeries, median)
			}
			if len(tail) > 0 {
				_ = addLine(latencyPlot, &latencyLegend, label+" p99", tail, colour, true, true)
				latencySeries = append(latencySeries, tail)
			}
		}
		if baseline := file.baselineRate(); baseline > 0 && len(fileSeries) > 0 {
			highest = math.Max(highest, baseline)
			line := plotter.NewFunction(func(float64) float64 { return baseline })
			line.Color, line.Dashes = fileColor(file.Index), []vg.Length{vg.Points(2), vg.Points(3)}
			throughputPlot.Add(line)
			throughputLegend = append(throughputLegend, legendEntry{Name: file.Label + " " + BaselineModeName + " baseline", Color: file.Color, Dashed: true})
		}
	}
	if !ok {
		return chartView{}, chartView{}, false
	}
	setLogX(throughputPlot, lowX, highX)
	throughputPlot.Y.Min = 0
	setHeadroom(throughputPlot, highest)
	setLogX(latencyPlot, lowX, highX)
	throughput = chart("sweep-throughput", throughputPlot, panelWidth, panelHeight, throughputLegend, "")
	if low, high, found := positiveRange(latencySeries...); found {
		setLogY(latencyPlot, low, high)
		latency = chart("sweep-latency", latencyPlot, panelWidth, panelHeight, latencyLegend, "")
	} else {
		latency = chartView{ID: "sweep-latency", Title: latencyPlot.Title.Text, Note: "no commit latency recorded"}
	}
	return throughput, latency, true
}

// sweepExtraColours index seriesPalette for the second and later fault
// plans of a file's sweep: colours unlike the file palette's.
var sweepExtraColours = []int{4, 6, 8, 3, 9}

// sweepLines turns sweep points into the throughput line and the commit
// latency p50 and p99 lines (points without a commit latency left out).
func sweepLines(points []sweepPoint) (rates, median, tail plotter.XYs) {
	for _, point := range points {
		rates = append(rates, plotter.XY{X: point.intervalMillis, Y: point.recordsPerSecond})
		if value := point.commit.Percentile(50); value > 0 {
			median = append(median, plotter.XY{X: point.intervalMillis, Y: value})
		}
		if value := point.commit.Percentile(99); value > 0 {
			tail = append(tail, plotter.XY{X: point.intervalMillis, Y: value})
		}
	}
	return rates, median, tail
}
