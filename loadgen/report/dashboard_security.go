package report

import "fmt"

// securityTable is the dashboard's security section for one results
// file: the security workload's cells and consume costs, as text.
type securityTable struct {
	File    *fileView
	Title   string
	Rows    []securityTableRow
	Consume []securityConsumeRow
	// ConsumeTitle heads the consume cost table; Skipped lists the
	// protocols that did not run, with why.
	ConsumeTitle string
	Skipped      []string
	// Note explains the table (rounds and intervals, or one run each).
	Note string
}

// securityTableRow is one mode over one protocol. Reference marks the
// reference protocol's rows.
type securityTableRow struct {
	Mode, Protocol, Status                    string
	Reference                                 bool
	RecordsPerSecond, Ratio, AckP99, P99Ratio string
	EndToEndP99                               string
}

// securityConsumeRow is one protocol's consume cost.
type securityConsumeRow struct {
	Protocol, FetchPath, CPU, Ratio, PassRatio, Rate, Passes, Error string
}

// securityTables builds the security tables of every file that has a
// security section.
func securityTables(files []*fileView) []securityTable {
	var tables []securityTable
	for _, file := range files {
		s := file.Results.Security
		if s == nil {
			continue
		}
		table := securityTable{File: file, Title: file.Label + ": " + s.Title(), Note: s.Note()}
		for _, row := range s.Rows {
			table.Rows = append(table.Rows, securityTableRow{Mode: row.Mode, Protocol: row.Protocol, Reference: row.Reference,
				Status: roundsPassed(row.Throughput.Values), RecordsPerSecond: number(row.Throughput.Median(), 0), Ratio: row.RatioVerdict(row.Throughput),
				AckP99: millis(row.AckP99.Median()), P99Ratio: row.RatioVerdict(row.AckP99), EndToEndP99: millis(positiveMedian(row.EndToEndP99Millis))})
		}
		for _, mode := range s.ProtocolModes() {
			if len(s.Rows) > 0 {
				break
			}
			for _, protocol := range s.Protocols {
				row := securityTableRow{Mode: mode, Protocol: protocol, Reference: protocol == s.Reference, Status: "not run",
					RecordsPerSecond: "-", Ratio: "-", AckP99: "-", P99Ratio: "-", EndToEndP99: "-"}
				if cell := s.Cell(mode, protocol); cell != nil {
					row.Status, row.RecordsPerSecond, row.Ratio = cell.Status, number(cell.RecordsPerSecond, 0), RatioNumber(cell.ThroughputRatio)
					row.AckP99, row.P99Ratio, row.EndToEndP99 = millis(cell.AckP99Millis), RatioNumber(cell.AckP99Ratio), millis(cell.EndToEndP99Millis)
				}
				table.Rows = append(table.Rows, row)
			}
		}
		for _, protocol := range s.Protocols {
			if reason, ok := s.Skipped[protocol]; ok {
				table.Skipped = append(table.Skipped, protocol+": "+reason)
			}
		}
		if len(s.Consume) > 0 {
			table.ConsumeTitle = "consume CPU per GB: one consumer reading " + byteText(s.Consume[0].Bytes) +
				" from the start over each protocol, median of the passes (" + s.ConsumeNote + ")"
		}
		for _, cost := range s.Consume {
			table.Consume = append(table.Consume, securityConsumeRow{Protocol: cost.Protocol, FetchPath: orDash(cost.FetchPath),
				CPU: number(cost.CPUSecondsPerGB, 3), Ratio: RatioNumber(cost.Ratio), PassRatio: cost.PassRatioText(), Rate: number(cost.MegabytesPerSecond, 0),
				Passes: passesText(cost.PassCPUSecondsPerGB), Error: cost.Error})
		}
		tables = append(tables, table)
	}
	return tables
}

// passesText lists the passes' CPU seconds per GB.
func passesText(values []float64) string {
	text := ""
	for i, value := range values {
		if i > 0 {
			text += ", "
		}
		text += number(value, 3)
	}
	return orDash(text)
}

// roundsPassed says how many rounds measured a row ("3/3 pass"): a
// round's value is 0 when its run did not pass.
func roundsPassed(values []float64) string {
	passed := 0
	for _, value := range values {
		if value > 0 {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d pass", passed, len(values))
}
