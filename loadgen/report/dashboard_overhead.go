package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// overheadTable is the dashboard's first section for one results file
// and offered load: each slot's ratio to the baseline with its interval.
type overheadTable struct {
	File  *fileView
	Title string
	// Faults names the fault plan of the table's rounds ("": none): its
	// rows then also show the end-to-end ratio, recovery, delayed
	// records and the checker's counts.
	Faults string
	Rows   []overheadTableRow
}

// overheadTableRow is one slot of an overhead table. Classes are CSS
// classes: "better", "worse" or "" (within noise).
type overheadTableRow struct {
	Slot       string
	NoiseFloor bool
	Baseline   bool
	// RecordsPerSecond and AckP99 are the slot's medians over the rounds.
	RecordsPerSecond, AckP99       string
	Ratio, Verdict, RatioClass     string
	P99Ratio, P99Verdict, P99Class string
	// EndToEndRatio and EndToEndClass compare the p99 end-to-end latency;
	// Recovery, Delayed and Checked are the slot's FaultCost texts (tables
	// under faults only).
	EndToEndRatio, EndToEndClass string
	Recovery, Delayed, Checked   string
	// Rounds says how the slot's rounds fared in the checker ("5/5 pass").
	Rounds string
	// Matrix is the fault matrix's verdict for the slot's mode over the
	// files shown ("-" when none of them ran one).
	Matrix, MatrixClass string
}

// overheadTables builds the overhead tables of every file that has an
// overhead section.
func overheadTables(files []*fileView) []overheadTable {
	var tables []overheadTable
	for _, file := range files {
		overhead := file.Results.Overhead
		if overhead == nil {
			continue
		}
		for _, load := range overhead.Loads {
			table := overheadTable{File: file, Faults: load.Faults, Title: fmt.Sprintf("%s: vs %s at %s, %d rounds, %d producers sharing each slot's load",
				file.Label, overhead.Baseline, LoadText(load.Rate), overhead.Rounds, overhead.Producers)}
			if load.Faults != "" {
				table.Title = fmt.Sprintf("%s: under %s, vs %s under the same faults at %s, %d rounds",
					file.Label, load.Faults, overhead.Baseline, LoadText(load.Rate), overhead.Rounds)
				if load.BaselineWithoutFaults {
					table.Title += fmt.Sprintf(" (%s ran without them: they cannot touch it)", overhead.Baseline)
				}
				if load.NotApplicable != "" {
					table.Title += ": " + load.NotApplicable
				}
			}
			if len(load.Rows) > 0 {
				base := load.Rows[0]
				table.Rows = append(table.Rows, overheadTableRow{Slot: overhead.Baseline, Baseline: true,
					RecordsPerSecond: number(base.Throughput.BaselineMedian(), 0), AckP99: number(base.AckP99.BaselineMedian(), 2),
					Ratio: "1 (baseline)", P99Ratio: "1 (baseline)", Rounds: roundsText(file, load.BaselineRuns),
					EndToEndRatio: "1 (baseline)", Recovery: load.BaselineCost.RecoveryText(), Delayed: load.BaselineCost.DelayedText(),
					Checked: load.BaselineCost.CheckedText(),
					Matrix:  matrixVerdict(files, overhead.Baseline), MatrixClass: matrixClass(files, overhead.Baseline)})
			}
			for _, row := range load.Rows {
				if row.Skipped() != "" {
					table.Rows = append(table.Rows, overheadTableRow{Slot: row.Slot, Verdict: row.Skipped(),
						Matrix: matrixVerdict(files, row.Mode), MatrixClass: matrixClass(files, row.Mode)})
					continue
				}
				verdict, p99Verdict := row.ThroughputVerdict(), row.AckP99.Verdict
				if row.NoiseFloor {
					verdict = "noise floor " + BandText(load.NoiseBand.ThroughputLow, load.NoiseBand.ThroughputHigh)
					p99Verdict = "noise floor " + BandText(load.NoiseBand.AckP99Low, load.NoiseBand.AckP99High)
				}
				table.Rows = append(table.Rows, overheadTableRow{Slot: row.Slot, NoiseFloor: row.NoiseFloor,
					RecordsPerSecond: number(row.Throughput.Median(), 0), AckP99: number(row.AckP99.Median(), 2),
					Ratio: row.Throughput.RatioText(), Verdict: verdict, RatioClass: throughputClass(row),
					P99Ratio: row.AckP99.RatioText(), P99Verdict: p99Verdict, P99Class: latencyClass(row),
					EndToEndRatio: row.EndToEndP99.RatioText() + " " + row.EndToEndP99.Verdict, EndToEndClass: endToEndClass(row),
					Recovery: row.Cost.RecoveryText(), Delayed: row.Cost.DelayedText(), Checked: row.Cost.CheckedText(),
					Rounds: roundsText(file, row.Runs), Matrix: matrixVerdict(files, row.Mode), MatrixClass: matrixClass(files, row.Mode)})
			}
			tables = append(tables, table)
		}
	}
	return tables
}

