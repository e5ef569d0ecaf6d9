package report

import "fmt"

// groupProtocolsTable is the dashboard's consumer-group-protocols section
// for one results file: the comparison's rows (when the file has one),
// then the rebalance pauses of each group-churn run, as text.
type groupProtocolsTable struct {
	File       *fileView
	Title      string
	Comparison []groupProtocolRow
	Pauses     []rebalancePauseRow
}

// groupProtocolRow is one protocol's side of a comparison row; Run is
// set on the first side of a row only.
type groupProtocolRow struct {
	Run, Protocol, Passed, Lost, Duplicated string
	MedianPause, TotalPaused                string
	MedianRatio, TotalRatio                 string
	Baseline                                bool
}

// rebalancePauseRow is one run's pauses.
type rebalancePauseRow struct {
	Run, Protocol, Status                      string
	Events, Pauses                             int
	Median, P99, Max, Total, NormalGap, Window string
}

// groupProtocolsTables builds the section for every file with a
// comparison or a run with rebalance pauses.
func groupProtocolsTables(files []*fileView) []groupProtocolsTable {
	var tables []groupProtocolsTable
	for _, file := range files {
		table := groupProtocolsTable{File: file, Title: file.Label}
		if comparison := file.Results.GroupProtocols; comparison != nil {
			table.Title = fmt.Sprintf("%s: %d rounds interleaved, median over the rounds [%.0f%% bootstrap interval]",
				file.Label, comparison.Rounds, comparison.Confidence*100)
			for _, row := range comparison.Rows {
				for i, side := range row.Sides {
					line := groupProtocolRow{Protocol: side.Protocol, Passed: fmt.Sprintf("%d/%d", side.Passed, len(side.Runs)),
						Lost: fmt.Sprint(side.Lost), Duplicated: fmt.Sprint(side.Duplicated),
						MedianPause: side.MedianPause.Text(), TotalPaused: side.TotalPaused.Text(),
						MedianRatio: "1 (baseline)", TotalRatio: "1 (baseline)", Baseline: side.Protocol == comparison.Baseline}
					if !line.Baseline {
						line.MedianRatio, line.TotalRatio = row.MedianPauseRatio.RatioText(), row.TotalPauseRatio.RatioText()
					}
					if i == 0 {
						line.Run = row.Mode + ":" + row.FaultPlan
					}
					table.Comparison = append(table.Comparison, line)
				}
			}
		}
		for _, run := range file.Results.Runs {
			p := run.RebalancePauses
			if p == nil {
				continue
			}
			table.Pauses = append(table.Pauses, rebalancePauseRow{Run: run.Name, Protocol: orDash(run.GroupProtocol), Status: run.Status,
				Events: p.Events, Pauses: p.Pauses, Median: number(p.MedianMs, 0), P99: number(p.P99Ms, 0), Max: number(p.MaxMs, 0),
				Total: number(p.TotalMs, 0), NormalGap: number(p.NormalGapMs, 0), Window: number(p.WindowMs, 0)})
		}
		if len(table.Comparison) > 0 || len(table.Pauses) > 0 {
			tables = append(tables, table)
		}
	}
	return tables
}
