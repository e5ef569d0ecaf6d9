package report

import (
	"fmt"
	"sort"
	"strings"
)

// verdictMatrix is one file's fault matrix at a glance, the page's first
// section for the quick and standard workloads: a row per delivery mode,
// a column per fault plan, each cell the verdict of the mode's runs under
// the plan. It is built from the runs that carry an Expectation; the
// per-run table (expectationRows) says why.
type verdictMatrix struct {
	File  *fileView
	Plans []string
	Rows  []verdictMatrixRow
}

type verdictMatrixRow struct {
	Mode  string
	Cells []verdictMatrixCell // one per plan
}

// verdictMatrixCell is the verdict of one mode under one plan: empty when
// the matrix did not run the cell. Runs names the cell's runs (a tooltip).
type verdictMatrixCell struct {
	Text, Class, Runs string
}

// statusSeverity orders verdicts from worst to best: a cell of several
// runs takes the class of its worst.
var statusSeverity = map[string]int{StatusFail: 0, StatusError: 1, StatusUntestable: 2, StatusUnsupported: 3, StatusNotApplicable: 4, StatusPass: 5}

// verdictMatrices builds the matrix of every file with runs judged by
// the fault matrix.
func verdictMatrices(files []*fileView) []verdictMatrix {
	var matrices []verdictMatrix
	for _, file := range files {
		if matrix, ok := verdictMatrixOf(file); ok {
			matrices = append(matrices, matrix)
		}
	}
	return matrices
}

func verdictMatrixOf(file *fileView) (verdictMatrix, bool) {
	type cell struct{ mode, plan string }
	statuses := map[cell][]string{}
	runs := map[cell][]string{}
	var modes, plans []string
	seenMode, seenPlan := map[string]bool{}, map[string]bool{}
	for _, run := range file.Results.Runs {
		if run.Expectation == nil {
			continue
		}
		plan := run.FaultPlan
		if plan == "" {
			plan = "none"
		}
		if !seenMode[run.Mode] {
			seenMode[run.Mode] = true
			modes = append(modes, run.Mode)
		}
		if !seenPlan[plan] {
			seenPlan[plan] = true
			plans = append(plans, plan)
		}
		status := run.Expectation.Verdict
		if status == "" {
			status = run.Status
		}
		key := cell{run.Mode, plan}
		statuses[key] = append(statuses[key], status)
		runs[key] = append(runs[key], run.Name)
	}
	if len(modes) == 0 {
		return verdictMatrix{}, false
	}
	matrix := verdictMatrix{File: file, Plans: plans}
	for _, mode := range modes {
		row := verdictMatrixRow{Mode: mode}
		for _, plan := range plans {
			key := cell{mode, plan}
			text, class := cellVerdict(statuses[key])
			row.Cells = append(row.Cells, verdictMatrixCell{Text: text, Class: class, Runs: strings.Join(runs[key], ", ")})
		}
		matrix.Rows = append(matrix.Rows, row)
	}
	return matrix, true
}

// cellVerdict summarizes the statuses of a cell's runs: "pass" for one
// run, "pass ×3" for several alike, "fail 1, pass 2" otherwise (worst
// first), with the worst status's class.
func cellVerdict(statuses []string) (text, class string) {
	if len(statuses) == 0 {
		return "", ""
	}
	counts := map[string]int{}
	var distinct []string
	for _, status := range statuses {
		if counts[status] == 0 {
			distinct = append(distinct, status)
		}
		counts[status]++
	}
	sort.SliceStable(distinct, func(i, j int) bool { return severity(distinct[i]) < severity(distinct[j]) })
	class = "status-" + distinct[0]
	if len(distinct) == 1 {
		if len(statuses) == 1 {
			return distinct[0], class
		}
		return fmt.Sprintf("%s ×%d", distinct[0], len(statuses)), class
	}
	parts := make([]string, len(distinct))
	for i, status := range distinct {
		parts[i] = fmt.Sprintf("%s %d", status, counts[status])
	}
	return strings.Join(parts, ", "), class
}

func severity(status string) int {
	if value, known := statusSeverity[status]; known {
		return value
	}
	return len(statusSeverity)
}
