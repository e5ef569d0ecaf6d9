package report

import (
	"fmt"
	"strings"
)

// overheadTable is the dashboard's first section for one results file
// and offered load: each slot's ratio to the baseline with its interval.
type overheadTable struct {
	File  *fileView
	Title string
	Rows  []overheadTableRow
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
			table := overheadTable{File: file, Title: fmt.Sprintf("%s: vs %s at %s, %d rounds, %d producers sharing each slot's load",
				file.Label, overhead.Baseline, LoadText(load.Rate), overhead.Rounds, overhead.Producers)}
			if len(load.Rows) > 0 {
				base := load.Rows[0]
				table.Rows = append(table.Rows, overheadTableRow{Slot: overhead.Baseline, Baseline: true,
					RecordsPerSecond: number(base.Throughput.BaselineMedian(), 0), AckP99: number(base.AckP99.BaselineMedian(), 2),
					Ratio: "1 (baseline)", P99Ratio: "1 (baseline)", Rounds: roundsText(file, overhead.Baseline),
					Matrix: matrixVerdict(files, overhead.Baseline), MatrixClass: matrixClass(files, overhead.Baseline)})
			}
			for _, row := range load.Rows {
				table.Rows = append(table.Rows, overheadTableRow{Slot: row.Slot, NoiseFloor: row.NoiseFloor,
					RecordsPerSecond: number(row.Throughput.Median(), 0), AckP99: number(row.AckP99.Median(), 2),
					Ratio: row.Throughput.RatioText(), Verdict: row.Throughput.Verdict, RatioClass: verdictClass(row.Throughput.Verdict),
					P99Ratio: row.AckP99.RatioText(), P99Verdict: row.AckP99.Verdict, P99Class: verdictClass(row.AckP99.Verdict),
					Rounds: roundsText(file, row.Slot), Matrix: matrixVerdict(files, row.Mode), MatrixClass: matrixClass(files, row.Mode)})
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

// roundsText counts the passing rounds of a slot in file.
func roundsText(file *fileView, slot string) string {
	passed, total := 0, 0
	for _, run := range file.Results.Runs {
		if run.Slot != slot || run.Round < 1 {
			continue
		}
		total++
		if run.Status == StatusPass {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d pass", passed, total)
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