// verdictClass colours a verdict: only an interval that excludes 1.0
// gets a colour.
func verdictClass(verdict string) string {
	switch verdict {
	case "faster":
		return ""
	case "slower":
		return "worse"
	}
	return ""
}

// throughputClass colours a throughput verdict; keeping up a fixed load
// is no gain.
func throughputClass(row OverheadRow) string {
	if row.NoiseFloor || (row.KeptUp != nil && *row.KeptUp) {
		return ""
	}
	return verdictClass(row.Throughput.Verdict)
}

// latencyClass colours a p99 verdict; the noise floor has none.
func latencyClass(row OverheadRow) string {
	if row.NoiseFloor {
		return ""
	}
	return verdictClass(row.AckP99.Verdict)
}

// endToEndClass colours the end-to-end ratio as latencyClass does.
func endToEndClass(row OverheadRow) string {
	if row.NoiseFloor {
		return ""
	}
	return verdictClass(row.EndToEndP99.Verdict)
}

// roundsText counts the passing runs among a slot's rounds (named by
// the overhead section) in file.
func roundsText(file *fileView, names []string) string {
	if len(names) == 0 {
		return "-"
	}
	passed := 0
	for _, name := range names {
		if run := file.run(name); run != nil && run.Status == StatusPass {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d pass", passed, len(names))
}

// matrixRuns are the runs of mode under a fault plan (a fault matrix:
// an expectation and a plan other than none) in any of files.
func matrixRuns(files []*fileView, mode string) []*Run {
	var runs []*Run
	for _, file := range files {
		for _, run := range file.Results.Runs {
			if run.Mode == mode && run.Expectation != nil && run.FaultPlan != "" && run.FaultPlan != "none" {
				runs = append(runs, run)
			}
		}
	}
	return runs
}

// matrixVerdict summarizes the fault matrix's verdicts of mode:
// "pass (8 plans)", or the failing plans.
func matrixVerdict(files []*fileView, mode string) string {
	runs := matrixRuns(files, mode)
	if len(runs) == 0 {
		return "-"
	}
	var failed []string
	passed := 0
	for _, run := range runs {
		switch run.Expectation.Verdict {
		case StatusPass:
			passed++
		case StatusFail, StatusError:
			failed = append(failed, run.Expectation.Verdict+" "+run.FaultPlan)
		}
	}
	if len(failed) > 0 {
		return fmt.Sprintf("%s (%d of %d runs)", strings.Join(failed, ", "), len(failed), len(runs))
	}
	if passed == len(runs) {
		return fmt.Sprintf("pass (%d runs)", passed)
	}
	return fmt.Sprintf("pass %d of %d runs (the rest not applicable, unsupported or untestable)", passed, len(runs))
}

func matrixClass(files []*fileView, mode string) string {
	for _, run := range matrixRuns(files, mode) {
		if run.Expectation.Verdict == StatusFail || run.Expectation.Verdict == StatusError {
			return "status-fail"
		}
	}
	if len(matrixRuns(files, mode)) > 0 {
		return "status-pass"
	}
	return ""
}

// curveChart is the commit-interval curve of one results file and
// measure: the transactional slots' ratio to the baseline against commit
// interval, one line per offered load, each point with its interval.
type curveChart struct {
	Title string
	SVG   template.HTML
}

// curvePoint is one transactional slot at one load.
type curvePoint struct {
	intervalMs float64
	stat       RatioStat
}

// curveCharts draws, for every file whose overhead section has at least
// two commit intervals, the throughput and p99 curves.
func curveCharts(files []*fileView) []curveChart {
	var charts []curveChart
	for _, file := range files {
		overhead := file.Results.Overhead
		if overhead == nil {
			continue
		}
		for _, measure := range []struct {
			title string
			pick  func(OverheadRow) RatioStat
		}{
			{"throughput ratio", func(row OverheadRow) RatioStat { return row.Throughput }},
			{"ack p99 ratio", func(row OverheadRow) RatioStat { return row.AckP99 }},
		} {
			var series [][]curvePoint
			var labels []string
			for _, load := range overhead.Loads {
				var points []curvePoint
				for _, row := range load.Rows {
					if row.CommitIntervalMs > 0 && len(row.Throughput.Ratios) > 0 {
						points = append(points, curvePoint{row.CommitIntervalMs, measure.pick(row)})
					}
				}
				if len(points) >= 2 {
					series = append(series, points)
					labels = append(labels, LoadText(load.Rate))
				}
			}
			if len(series) > 0 {
				charts = append(charts, curveChart{Title: fmt.Sprintf("%s: transactional %s to %s vs commit interval (median, 95%% interval)",
					file.Label, measure.title, overhead.Baseline), SVG: curveSVG(series, labels)})
			}
		}
	}
	return charts
}

// curveSVG renders series on a log-x axis of commit intervals and a
// linear ratio axis that always shows 1.0 (dashed).
func curveSVG(series [][]curvePoint, labels []string) template.HTML {
	const width, height, left, right, top, bottom = 640.0, 280.0, 56.0, 200.0, 16.0, 40.0
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), 1.0, 1.0
	for _, points := range series {
		for _, point := range points {
			minX, maxX = math.Min(minX, point.intervalMs), math.Max(maxX, point.intervalMs)
			for _, y := range []float64{point.stat.CILow, point.stat.CIHigh, point.stat.MedianRatio} {
				if y > 0 {
					minY, maxY = math.Min(minY, y), math.Max(maxY, y)
				}
			}
		}
	}
	pad := math.Max((maxY-minY)*0.08, 0.02)
	minY, maxY = math.Max(minY-pad, 0), maxY+pad
	xOf := func(ms float64) float64 {
		if maxX <= minX {
			return left + (width-left-right)/2
		}
		return left + (math.Log10(ms)-math.Log10(minX))/(math.Log10(maxX)-math.Log10(minX))*(width-left-right)
	}
	yOf := func(ratio float64) float64 { return top + (maxY-ratio)/(maxY-minY)*(height-top-bottom) }
	var svg strings.Builder
	fmt.Fprintf(&svg, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" role="img">`, width, height)
	fmt.Fprintf(&svg, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="4 3"/>`, left, yOf(1), width-right, yOf(1))
	fmt.Fprintf(&svg, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end">1.0</text>`, left-4, yOf(1)+4)
	for _, y := range []float64{minY, maxY} {
		fmt.Fprintf(&svg, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end">%.2f</text>`, left-4, yOf(y)+4, y)
	}
	fmt.Fprintf(&svg, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, left, height-bottom, width-right, height-bottom)
	for _, point := range series[0] {
		fmt.Fprintf(&svg, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s ms</text>`,
			xOf(point.intervalMs), height-bottom+16, strconv.FormatFloat(point.intervalMs, 'f', -1, 64))
	}
	fmt.Fprintf(&svg, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">commit interval (log scale)</text>`,
		left+(width-left-right)/2, height-6)
	for index, points := range series {
		color := cssColor(fileColor(index))
		var path strings.Builder
		for i, point := range points {
			x := xOf(point.intervalMs)
			command := "L"
			if i == 0 {
				command = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", command, x, yOf(point.stat.MedianRatio))
			fmt.Fprintf(&svg, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`,
				x, yOf(point.stat.CILow), x, yOf(point.stat.CIHigh), color)
			fmt.Fprintf(&svg, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s ms: %s, %s</title></circle>`,
				x, yOf(point.stat.MedianRatio), color, strconv.FormatFloat(point.intervalMs, 'f', -1, 64),
				point.stat.RatioText(), point.stat.Verdict)
		}
		fmt.Fprintf(&svg, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`, strings.TrimSpace(path.String()), color)
		fmt.Fprintf(&svg, `<text x="%.1f" y="%.1f" font-size="11" fill="%s">%s</text>`, width-right+10, top+14+float64(index)*16,
			color, template.HTMLEscapeString(labels[index]))
	}
	svg.WriteString(`</svg>`)
	return template.HTML(svg.String()) // every interpolated text is a number or escaped above
}
